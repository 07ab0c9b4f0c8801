//! A seeded, repeatable run of faults under a produce/consume workload of
//! unique items, single and `put_multi` nodes with priorities, consumed by
//! lock-safe consumer processes (priority queues).
//!
//! The first rounds fire every kind of fault once, in an order the seed
//! shuffles; later rounds draw kinds at random. Each round waits for some
//! progress, then injects one fault: `kill -9` a consumer process (and start
//! a new one), restart a server, kill the ensemble's leader (and restart it
//! once another leads), cut the consumers' connections, blackhole them for a
//! quarter of the session timeout or until the server expired their
//! sessions, drop the reply to the next request, lock create or acknowledge
//! multi, or drop the reply to a put's create. A fault counts as fired only
//! once its effect is seen, or the run fails: a killed consumer's process is
//! gone, a restarted server's uptime began after the restart did, a killed
//! leader's process is gone and another member leads, a long blackhole's
//! sessions expired on the server (their markers vanished), a dropped reply
//! was dropped. After a kill the round waits until the server expired the
//! victim's session and its items were begun again (the report tells how
//! long after the kill); after a long blackhole, until each consumer heard
//! that its session expired and has a new one.
//!
//! Then everything is healed, the queue drained, and the invariants checked:
//! every item finished (a worker recorded that its work returned `Ok`), no
//! lock left, no consumer ever held more than its claim window of leases,
//! every node delivered again charged to one fault (the kill of its worker,
//! or the expiry of the session it was handed over in) and at most a window
//! per fault and worker, the sessions lost exactly those the long blackholes
//! expired, and every item stored twice from a put sent again. So restarts,
//! cuts, short blackholes, leader changes and lost replies cost no session
//! and add no duplicate.
//!
//! The long version is ignored; run it with
//! `ZKQ_FAULT_SEED=<seed> ZKQ_FAULT_ROUNDS=<rounds> [ZKQ_FAULT_ENSEMBLE=1] cargo test
//! --all-features --test it faults::random_faults::long -- --exact --ignored --nocapture`
//! (`scripts/test.sh` runs 100 rounds of each; `proof/README.md` keeps the
//! logs of longer runs).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use zk_queue::testing::{FaultProxy, Request, TestingCluster, TestingServer};

use super::{wait_delivered, work_dir, WAIT};
use crate::support::client_of;
use crate::support::leases::LeaseSampler;
use crate::support::server::unique_path;
use crate::support::tally::{now_micros, Cost, Faults, Tally};
use crate::support::worker::{Worker, WorkerConfig};
use crate::support::workload::{
    assert_duplicates_owed, drain, sessions_expired, started_since, wait_picked_up_after_kill, Gate, Mix, Producer,
    SplitMix64,
};

/// The claim window of the consumer processes.
const WINDOW: usize = 4;
/// The consumers' session timeout.
const SESSION: Duration = Duration::from_secs(2);
/// Consumer processes running at once.
const WORKERS: usize = 2;
/// Items finished between two faults.
const PER_ROUND: usize = 30;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Fault {
    KillConsumer,
    RestartServer,
    KillLeader,
    Cut,
    ShortBlackhole,
    LongBlackhole,
    DropNextReply,
    DropCreateReply,
    DropMultiReply,
    DropPutReply,
}

const FAULTS: [Fault; 10] = [
    Fault::KillConsumer,
    Fault::RestartServer,
    Fault::KillLeader,
    Fault::Cut,
    Fault::ShortBlackhole,
    Fault::LongBlackhole,
    Fault::DropNextReply,
    Fault::DropCreateReply,
    Fault::DropMultiReply,
    Fault::DropPutReply,
];

/// The servers of a run: one, or a 3-member ensemble.
enum Servers {
    One(Box<TestingServer>),
    Ensemble(TestingCluster),
}

impl Servers {
    fn start(ensemble: bool) -> Servers {
        if ensemble {
            Servers::Ensemble(TestingCluster::start(3).unwrap())
        } else {
            Servers::One(Box::new(TestingServer::start().unwrap()))
        }
    }

    /// Each member's address.
    fn members(&self) -> Vec<String> {
        match self {
            Servers::One(server) => vec![server.connect_string()],
            Servers::Ensemble(cluster) => (0..cluster.size()).map(|m| cluster.member_connect_string(m)).collect(),
        }
    }

    fn connect_string(&self) -> String {
        self.members().join(",")
    }

    /// Restarts one server (a random member of an ensemble); returns what
    /// it restarted once it is seen to have started again, or `None`.
    fn restart_one(&mut self, rng: &mut SplitMix64) -> Option<String> {
        let since = Instant::now();
        let (member, what) = match self {
            Servers::One(server) => {
                server.restart().unwrap();
                (0, "restart of the server".to_owned())
            }
            Servers::Ensemble(cluster) => {
                let member = usize::try_from(rng.below(cluster.size() as u64)).unwrap();
                cluster.kill(member).unwrap();
                cluster.restart(member).unwrap();
                (member, format!("restart of member {member}"))
            }
        };
        started_since(&self.members()[member], since).then_some(what)
    }

    /// Kills the leader and restarts it once another member leads; returns
    /// what it did once the leader's process is seen gone, another member
    /// leading and the old leader started again; `None` without an ensemble
    /// or if one of those was not seen.
    fn kill_leader(&mut self) -> Option<String> {
        let Servers::Ensemble(cluster) = self else {
            return None;
        };
        let leader = cluster.wait_for_leader(Duration::from_secs(60)).expect("a leader");
        cluster.kill(leader).unwrap();
        if cluster.is_running(leader) {
            return None;
        }
        let deadline = Instant::now() + Duration::from_secs(60);
        while cluster.leader().is_none_or(|l| l == leader) {
            assert!(
                Instant::now() < deadline,
                "no new leader after member {leader} died\n{}",
                member_log_tails(cluster)
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        let since = Instant::now();
        cluster.restart(leader).unwrap();
        started_since(&cluster.member_connect_string(leader), since)
            .then(|| format!("leader change (member {leader} killed and started again)"))
    }
}

/// A fault proxy in front of each member.
struct Proxies(Vec<FaultProxy>);

impl Proxies {
    fn start(servers: &Servers) -> Proxies {
        Proxies(
            servers
                .members()
                .iter()
                .map(|m| FaultProxy::start(m).unwrap())
                .collect(),
        )
    }

    fn connect_string(&self) -> String {
        self.0
            .iter()
            .map(FaultProxy::connect_string)
            .collect::<Vec<_>>()
            .join(",")
    }

    fn each(&self, f: impl Fn(&FaultProxy)) {
        self.0.iter().for_each(f);
    }

    /// Arms a reply-dropping fault on every proxy, makes `traffic` for it,
    /// waits until one fired (the client talks to one member at a time),
    /// then heals all. Returns whether it fired within ten seconds.
    fn drop_reply(&self, arm: impl Fn(&FaultProxy), traffic: impl FnOnce()) -> bool {
        self.each(arm);
        traffic();
        let deadline = Instant::now() + Duration::from_secs(10);
        let fired = || self.0.iter().any(|p| !p.dropping_reply());
        while !fired() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let fired = fired();
        self.each(FaultProxy::heal);
        fired
    }
}

/// What a run did; printed through `Debug`.
#[derive(Debug)]
#[allow(dead_code)]
struct Report {
    seed: u64,
    rounds: usize,
    ensemble: bool,
    fired: BTreeMap<Fault, usize>,
    items: usize,
    nodes_with_several_items: usize,
    lost: usize,
    duplicates: usize,
    /// Deliveries again of nodes a killed or expired consumer gave up.
    redeliveries: usize,
    /// Nodes given up, all charged to faults.
    given_up: usize,
    /// The most nodes one fault cost one worker.
    most_per_fault: usize,
    /// Faults that cost nodes, and the nodes they cost.
    charged: BTreeMap<String, usize>,
    stored_twice: usize,
    kills: usize,
    sessions_lost: usize,
    leases_lost: usize,
    most_leases_held: usize,
    puts_tried_again: usize,
    puts_resent: usize,
    /// From a kill to the next delivery of each node the victim had begun and
    /// not acknowledged: count, p50 and max, in milliseconds.
    pickup_after_kill_ms: (usize, u64, u64),
    /// From the heal of a session-expiring blackhole to the next delivery of
    /// each node an expired consumer had given up, before the next fault:
    /// count, p50 and max, in milliseconds.
    pickup_after_expiry_ms: (usize, u64, u64),
    elapsed: Duration,
}

/// The faults of a run: every kind once, in an order the seed shuffles, then
/// kinds drawn at random.
fn plan(rng: &mut SplitMix64, rounds: usize, ensemble: bool) -> Vec<Fault> {
    let mut kinds: Vec<Fault> = FAULTS
        .iter()
        .copied()
        .filter(|f| ensemble || *f != Fault::KillLeader)
        .collect();
    assert!(
        rounds >= kinds.len(),
        "{rounds} rounds cannot fire all {} kinds of fault",
        kinds.len()
    );
    for i in (1..kinds.len()).rev() {
        kinds.swap(i, usize::try_from(rng.below(i as u64 + 1)).unwrap());
    }
    let mut plan = kinds.clone();
    while plan.len() < rounds {
        plan.push(kinds[usize::try_from(rng.below(kinds.len() as u64)).unwrap()]);
    }
    plan
}

/// How many `micros` there are, their p50 and max in milliseconds.
fn p50_max_ms(mut micros: Vec<u64>) -> (usize, u64, u64) {
    micros.sort_unstable();
    match micros.last() {
        None => (0, 0, 0),
        Some(max) => (micros.len(), micros[micros.len() / 2] / 1000, max / 1000),
    }
}

fn run(seed: u64, rounds: usize, ensemble: bool) -> Report {
    println!("random faults: seed {seed}, {rounds} rounds, ensemble {ensemble}");
    let started = Instant::now();
    let mut rng = SplitMix64::new(seed);
    let plan = plan(&mut rng, rounds, ensemble);
    let mut servers = Servers::start(ensemble);
    let proxies = Proxies::start(&servers);
    let producer_proxies = Proxies::start(&servers);
    let (queue, locks) = (unique_path("random"), unique_path("random-locks"));
    let dir = work_dir("random");
    let leases = LeaseSampler::start(&servers.connect_string(), &locks);
    // A client of the servers themselves, to see sessions expire.
    let direct = client_of(&servers.connect_string());
    let config = WorkerConfig {
        connect: proxies.connect_string(),
        queue: queue.clone(),
        locks: locks.clone(),
        delay: Duration::from_millis(10),
        claim_window: WINDOW,
        session_timeout: SESSION,
        threads: 2,
        priority: true,
    };
    let mut spawned = 0;
    let mut workers: Vec<(usize, Worker)> = (0..WORKERS)
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
    let more = |n: usize| {
        allowed.fetch_add(n, Ordering::Relaxed);
    };
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
    let mut fired: BTreeMap<Fault, usize> = BTreeMap::new();
    let mut faults = Faults::default();
    let mut kill_pickups = Vec::new();
    // The heal of each session-expiring blackhole, by its index in `faults`.
    let mut heals: BTreeMap<usize, u64> = BTreeMap::new();
    for (round, &fault) in plan.iter().enumerate() {
        allowed.fetch_max((round + 2) * PER_ROUND, Ordering::Relaxed);
        wait_delivered(&dir, (round + 1) * PER_ROUND);
        // When the fault began (a kill: the moment of the signal).
        let mut at = now_micros();
        // What the fault was and what it may cost, once its effect was seen.
        let seen: Option<(String, Cost)> = match fault {
            Fault::KillConsumer => {
                let slot = usize::try_from(rng.below(WORKERS as u64)).unwrap();
                let victim = workers[slot].0;
                let session = Tally::read(&dir).session_of(victim).expect("the victim's session");
                at = now_micros();
                let gone = workers[slot].1.kill();
                spawned += 1;
                workers[slot] = (spawned, Worker::spawn(&config, &dir, spawned));
                workers[slot].1.wait_ready(WAIT);
                if gone {
                    let marker = config.session_marker(session);
                    let pickups = wait_picked_up_after_kill(&dir, &direct, &queue, &marker, victim, at);
                    kill_pickups.extend(pickups.into_iter().map(|(_, p)| p));
                }
                gone.then(|| (format!("kill of worker {victim}"), Cost::Kill { worker: victim }))
            }
            Fault::RestartServer => servers.restart_one(&mut rng).map(|what| (what, Cost::Nothing)),
            Fault::KillLeader => servers.kill_leader().map(|what| (what, Cost::Nothing)),
            Fault::Cut => {
                proxies.each(FaultProxy::cut);
                Some(("cut".to_owned(), Cost::Nothing))
            }
            Fault::ShortBlackhole => {
                proxies.each(FaultProxy::blackhole);
                // The fault itself: a quarter of the session timeout.
                std::thread::sleep(SESSION / 4);
                proxies.each(FaultProxy::heal);
                Some(("short blackhole".to_owned(), Cost::Nothing))
            }
            Fault::LongBlackhole => {
                let tally = Tally::read(&dir);
                let sessions: BTreeMap<usize, i64> = workers
                    .iter()
                    .map(|(n, _)| (*n, tally.session_of(*n).expect("a worker's session")))
                    .collect();
                let markers: Vec<String> = sessions.values().map(|s| config.session_marker(*s)).collect();
                proxies.each(FaultProxy::blackhole);
                let expired = sessions_expired(&direct, &markers, WAIT);
                proxies.each(FaultProxy::heal);
                if expired {
                    heals.insert(faults.0.len(), now_micros());
                    wait_new_sessions(&dir, &sessions);
                }
                expired.then(|| ("long blackhole".to_owned(), Cost::Expiry { sessions }))
            }
            Fault::DropNextReply => proxies
                .drop_reply(FaultProxy::drop_next_reply, || more(PER_ROUND / 3))
                .then(|| ("a consumer's next reply lost".to_owned(), Cost::Nothing)),
            Fault::DropCreateReply => proxies
                .drop_reply(|p| p.drop_reply_to(Request::Create), || more(PER_ROUND / 3))
                .then(|| ("a lock create's reply lost".to_owned(), Cost::Nothing)),
            Fault::DropMultiReply => proxies
                .drop_reply(|p| p.drop_reply_to(Request::Multi), || more(PER_ROUND / 3))
                .then(|| ("an acknowledge's reply lost".to_owned(), Cost::Nothing)),
            Fault::DropPutReply => producer_proxies
                .drop_reply(|p| p.drop_reply_to(Request::Create), || more(PER_ROUND / 3))
                .then(|| ("a put's reply lost".to_owned(), Cost::Nothing)),
        };
        // A planned fault that did not happen would make the run prove less
        // than it claims.
        let Some((what, cost)) = seen else {
            panic!("round {round}: {fault:?} did not fire (its effect was not seen)");
        };
        println!("round {round}: {fault:?}: {what}");
        faults.record(at, format!("round {round}: {what}"), cost);
        *fired.entry(fault).or_default() += 1;
    }
    proxies.each(FaultProxy::heal);
    producer_proxies.each(FaultProxy::heal);
    let produced = producer.stop();
    let verify = client_of(&servers.connect_string());
    let tally = drain(&verify, &queue, &locks, &dir, &produced.items, Duration::from_secs(120));
    let (attribution, charges) = assert_duplicates_owed(&tally, &produced, WINDOW, &faults);
    let sampled = leases.stop();
    let expiry_pickups: Vec<u64> = charges
        .charged
        .iter()
        .filter_map(|(f, r)| {
            let heal = *heals.get(f)?;
            let next = faults.next_after(faults.0[*f].at_micros).unwrap_or(u64::MAX);
            (r.again_at_micros >= heal && r.again_at_micros < next).then(|| r.again_at_micros - heal)
        })
        .collect();
    let mut charged: BTreeMap<String, usize> = BTreeMap::new();
    for ((f, _), nodes) in &charges.nodes {
        let kind = match faults.0[*f].cost {
            Cost::Kill { .. } => "kills",
            _ => "expiries",
        };
        *charged.entry(kind.to_owned()).or_default() += nodes.len();
    }
    let report = Report {
        seed,
        rounds,
        ensemble,
        fired,
        items: produced.items.len(),
        nodes_with_several_items: produced.multi_nodes,
        lost: tally.unfinished(&produced.items).len(),
        duplicates: tally.duplicates(),
        redeliveries: attribution.redeliveries,
        given_up: attribution.given_up.values().map(BTreeSet::len).sum(),
        most_per_fault: charges.nodes.values().map(BTreeSet::len).max().unwrap_or(0),
        charged,
        stored_twice: attribution.stored_twice,
        kills: faults.killed().len(),
        sessions_lost: tally.sessions_lost(),
        leases_lost: tally.leases_lost(),
        most_leases_held: sampled.most,
        puts_tried_again: produced.ambiguous,
        puts_resent: produced.resent,
        pickup_after_kill_ms: p50_max_ms(kill_pickups),
        pickup_after_expiry_ms: p50_max_ms(expiry_pickups),
        elapsed: started.elapsed(),
    };
    println!("random faults: {report:#?}");
    assert!(
        sampled.most <= WINDOW,
        "a consumer held {} leases: {sampled:?}",
        sampled.most
    );
    drop(workers);
    let _ = std::fs::remove_dir_all(&dir);
    report
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

fn env_number(name: &str) -> Option<u64> {
    std::env::var(name)
        .ok()
        .map(|v| v.trim().parse().unwrap_or_else(|e| panic!("{name}={v}: {e}")))
}

#[test]
fn every_kind_of_fault_loses_no_item_and_only_kills_and_expiries_deliver_twice() {
    let report = run(
        env_number("ZKQ_FAULT_SEED").unwrap_or(20_240_601),
        FAULTS.len() - 1,
        false,
    );
    assert_eq!(report.fired.len(), FAULTS.len() - 1, "{report:?}");
}

#[test]
fn every_kind_of_fault_on_an_ensemble_loses_no_item_and_only_kills_and_expiries_deliver_twice() {
    let report = run(env_number("ZKQ_FAULT_SEED").unwrap_or(20_261_157), FAULTS.len(), true);
    assert_eq!(report.fired.len(), FAULTS.len(), "{report:?}");
}

#[test]
#[ignore = "long: ZKQ_FAULT_SEED, ZKQ_FAULT_ROUNDS and ZKQ_FAULT_ENSEMBLE choose the run"]
fn long() {
    let seed = env_number("ZKQ_FAULT_SEED").unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_secs())
    });
    let rounds = env_number("ZKQ_FAULT_ROUNDS").map_or(30, |r| usize::try_from(r).unwrap());
    run(seed, rounds, env_number("ZKQ_FAULT_ENSEMBLE").is_some_and(|e| e != 0));
}

/// The last lines of every member's log, for a failure message.
fn member_log_tails(cluster: &TestingCluster) -> String {
    (0..cluster.size())
        .map(|member| {
            let log = std::fs::read_to_string(cluster.log_path(member)).unwrap_or_default();
            let lines: Vec<&str> = log.lines().collect();
            let tail = lines[lines.len().saturating_sub(30)..].join("\n");
            format!("--- member {member} (running: {}):\n{tail}", cluster.is_running(member))
        })
        .collect::<Vec<_>>()
        .join("\n")
}
