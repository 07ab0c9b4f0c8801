//! The delivery guarantees with consumer processes killed with `kill -9`
//! among server restarts, cut connections and an ensemble losing its leader.
//! Each kill is aimed at a full window: the consumers are slower than the
//! producer, so a backlog waits, and the victim is killed once it holds
//! `claim_window` leases, each an item it began (its side effect done, its
//! acknowledge not). Lock-safe consumers lose nothing and deliver again only
//! the nodes a killed or expired consumer gave up, at most `claim_window` per
//! fault; plain consumers lose at most what a killed one claimed.

use std::collections::BTreeSet;
use std::thread;
use std::time::{Duration, Instant};

use zk_queue::testing::{FaultProxy, TestingCluster, TestingServer};

use super::{wait_delivered, work_dir, WAIT};
use crate::support::client_of;
use crate::support::leases::LeaseSampler;
use crate::support::server::unique_path;
use crate::support::tally::{now_micros, read_worker, Tally};
use crate::support::worker::{self, Worker, WorkerConfig};
use crate::support::workload::{assert_duplicates_owed, drain, Gate, Mix, Producer};

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

/// Worker processes, numbered from the count of those already started.
struct Workers {
    config: WorkerConfig,
    dir: std::path::PathBuf,
    running: Vec<(usize, Worker)>,
    started: usize,
    /// Each victim, and when it was killed.
    kill_times: Vec<(usize, u64)>,
}

impl Workers {
    fn start(config: WorkerConfig, dir: &std::path::Path, count: usize) -> Workers {
        let mut workers = Workers {
            config,
            dir: dir.to_owned(),
            running: Vec::new(),
            started: 0,
            kill_times: Vec::new(),
        };
        for _ in 0..count {
            workers.spawn();
        }
        for (_, worker) in &workers.running {
            worker.wait_ready(WAIT);
        }
        workers
    }

    /// The workers killed so far.
    fn killed(&self) -> BTreeSet<usize> {
        self.kill_times.iter().map(|(n, _)| *n).collect()
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
        self.running[slot].1.kill();
        self.kill_times.push((n, now_micros()));
        self.running.remove(slot);
        self.spawn();
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

/// Every kill landed on work begun: each victim gave up at least one node.
/// Prints how long after each kill its items were delivered again.
fn assert_kills_hurt(workers: &Workers, attribution: &crate::support::tally::Attribution) {
    for (victim, at) in &workers.kill_times {
        let again: Vec<u64> = attribution
            .redelivered
            .iter()
            .filter(|r| r.worker == *victim)
            .map(|r| r.again_at_micros.saturating_sub(*at) / 1000)
            .collect();
        println!("worker {victim}: its items delivered again {again:?} ms after the kill");
        let given_up = attribution.given_up.get(victim).map_or(0, BTreeSet::len);
        assert!(
            given_up >= 1,
            "killed worker {victim} gave up no node: the kill missed its window"
        );
    }
}

#[test]
fn only_killed_lock_safe_consumers_deliver_twice_at_most_a_window_each_across_restarts_and_cuts() {
    let mut server = TestingServer::start().unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).unwrap();
    let (queue, locks) = (unique_path("lose-nothing"), unique_path("lose-nothing-locks"));
    let dir = work_dir("lose-nothing");
    let leases = LeaseSampler::start(&server.connect_string(), &locks);
    let config = worker_config(&proxy.connect_string(), &queue, &locks, Duration::from_secs(3));
    let mut workers = Workers::start(config, &dir, 3);
    let producer = Producer::start(&server.connect_string(), &queue, 400, Duration::from_millis(1));

    wait_delivered(&dir, 40);
    workers.kill_at_full_window(0, &leases);
    wait_delivered(&dir, 100);
    server.restart().unwrap();
    wait_delivered(&dir, 160);
    proxy.cut();
    wait_delivered(&dir, 220);
    workers.kill_at_full_window(0, &leases);

    let produced = producer.join();
    let verify = client_of(&server.connect_string());
    let tally = drain(&verify, &queue, &locks, &dir, &produced.items, WAIT);
    let attribution = assert_duplicates_owed(&tally, &produced, WINDOW, &workers.killed());
    assert_kills_hurt(&workers, &attribution);
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
    let mut workers = Workers::start(config, &dir, 2);
    let mix = Mix {
        records: RECORDS,
        priority: false,
        seed: 7,
    };
    let producer = Producer::start_gated(&server.connect_string(), &queue, 400, Duration::ZERO, None, mix);

    wait_delivered(&dir, 40);
    workers.kill_at_full_window(0, &leases);
    wait_delivered(&dir, 150);
    workers.kill_at_full_window(1, &leases);

    let produced = producer.join();
    let verify = client_of(&server.connect_string());
    let tally = drain(&verify, &queue, &locks, &dir, &produced.items, WAIT);
    let attribution = assert_duplicates_owed(&tally, &produced, WINDOW, &workers.killed());
    assert_kills_hurt(&workers, &attribution);
    // The bound is in nodes: in items it is a window of nodes' records.
    for victim in &workers.killed() {
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
fn plain_consumers_lose_at_most_what_a_killed_one_claimed_and_deliver_twice_only_after_an_ambiguous_claim() {
    let mut server = TestingServer::start().unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).unwrap();
    let queue = unique_path("plain-at-most-once");
    let dir = work_dir("plain-at-most-once");
    // No lock path: a plain consumer, one thread, claiming a window ahead.
    let mut config = worker_config(&proxy.connect_string(), &queue, "", Duration::from_secs(3));
    config.delay = Duration::from_millis(80);
    config.threads = 1;
    // The first victim consumes alone, so its window is full when it dies:
    // no other consumer claims the items after its own.
    let mut workers = vec![Worker::spawn(&config, &dir, 0)];
    workers[0].wait_ready(WAIT);
    let gate = Gate {
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
    let mut kills = 0;

    wait_delivered(&dir, 30);
    wait_mid_item(&dir, 0, config.delay);
    workers[0].kill();
    kills += 1;
    workers = (1..4).map(|n| Worker::spawn(&config, &dir, n)).collect();
    wait_delivered(&dir, 90);
    server.restart().unwrap();
    wait_delivered(&dir, 140);
    proxy.cut();
    wait_delivered(&dir, 190);
    wait_mid_item(&dir, 2, config.delay);
    workers[1].kill();
    kills += 1;
    workers[1] = Worker::spawn(&config, &dir, 4);

    let produced = producer.join();
    let verify = client_of(&server.connect_string());
    // Lost items never come: wait for an empty queue and a quiet tally.
    let deadline = Instant::now() + WAIT;
    let mut last = (usize::MAX, Instant::now());
    let tally = loop {
        let tally = Tally::read(&dir);
        let empty = verify.get_children(&queue).is_ok_and(|(c, _)| c.is_empty());
        let delivered = tally.delivered.values().sum::<usize>();
        if delivered != last.0 {
            last = (delivered, Instant::now());
        } else if empty && last.1.elapsed() > Duration::from_secs(1) {
            break tally;
        }
        assert!(Instant::now() < deadline, "the queue did not drain: {tally:?}");
        thread::sleep(Duration::from_millis(50));
    };
    let lost = produced.items.len() - tally.distinct_of(&produced.items);
    let attribution = tally.attribute();
    println!(
        "{} items, {lost} lost in {kills} kills of a {WINDOW}-item window, {} deliveries again ({} after an \
         ambiguous claim), {} items stored twice (at most {})",
        produced.items.len(),
        attribution.redeliveries,
        attribution.ambiguous_claims,
        attribution.stored_twice,
        produced.may_store_twice()
    );
    // A victim had begun one item (recorded) and claimed the rest of its
    // window (the lone first victim a full one): those are lost, and only those.
    assert!(
        lost <= WINDOW * kills,
        "{lost} lost, more than {kills} windows: {tally:?}"
    );
    assert!(
        lost >= 1,
        "nothing lost in {kills} kills: no kill landed on a claimed window"
    );
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
    let mut workers = Workers::start(config, &dir, 2);
    let producer = Producer::start(&cluster.connect_string(), &queue, 250, Duration::from_millis(1));

    wait_delivered(&dir, 40);
    let leader = cluster.wait_for_leader(Duration::from_secs(60)).expect("a leader");
    cluster.kill(leader).unwrap();
    wait_delivered(&dir, 90);
    workers.kill_at_full_window(0, &leases);
    wait_delivered(&dir, 140);
    cluster.restart(leader).unwrap();

    let produced = producer.join();
    let verify = client_of(&cluster.connect_string());
    let tally = drain(&verify, &queue, &locks, &dir, &produced.items, WAIT);
    let attribution = assert_duplicates_owed(&tally, &produced, WINDOW, &workers.killed());
    assert_kills_hurt(&workers, &attribution);
    assert!(leases.stop().most <= WINDOW);
    let _ = std::fs::remove_dir_all(&dir);
}
