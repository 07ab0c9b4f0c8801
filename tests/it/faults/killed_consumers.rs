//! The lock-safe delivery guarantees with consumer processes killed with
//! `kill -9`, among server restarts, cut connections and an ensemble losing
//! its leader: lock-safe consumers lose nothing, plain consumers lose at most
//! what they claimed.

use std::thread;
use std::time::{Duration, Instant};

use zk_queue::testing::{FaultProxy, TestingCluster, TestingServer};

use super::{wait_finished, work_dir, WAIT};
use crate::support::client_of;
use crate::support::server::unique_path;
use crate::support::worker::{self, Tally, Worker, WorkerConfig};
use crate::support::workload::{assert_duplicates_within, drain, duplicate_bound, Producer};

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

fn worker_config(connect: &str, queue: &str, locks: &str, session_timeout: Duration) -> WorkerConfig {
    WorkerConfig {
        connect: connect.to_owned(),
        queue: queue.to_owned(),
        locks: locks.to_owned(),
        delay: Duration::from_millis(15),
        claim_window: WINDOW,
        session_timeout,
    }
}

fn start_workers(config: &WorkerConfig, dir: &std::path::Path, count: usize) -> Vec<Worker> {
    let workers: Vec<Worker> = (0..count).map(|n| Worker::spawn(config, dir, n)).collect();
    for worker in &workers {
        worker.wait_ready(WAIT);
    }
    workers
}

#[test]
fn lock_safe_consumers_lose_nothing_across_kills_restarts_and_cuts() {
    let mut server = TestingServer::start().unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).unwrap();
    let (queue, locks) = (unique_path("lose-nothing"), unique_path("lose-nothing-locks"));
    let dir = work_dir("lose-nothing");
    let config = worker_config(&proxy.connect_string(), &queue, &locks, Duration::from_secs(3));
    let mut workers = start_workers(&config, &dir, 3);
    let producer = Producer::start(&server.connect_string(), &queue, 300, Duration::from_millis(10));
    let mut kills = 0;

    wait_finished(&dir, 40);
    workers[0].kill();
    kills += 1;
    workers[0] = Worker::spawn(&config, &dir, 3);
    wait_finished(&dir, 90);
    server.restart().unwrap();
    wait_finished(&dir, 140);
    proxy.cut();
    wait_finished(&dir, 190);
    workers[1].kill();
    kills += 1;
    workers[1] = Worker::spawn(&config, &dir, 4);

    let produced = producer.join();
    let verify = client_of(&server.connect_string());
    let tally = drain(&verify, &queue, &locks, &dir, &produced.items, WAIT);
    let bound = duplicate_bound(WINDOW, kills, tally.sessions_lost, produced.sent_again());
    assert_duplicates_within(&tally, &produced, bound);
    drop(workers);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn plain_consumers_deliver_at_most_once_and_a_kill_loses_at_most_what_it_claimed() {
    let mut server = TestingServer::start().unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).unwrap();
    let queue = unique_path("plain-at-most-once");
    let dir = work_dir("plain-at-most-once");
    // No lock path: a plain consumer.
    let mut config = worker_config(&proxy.connect_string(), &queue, "", Duration::from_secs(3));
    // Slower than the producer, so a kill lands on a full window.
    config.delay = Duration::from_millis(50);
    let mut workers = start_workers(&config, &dir, 3);
    let producer = Producer::start(&server.connect_string(), &queue, 300, Duration::from_millis(10));
    let (mut kills, mut connection_faults) = (0, 0);

    wait_finished(&dir, 40);
    workers[0].kill();
    kills += 1;
    workers[0] = Worker::spawn(&config, &dir, 3);
    wait_finished(&dir, 90);
    server.restart().unwrap();
    connection_faults += 1;
    wait_finished(&dir, 140);
    proxy.cut();
    connection_faults += 1;
    wait_finished(&dir, 190);
    workers[1].kill();
    kills += 1;
    workers[1] = Worker::spawn(&config, &dir, 4);

    let produced = producer.join();
    let verify = client_of(&server.connect_string());
    // Lost items never finish: wait for an empty queue and a quiet tally.
    let deadline = Instant::now() + WAIT;
    let mut last = (usize::MAX, Instant::now());
    let tally = loop {
        let tally = Tally::read(&dir);
        let empty = verify.get_children(&queue).is_ok_and(|(c, _)| c.is_empty());
        let finished = tally.finished.values().sum::<usize>();
        if finished != last.0 {
            last = (finished, Instant::now());
        } else if empty && last.1.elapsed() > Duration::from_secs(1) {
            break tally;
        }
        assert!(Instant::now() < deadline, "the queue did not drain: {tally:?}");
        thread::sleep(Duration::from_millis(50));
    };
    let lost = produced.items.len() - tally.distinct_of(&produced.items);
    // A killed consumer loses the items it claimed ahead and the one it was
    // processing; a lost claiming delete's reply may deliver one item twice.
    let lost_bound = (WINDOW + 1) * kills;
    let twice_bound = WINDOW * connection_faults + produced.sent_again();
    println!(
        "{} items, {lost} lost (bound {lost_bound}), {} duplicates (bound {twice_bound})",
        produced.items.len(),
        tally.duplicates()
    );
    assert!(lost <= lost_bound, "{lost} lost, more than {lost_bound}: {tally:?}");
    assert!(
        tally.duplicates() <= twice_bound,
        "{} duplicates, more than {twice_bound}",
        tally.duplicates()
    );
    drop(workers);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn lock_safe_consumers_lose_nothing_when_the_ensemble_loses_its_leader() {
    let cluster = TestingCluster::start(3).unwrap();
    let (queue, locks) = (unique_path("ensemble"), unique_path("ensemble-locks"));
    let dir = work_dir("ensemble");
    let config = worker_config(&cluster.connect_string(), &queue, &locks, Duration::from_secs(6));
    let mut workers = start_workers(&config, &dir, 2);
    let producer = Producer::start(&cluster.connect_string(), &queue, 200, Duration::from_millis(10));

    wait_finished(&dir, 40);
    let leader = cluster.wait_for_leader(Duration::from_secs(60)).expect("a leader");
    cluster.kill(leader).unwrap();
    wait_finished(&dir, 90);
    workers[0].kill();
    workers[0] = Worker::spawn(&config, &dir, 2);
    wait_finished(&dir, 140);
    cluster.restart(leader).unwrap();

    let produced = producer.join();
    let verify = client_of(&cluster.connect_string());
    let tally = drain(&verify, &queue, &locks, &dir, &produced.items, WAIT);
    let bound = duplicate_bound(WINDOW, 1, tally.sessions_lost, produced.sent_again());
    assert_duplicates_within(&tally, &produced, bound);
    drop(workers);
    let _ = std::fs::remove_dir_all(&dir);
}
