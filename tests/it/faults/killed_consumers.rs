//! The delivery guarantees with consumer processes killed with `kill -9`
//! among server restarts, cut connections and an ensemble losing its leader.
//! Each kill is aimed at a full window: the consumers are slower than the
//! producer, so a backlog waits, and the victim is killed once it holds
//! `claim_window` leases, each an item it began (its side effect done, its
//! acknowledge not), in the middle of one. Each fault counts only once its
//! effect is seen (the victim's process gone, the server started again, the
//! leader's process gone), and the next begins once the victim's items were
//! begun again. Lock-safe consumers finish every item (a worker records when
//! an item's work returned `Ok`) and deliver again only nodes charged to a
//! kill, at most `claim_window` per kill, losing no session; a victim's
//! items are begun again within its session timeout and a second; plain consumers lose only items a killed consumer had claimed
//! (the server's transaction log tells whose session deleted each node): the
//! item in hand and at most `claim_window` claimed ahead per kill.

use std::collections::{BTreeMap, BTreeSet};
use std::thread;
use std::time::{Duration, Instant};

use zk_queue::testing::{FaultProxy, TestingCluster, TestingServer};
use zk_queue::ZkClient;

use super::{wait_delivered, work_dir, WAIT};
use crate::support::client_of;
use crate::support::leases::LeaseSampler;
use crate::support::server::unique_path;
use crate::support::tally::{now_micros, read_worker, Attribution, Charges, Cost, Faults, ServerLog, Tally};
use crate::support::worker::{self, Worker, WorkerConfig};
use crate::support::workload::{
    assert_duplicates_owed, assert_picked_up_in_time, drain, pickup_after_kill, started_since,
    wait_picked_up_after_kill, Gate, Mix, Producer,
};

/// The claim window of the worker processes: the leases each holds at most.
const WINDOW: usize = 4;

/// Not a test of its own: the worker process that the fault tests start and
/// kill. Without its environment it does nothing, so `cargo test -- --ignored`
/// stays harmless.
#[test]
#[ignore = "run in a child process by the fault tests"]
fn worker_process() {
    worker::run_from_env();
}

/// Lock-safe workers as slow as `delay` per item, with a thread per lease.
fn worker_config(connect: &str, queue: &str, locks: &str, session_timeout: Duration) -> WorkerConfig {
    WorkerConfig {
        connect: connect.to_owned(),
        queue: queue.to_owned(),
        locks: locks.to_owned(),
        delay: Duration::from_millis(150),
        claim_window: WINDOW,
        session_timeout,
        threads: WINDOW,
        priority: false,
    }
}

/// Waits until the workers writing to `dir` began `n` more distinct items
/// than they have now.
fn wait_more(dir: &std::path::Path, n: usize) {
    wait_delivered(dir, Tally::read(dir).delivered.len() + n);
}

/// A producer that keeps a backlog of up to 100 items ahead of the workers
/// writing to `dir` until it is stopped, so that every kill finds a full
/// window, whatever the time earlier faults took.
fn backlogged(connect: &str, queue: &str, dir: &std::path::Path, mix: Mix) -> Producer {
    let gate = Gate::Ahead {
        dir: dir.to_owned(),
        ahead: 100,
    };
    Producer::start_gated(connect, queue, usize::MAX, Duration::ZERO, Some(gate), mix)
}

/// Worker processes, numbered from the count of those already started, and
/// the faults of the run.
struct Workers {
    config: WorkerConfig,
    dir: std::path::PathBuf,
    running: Vec<(usize, Worker)>,
    started: usize,
    /// A client of the servers themselves (no proxy), to see a killed
    /// worker's session expire.
    direct: ZkClient,
    faults: Faults,
    /// Per kill, how long after it each node its victim had begun was begun
    /// again, in microseconds.
    pickups: Vec<(String, Vec<(String, u64)>)>,
}

impl Workers {
    fn start(config: WorkerConfig, dir: &std::path::Path, count: usize, servers: &str) -> Workers {
        let mut workers = Workers {
            config,
            dir: dir.to_owned(),
            running: Vec::new(),
            started: 0,
            direct: client_of(servers),
            faults: Faults::default(),
            pickups: Vec::new(),
        };
        for _ in 0..count {
            workers.spawn();
        }
        for (_, worker) in &workers.running {
            worker.wait_ready(WAIT);
        }
        workers
    }

    fn spawn(&mut self) {
        let n = self.started;
        self.started += 1;
        self.running.push((n, Worker::spawn(&self.config, &self.dir, n)));
    }

    /// Kills the `slot`-th running worker once `leases` shows it holding a
    /// full window, in the middle of an item it began (see [`wait_mid_item`];
    /// a full window seen by the sampler alone may have been acknowledged by
    /// the time the kill lands).
    fn kill_at_full_window(&mut self, slot: usize, leases: &LeaseSampler) {
        let (n, _) = self.running[slot];
        let session = Tally::read(&self.dir).session_of(n).expect("the worker's session");
        leases.wait_held(session, WINDOW, WAIT);
        wait_mid_item(&self.dir, n, self.config.delay);
        self.kill(slot);
    }

    /// Kills the `slot`-th running worker, asserts that its process is gone,
    /// starts another, and waits until the server expired the victim's
    /// session and another worker began each node it had begun and not
    /// acknowledged (so the next fault cannot delay that).
    fn kill(&mut self, slot: usize) {
        let (n, _) = self.running[slot];
        let session = Tally::read(&self.dir).session_of(n).expect("the worker's session");
        let at = now_micros();
        assert!(
            self.running[slot].1.kill(),
            "the kill of worker {n} did not end its process"
        );
        let what = format!("kill of worker {n}");
        self.faults.record(at, what.clone(), Cost::Kill { worker: n });
        self.running.remove(slot);
        self.spawn();
        let marker = self.config.session_marker(session);
        let pickups = wait_picked_up_after_kill(&self.dir, &self.direct, &self.config.queue, &marker, n, at);
        println!("{what}: the nodes it had begun begun again (node, µs after it): {pickups:?}");
        self.pickups.push((what, pickups));
    }
}

/// Waits until worker `n`'s latest item was begun between a quarter and a
/// half of an item's work `delay` ago. A kill right after lands on that item
/// before its acknowledge, however slow the kill, and after the consumer had
/// a quarter of an item's time to claim the items after it.
fn wait_mid_item(dir: &std::path::Path, n: usize, delay: Duration) {
    let micros = |d: Duration| u64::try_from(d.as_micros()).expect("a short delay");
    let (from, to) = (micros(delay / 4), micros(delay / 2));
    let deadline = Instant::now() + WAIT;
    loop {
        let latest = read_worker(dir, n).deliveries.last().map(|d| d.at_micros);
        if latest.is_some_and(|at| (from..to).contains(&now_micros().saturating_sub(at))) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "worker {n} was never in the middle of an item"
        );
        thread::sleep(Duration::from_millis(1));
    }
}

/// Every kill landed on work begun: at least one node is charged to it, and
/// every item its victim began was finished by another worker. Prints how
/// long after it each node charged to it was begun again.
fn assert_kills_hurt(workers: &Workers, tally: &Tally, attribution: &Attribution, charges: &Charges) {
    let faults = &workers.faults.0;
    for (f, fault) in faults.iter().enumerate() {
        let Cost::Kill { worker: victim } = fault.cost else {
            continue;
        };
        let nodes = charges.nodes.get(&(f, victim)).map_or(0, BTreeSet::len);
        assert!(
            nodes >= 1,
            "{}: no node charged to it; the kill missed its window",
            fault.what
        );
        let finished: BTreeSet<&str> = tally
            .workers
            .values()
            .flat_map(|log| log.finished.iter().map(|d| d.item.as_str()))
            .collect();
        let left: BTreeSet<&str> = tally.workers[&victim]
            .deliveries
            .iter()
            .map(|d| d.item.as_str())
            .filter(|i| !finished.contains(i))
            .collect();
        assert!(
            left.is_empty(),
            "{}: items it had begun nobody finished: {left:?}",
            fault.what
        );
        // A node is picked up when its first record is begun again.
        let mut picked: BTreeMap<&str, u64> = BTreeMap::new();
        for (_, r) in charges.charged.iter().filter(|(cf, _)| *cf == f) {
            let at = picked.entry(r.node.as_str()).or_insert(r.again_at_micros);
            *at = (*at).min(r.again_at_micros);
        }
        let again: Vec<u64> = picked.values().map(|t| t - fault.at_micros).collect();
        println!(
            "{}: {nodes} nodes given up, begun again {again:?} µs after it ({} deliveries again in all)",
            fault.what,
            attribution.redelivered.iter().filter(|r| r.worker == victim).count()
        );
    }
}

#[test]
fn a_killed_consumers_items_are_begun_again_within_its_session_timeout_and_a_second() {
    let server = TestingServer::start().unwrap();
    let (queue, locks) = (unique_path("pickup"), unique_path("pickup-locks"));
    let dir = work_dir("pickup");
    let leases = LeaseSampler::start(&server.connect_string(), &locks);
    let config = worker_config(&server.connect_string(), &queue, &locks, Duration::from_secs(3));
    let mut workers = Workers::start(config, &dir, 3, &server.connect_string());
    let producer = backlogged(&server.connect_string(), &queue, &dir, Mix::PLAIN);

    wait_delivered(&dir, 40);
    for _ in 0..3 {
        workers.kill_at_full_window(0, &leases);
        wait_more(&dir, 60);
    }

    let produced = producer.stop();
    let verify = client_of(&server.connect_string());
    let tally = drain(&verify, &queue, &locks, &dir, &produced.items, WAIT);
    let (attribution, charges) = assert_duplicates_owed(&tally, &produced, WINDOW, &workers.faults);
    assert_kills_hurt(&workers, &tally, &attribution, &charges);
    for (what, pickups) in &workers.pickups {
        assert_picked_up_in_time(what, pickups, workers.config.session_timeout);
    }
    println!("bound: {:?}", pickup_after_kill(workers.config.session_timeout));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn only_killed_lock_safe_consumers_deliver_twice_at_most_a_window_each_across_restarts_and_cuts() {
    let mut server = TestingServer::start().unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).unwrap();
    let (queue, locks) = (unique_path("lose-nothing"), unique_path("lose-nothing-locks"));
    let dir = work_dir("lose-nothing");
    let leases = LeaseSampler::start(&server.connect_string(), &locks);
    // Sessions of 6 s: the restart must expire none of them (it is charged
    // nothing), also when a loaded machine slows the server's restart and
    // the workers' reconnects.
    let config = worker_config(&proxy.connect_string(), &queue, &locks, Duration::from_secs(6));
    let mut workers = Workers::start(config, &dir, 3, &server.connect_string());
    let producer = backlogged(&server.connect_string(), &queue, &dir, Mix::PLAIN);

    wait_delivered(&dir, 40);
    workers.kill_at_full_window(0, &leases);
    wait_more(&dir, 60);
    let (at, since) = (now_micros(), Instant::now());
    server.restart().unwrap();
    assert!(
        started_since(&server.connect_string(), since),
        "the server did not restart"
    );
    workers.faults.record(at, "restart of the server", Cost::Nothing);
    wait_more(&dir, 60);
    workers.faults.record(now_micros(), "cut", Cost::Nothing);
    proxy.cut();
    wait_more(&dir, 60);
    workers.kill_at_full_window(0, &leases);

    let produced = producer.stop();
    let verify = client_of(&server.connect_string());
    let tally = drain(&verify, &queue, &locks, &dir, &produced.items, WAIT);
    let (attribution, charges) = assert_duplicates_owed(&tally, &produced, WINDOW, &workers.faults);
    assert_kills_hurt(&workers, &tally, &attribution, &charges);
    let sampled = leases.stop();
    println!("leases: {sampled:?}");
    assert_eq!(sampled.most, WINDOW, "the most leases one consumer held: {sampled:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_killed_consumer_of_put_multi_nodes_gives_up_at_most_a_window_of_nodes() {
    const RECORDS: usize = 5;
    let server = TestingServer::start().unwrap();
    let (queue, locks) = (unique_path("multi-kill"), unique_path("multi-kill-locks"));
    let dir = work_dir("multi-kill");
    let leases = LeaseSampler::start(&server.connect_string(), &locks);
    let mut config = worker_config(&server.connect_string(), &queue, &locks, Duration::from_secs(2));
    config.delay = Duration::from_millis(80);
    let mut workers = Workers::start(config, &dir, 2, &server.connect_string());
    let mix = Mix {
        records: RECORDS,
        priority: false,
        seed: 7,
    };
    let producer = backlogged(&server.connect_string(), &queue, &dir, mix);

    wait_delivered(&dir, 40);
    workers.kill_at_full_window(0, &leases);
    wait_more(&dir, 60);
    workers.kill_at_full_window(1, &leases);

    let produced = producer.stop();
    let verify = client_of(&server.connect_string());
    let tally = drain(&verify, &queue, &locks, &dir, &produced.items, WAIT);
    let (attribution, charges) = assert_duplicates_owed(&tally, &produced, WINDOW, &workers.faults);
    assert_kills_hurt(&workers, &tally, &attribution, &charges);
    // The bound is in nodes: in items it is a window of nodes' records.
    for victim in &workers.faults.killed() {
        let items = attribution.redelivered.iter().filter(|r| r.worker == *victim).count();
        println!(
            "worker {victim}: {items} items of {:?} delivered again",
            attribution.given_up[victim]
        );
        assert!(
            items <= WINDOW * RECORDS,
            "{items} items delivered again after worker {victim} died"
        );
    }
    assert!(leases.stop().most <= WINDOW);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn plain_consumers_lose_only_what_a_killed_one_claimed_and_deliver_twice_only_after_an_ambiguous_claim() {
    let mut server = TestingServer::start().unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).unwrap();
    let queue = unique_path("plain-at-most-once");
    let dir = work_dir("plain-at-most-once");
    // No lock path: a plain consumer, one thread, claiming a window ahead.
    // Sessions of 6 s, so that the restart (charged nothing) expires none,
    // also on a loaded machine.
    let mut config = worker_config(&proxy.connect_string(), &queue, "", Duration::from_secs(6));
    config.delay = Duration::from_millis(80);
    config.threads = 1;
    // The first victim consumes alone, so its window is full when it dies:
    // no other consumer claims the items after its own.
    let mut workers = vec![Worker::spawn(&config, &dir, 0)];
    workers[0].wait_ready(WAIT);
    let gate = Gate::Ahead {
        dir: dir.clone(),
        ahead: 100,
    };
    let producer = Producer::start_gated(
        &server.connect_string(),
        &queue,
        300,
        Duration::ZERO,
        Some(gate),
        Mix::PLAIN,
    );
    let mut faults = Faults::default();

    wait_delivered(&dir, 30);
    wait_mid_item(&dir, 0, config.delay);
    let at = now_micros();
    assert!(workers[0].kill(), "the kill of worker 0 did not end its process");
    faults.record(at, "kill of worker 0", Cost::Kill { worker: 0 });
    workers = (1..4).map(|n| Worker::spawn(&config, &dir, n)).collect();
    wait_delivered(&dir, 90);
    let (at, since) = (now_micros(), Instant::now());
    server.restart().unwrap();
    assert!(
        started_since(&server.connect_string(), since),
        "the server did not restart"
    );
    faults.record(at, "restart of the server", Cost::Nothing);
    wait_delivered(&dir, 140);
    faults.record(now_micros(), "cut", Cost::Nothing);
    proxy.cut();
    wait_delivered(&dir, 190);
    wait_mid_item(&dir, 2, config.delay);
    let at = now_micros();
    assert!(workers[1].kill(), "the kill of worker 2 did not end its process");
    faults.record(at, "kill of worker 2", Cost::Kill { worker: 2 });
    workers[1] = Worker::spawn(&config, &dir, 4);

    let produced = producer.join();
    let verify = client_of(&server.connect_string());
    // Lost items never come: wait for an empty queue and a quiet tally.
    let deadline = Instant::now() + WAIT;
    let mut last = (usize::MAX, Instant::now());
    let tally = loop {
        let tally = Tally::read(&dir);
        let empty = verify.get_children(&queue).is_ok_and(|(c, _)| c.is_empty());
        let recorded = tally.delivered.values().sum::<usize>() + tally.finished.values().sum::<usize>();
        if recorded != last.0 {
            last = (recorded, Instant::now());
        } else if empty && last.1.elapsed() > Duration::from_secs(1) {
            break tally;
        }
        assert!(Instant::now() < deadline, "the queue did not drain: {tally:?}");
        thread::sleep(Duration::from_millis(50));
    };
    let server_log = ServerLog::read(server.data_dir(), &queue);
    let losses = tally.plain_losses(&produced.items, &faults.0, &server_log);
    let attribution = tally.attribute();
    let by_kill: Vec<(&str, &BTreeSet<String>)> = losses
        .by_kill
        .iter()
        .map(|(f, items)| (faults.0[*f].what.as_str(), items))
        .collect();
    println!(
        "{} items, {} lost (by kill: {by_kill:?}), {} deliveries again ({} after an ambiguous claim), {} items \
         stored twice (at most {})",
        produced.items.len(),
        tally.unfinished(&produced.items).len(),
        attribution.redeliveries,
        attribution.ambiguous_claims,
        attribution.stored_twice,
        produced.may_store_twice()
    );
    // Every lost item's node was claimed by a consumer that was killed: a
    // restart or a cut lost nothing.
    assert!(
        losses.unexplained.is_empty(),
        "items lost that no killed consumer had claimed ((item, [(node, claiming session)])): {:?}",
        losses.unexplained
    );
    // A victim loses the item each of its threads was working on and the
    // items it had claimed ahead, at most a window of them; at least the
    // item in hand, as each kill lands mid-item.
    for (f, fault) in faults.0.iter().enumerate() {
        let Cost::Kill { worker } = fault.cost else { continue };
        let lost = losses.by_kill.get(&f).cloned().unwrap_or_default();
        let begun: BTreeSet<String> = tally.workers[&worker]
            .deliveries
            .iter()
            .map(|d| d.item.clone())
            .collect();
        let in_hand = lost.intersection(&begun).count();
        let ahead = lost.len() - in_hand;
        println!("{}: {in_hand} items lost in hand, {ahead} claimed ahead", fault.what);
        assert_eq!(in_hand, config.threads, "{}: items lost in hand: {lost:?}", fault.what);
        assert!(
            ahead <= WINDOW,
            "{}: {ahead} items lost claimed ahead, more than a window: {lost:?}",
            fault.what
        );
    }
    assert_eq!(
        attribution.redeliveries, attribution.ambiguous_claims,
        "a plain consumer delivered a node again without an ambiguous claim: {:?}",
        attribution.redelivered
    );
    assert!(attribution.stored_twice <= produced.may_store_twice());
    drop(workers);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn only_killed_lock_safe_consumers_deliver_twice_when_the_ensemble_loses_its_leader() {
    let cluster = TestingCluster::start(3).unwrap();
    let (queue, locks) = (unique_path("ensemble"), unique_path("ensemble-locks"));
    let dir = work_dir("ensemble");
    let leases = LeaseSampler::start(&cluster.connect_string(), &locks);
    let mut config = worker_config(&cluster.connect_string(), &queue, &locks, Duration::from_secs(6));
    config.delay = Duration::from_millis(100);
    let mut workers = Workers::start(config, &dir, 2, &cluster.connect_string());
    let producer = backlogged(&cluster.connect_string(), &queue, &dir, Mix::PLAIN);

    wait_delivered(&dir, 40);
    let leader = cluster.wait_for_leader(Duration::from_secs(60)).expect("a leader");
    let at = now_micros();
    cluster.kill(leader).unwrap();
    assert!(!cluster.is_running(leader), "the leader's process outlived its kill");
    workers
        .faults
        .record(at, format!("kill of the leader, member {leader}"), Cost::Nothing);
    wait_delivered(&dir, 90);
    workers.kill_at_full_window(0, &leases);
    wait_more(&dir, 50);
    let (at, since) = (now_micros(), Instant::now());
    cluster.restart(leader).unwrap();
    assert!(
        started_since(&cluster.member_connect_string(leader), since),
        "member {leader} did not start again"
    );
    workers
        .faults
        .record(at, format!("restart of member {leader}"), Cost::Nothing);

    let produced = producer.stop();
    let verify = client_of(&cluster.connect_string());
    let tally = drain(&verify, &queue, &locks, &dir, &produced.items, WAIT);
    let (attribution, charges) = assert_duplicates_owed(&tally, &produced, WINDOW, &workers.faults);
    assert_kills_hurt(&workers, &tally, &attribution, &charges);
    assert!(leases.stop().most <= WINDOW);
    let _ = std::fs::remove_dir_all(&dir);
}
