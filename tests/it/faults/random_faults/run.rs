//! A run under way, round by round.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use zk_queue::testing::{FaultProxy, Request};
use zk_queue::ZkClient;

use crate::faults::{wait_delivered, work_dir, WAIT};
use crate::support::leases::LeaseSampler;
use crate::support::server::unique_path;
use crate::support::tally::{now_micros, Cost, Faults, Tally};
use crate::support::worker::{Worker, WorkerConfig};
use crate::support::workload::{
    assert_duplicates_owed, drain, given_up_with, sessions_expired, wait_picked_up_after_heal, Gate, Mix, Producer,
    SplitMix64,
};
use crate::support::{client_of, Bound};

use super::report::{assert_report, charged, p50_max_ms, planned, Report};
use super::servers::{Proxies, Servers};
use super::victim::assert_in_time;
use super::victim::Victim;
use super::{Fault, EXPIRY_PICKUP, KILLS_PER_ANY_MOMENT, KILL_PICKUP, PER_ROUND, SESSION, THREADS, WINDOW, WORKERS};

/// A run under way: the servers, the proxies between them and the consumers
/// (and the producer), the consumer processes, how many items the producer
/// may put, and what the faults so far did and cost. Its parts are dropped in
/// the order they are listed.
pub(super) struct Run {
    /// The faults seen to fire, by kind.
    fired: BTreeMap<Fault, usize>,
    faults: Faults,
    /// How long after a kill each node its victim had begun was begun again (µs).
    kill_pickups: Vec<u64>,
    /// How long after a heal each node given up with the expired sessions
    /// was begun again (µs).
    expiry_pickups: Vec<u64>,
    kills_tried: usize,
    kills_mid_item: usize,
    producer: Producer,
    /// How many items the producer may have put.
    allowed: Arc<AtomicUsize>,
    /// The consumer processes, each with its number.
    workers: Vec<(usize, Worker)>,
    /// Consumer processes spawned so far.
    spawned: usize,
    config: WorkerConfig,
    /// A client of the servers themselves, to see sessions expire.
    direct: ZkClient,
    leases: LeaseSampler,
    dir: PathBuf,
    locks: String,
    queue: String,
    producer_proxies: Proxies,
    proxies: Proxies,
    servers: Servers,
}

impl Run {
    /// Starts the servers, the proxies, the consumer processes (until they
    /// are ready) and the producer.
    pub(super) fn start(seed: u64, ensemble: bool) -> Run {
        let servers = Servers::start(ensemble);
        let proxies = Proxies::start(&servers);
        let producer_proxies = Proxies::start(&servers);
        let (queue, locks) = (unique_path("random"), unique_path("random-locks"));
        let dir = work_dir("random");
        let leases = LeaseSampler::start(&servers.connect_string(), &locks);
        let direct = client_of(&servers.connect_string());
        let config = WorkerConfig {
            connect: proxies.connect_string(),
            queue: queue.clone(),
            locks: locks.clone(),
            delay: Duration::from_millis(10),
            claim_window: WINDOW,
            session_timeout: SESSION,
            threads: THREADS,
            priority: true,
        };
        let mut spawned = 0;
        let workers: Vec<(usize, Worker)> = (0..WORKERS)
            .map(|_| {
                spawned += 1;
                (spawned, Worker::spawn(&config, &dir, spawned))
            })
            .collect();
        for (_, worker) in &workers {
            worker.wait_ready(WAIT);
        }
        // Items are put as the rounds allow: a round begins with a backlog of a
        // round's items, and a fault aimed at requests allows some more while it
        // is armed, so work (and with it the requests faults aim at) lasts as
        // long as the run, however long a round waits.
        let allowed = Arc::new(AtomicUsize::new(2 * PER_ROUND));
        let mix = Mix {
            records: 3,
            priority: true,
            seed,
        };
        let producer = Producer::start_gated(
            &producer_proxies.connect_string(),
            &queue,
            usize::MAX,
            Duration::from_millis(2),
            Some(Gate::Allowed(Arc::clone(&allowed))),
            mix,
        );
        Run {
            fired: BTreeMap::new(),
            faults: Faults::default(),
            kill_pickups: Vec::new(),
            expiry_pickups: Vec::new(),
            kills_tried: 0,
            kills_mid_item: 0,
            producer,
            allowed,
            workers,
            spawned,
            config,
            direct,
            leases,
            dir,
            locks,
            queue,
            producer_proxies,
            proxies,
            servers,
        }
    }

    /// Allows the producer `n` more items.
    fn more(&self, n: usize) {
        self.allowed.fetch_add(n, Ordering::Relaxed);
    }

    /// Waits for the round's progress, then injects `fault` and records it
    /// once its effect was seen.
    pub(super) fn round(&mut self, round: usize, fault: Fault, rng: &mut SplitMix64) {
        self.allowed.fetch_max((round + 2) * PER_ROUND, Ordering::Relaxed);
        wait_delivered(&self.dir, (round + 1) * PER_ROUND);
        // When the fault began (a kill: the moment of the signal).
        let mut at = now_micros();
        // What the fault was and what it may cost, once its effect was seen.
        let seen = self.inject(round, fault, rng, &mut at);
        // A planned fault that did not happen would make the run prove less
        // than it claims.
        let Some((what, cost)) = seen else {
            panic!("round {round}: {fault:?} did not fire (its effect was not seen)");
        };
        println!("round {round}: {fault:?}: {what}");
        self.faults.record(at, format!("round {round}: {what}"), cost);
        *self.fired.entry(fault).or_default() += 1;
    }

    /// Injects `fault`: what it was and what it may cost, once its effect was
    /// seen. A kill sets `at` to the moment of its signal.
    fn inject(&mut self, round: usize, fault: Fault, rng: &mut SplitMix64, at: &mut u64) -> Option<(String, Cost)> {
        match fault {
            Fault::KillConsumer => self.kill_consumer(round, rng, at),
            Fault::RestartServer => self.servers.restart_one(rng).map(|what| (what, Cost::Nothing)),
            Fault::KillLeader => self.servers.kill_leader().map(|what| (what, Cost::Nothing)),
            Fault::Cut => {
                let cut = self.proxies.cutting(|p| p.each(FaultProxy::cut));
                (cut > 0).then(|| (format!("cut of {cut} connections"), Cost::Nothing))
            }
            Fault::ShortBlackhole => {
                let cut = self.proxies.cutting(|p| {
                    p.each(FaultProxy::blackhole);
                    // The fault itself: a quarter of the session timeout.
                    std::thread::sleep(SESSION / 4);
                    // Cuts the connections blackholed.
                    p.each(FaultProxy::heal);
                });
                (cut > 0).then(|| (format!("short blackhole of {cut} connections"), Cost::Nothing))
            }
            Fault::LongBlackhole => self.long_blackhole(round),
            Fault::DropNextReply => self
                .proxies
                .drop_reply(FaultProxy::drop_next_reply, || self.more(PER_ROUND / 3))
                .then(|| ("a consumer's next reply lost".to_owned(), Cost::Nothing)),
            Fault::DropCreateReply => self
                .proxies
                .drop_reply(|p| p.drop_reply_to(Request::Create), || self.more(PER_ROUND / 3))
                .then(|| ("a lock create's reply lost".to_owned(), Cost::Nothing)),
            Fault::DropMultiReply => self
                .proxies
                .drop_reply(|p| p.drop_reply_to(Request::Multi), || self.more(PER_ROUND / 3))
                .then(|| ("an acknowledge's reply lost".to_owned(), Cost::Nothing)),
            Fault::DropPutReply => self
                .producer_proxies
                .drop_reply(|p| p.drop_reply_to(Request::Create), || self.more(PER_ROUND / 3))
                .then(|| ("a put's reply lost".to_owned(), Cost::Nothing)),
        }
    }

    /// Kills a consumer process drawn at random (most often while it holds an
    /// item begun in each thread), starts another in its place, and waits
    /// until the nodes it had begun were begun again.
    fn kill_consumer(&mut self, round: usize, rng: &mut SplitMix64, at: &mut u64) -> Option<(String, Cost)> {
        let slot = usize::try_from(rng.below(WORKERS as u64)).unwrap();
        // The first kill of a run lands mid-item, and most after it.
        let held = self.kills_tried == 0 || rng.below(KILLS_PER_ANY_MOMENT) != 0;
        self.kills_tried += 1;
        let victim = self.workers[slot].0;
        let session = Tally::read(&self.dir).session_of(victim).expect("the victim's session");
        if held {
            self.hold_items(round, slot);
        }
        *at = now_micros();
        let gone = self.workers[slot].1.kill();
        self.spawned += 1;
        self.workers[slot] = (self.spawned, Worker::spawn(&self.config, &self.dir, self.spawned));
        self.workers[slot].1.wait_ready(WAIT);
        let cost = gone.then(|| {
            let victim = Victim {
                worker: victim,
                session,
                killed_at: *at,
            };
            victim.picked_up(round, &self.dir, &self.direct, &self.config)
        });
        cost.map(|(pickups, unfinished)| {
            assert!(
                !held || unfinished > 0,
                "round {round}: worker {victim} held work, and its log shows none unfinished"
            );
            self.kill_pickups.extend(pickups);
            self.kills_mid_item += usize::from(unfinished > 0);
            let how = if held { "held mid-item" } else { "at any moment" };
            (
                format!("kill of worker {victim} ({how}; {unfinished} nodes begun and unfinished)"),
                Cost::Kill { worker: victim },
            )
        })
    }

    /// Tells the worker in `slot` to hold the items it begins, and waits
    /// until it holds one in each thread.
    fn hold_items(&self, round: usize, slot: usize) {
        let (victim, worker) = (self.workers[slot].0, &self.workers[slot].1);
        worker.hold();
        // Items come as the rounds allow: more until the victim
        // has begun one in each thread (the other worker takes
        // some of them).
        let deadline = Instant::now() + WAIT;
        while !worker.wait_holding(THREADS, Duration::from_millis(200)) {
            assert!(
                Instant::now() < deadline,
                "round {round}: worker {victim} did not hold {THREADS} items begun within {WAIT:?}"
            );
            self.more(THREADS);
        }
    }

    /// Blackholes the consumers until the server expired their sessions,
    /// heals, and waits until each has a new session and the nodes given up
    /// were begun again.
    fn long_blackhole(&mut self, round: usize) -> Option<(String, Cost)> {
        let tally = Tally::read(&self.dir);
        let sessions: BTreeMap<usize, i64> = self
            .workers
            .iter()
            .map(|(n, _)| (*n, tally.session_of(*n).expect("a worker's session")))
            .collect();
        let markers: Vec<String> = sessions.values().map(|s| self.config.session_marker(*s)).collect();
        self.proxies.each(FaultProxy::blackhole);
        let expired = sessions_expired(&self.direct, &markers, WAIT);
        // Listed while no worker reaches the servers.
        let given_up = expired.then(|| given_up_with(&self.dir, &self.direct, &self.queue, &sessions));
        self.proxies.each(FaultProxy::heal);
        let healed_at = now_micros();
        given_up.map(|given_up| {
            wait_new_sessions(&self.dir, &sessions);
            let pickups = wait_picked_up_after_heal(&self.dir, &given_up, &sessions, healed_at);
            assert_in_time(round, "the heal", &pickups, EXPIRY_PICKUP);
            self.expiry_pickups.extend(pickups.into_iter().map(|(_, p)| p));
            (
                format!("long blackhole ({} nodes given up)", given_up.len()),
                Cost::Expiry { sessions },
            )
        })
    }

    /// Heals, stops the producer, drains the queue, checks the invariants and
    /// reports.
    pub(super) fn finish(self, seed: u64, rounds: usize, ensemble: bool, started: Instant) -> Report {
        self.proxies.each(FaultProxy::heal);
        self.producer_proxies.each(FaultProxy::heal);
        let produced = self.producer.stop();
        let verify = client_of(&self.servers.connect_string());
        let tally = drain(
            &verify,
            &self.queue,
            &self.locks,
            &self.dir,
            &produced.items,
            Duration::from_secs(120),
        );
        let (attribution, charges) = assert_duplicates_owed(&tally, &produced, WINDOW, &self.faults);
        let sampled = self.leases.stop();
        let report = Report {
            seed,
            rounds,
            ensemble,
            planned: planned(seed, rounds, ensemble),
            fired: self.fired,
            items: produced.items.len(),
            nodes_with_several_items: produced.multi_nodes,
            lost: tally.unfinished(&produced.items).len(),
            duplicates: tally.duplicates(),
            redeliveries: attribution.redeliveries,
            given_up: attribution.given_up.values().map(BTreeSet::len).sum(),
            most_per_fault: charges.nodes.values().map(BTreeSet::len).max().unwrap_or(0),
            charged: charged(&charges, &self.faults),
            stored_twice: attribution.stored_twice,
            kills: self.faults.killed().len(),
            kills_mid_item: self.kills_mid_item,
            sessions_lost: tally.sessions_lost(),
            leases_lost: tally.leases_lost(),
            most_leases_held: sampled.most,
            puts_tried_again: produced.ambiguous,
            puts_resent: produced.resent,
            pickup_after_kill_ms: p50_max_ms(self.kill_pickups),
            pickup_after_kill_allowed: Bound::across_processes(KILL_PICKUP).allowed(),
            pickup_after_expiry_ms: p50_max_ms(self.expiry_pickups),
            pickup_after_expiry_allowed: Bound::across_processes(EXPIRY_PICKUP).allowed(),
            elapsed: started.elapsed(),
        };
        println!("random faults: {report:#?}");
        assert_report(&report, &sampled);
        drop(self.workers);
        let _ = std::fs::remove_dir_all(&self.dir);
        report
    }
}

/// Waits until each worker of `expired` (worker, session) recorded that its
/// session expired and recorded a new one.
fn wait_new_sessions(dir: &std::path::Path, expired: &BTreeMap<usize, i64>) {
    let deadline = Instant::now() + WAIT;
    loop {
        let tally = Tally::read(dir);
        let pending: Vec<(&usize, &i64)> = expired
            .iter()
            .filter(|(n, s)| {
                let log = &tally.workers[n];
                !log.sessions_lost.contains(s) || log.sessions.last() == Some(s)
            })
            .collect();
        if pending.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "workers whose sessions expired never heard of it or never had a new one: {pending:x?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
