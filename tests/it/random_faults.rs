//! A seeded, repeatable run of random faults under a produce/consume
//! workload of unique items, consumed by lock-safe consumer processes.
//!
//! Each round waits for some progress, then injects one fault: `kill -9` a
//! consumer process (and start a new one), restart the server, cut the
//! consumers' connections, blackhole them for less or more than the session
//! timeout, or drop the reply to the next request, lock create or
//! acknowledge multi. Then everything is healed, the queue drained, and the
//! invariants checked: no item lost, duplicates within the documented bound,
//! no lock left.
//!
//! The long version is ignored; run it with
//! `ZKQ_FAULT_SEED=<seed> ZKQ_FAULT_ROUNDS=<rounds> cargo test --all-features --test it
//! random_faults::long -- --ignored --nocapture`.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use zk_queue::testing::{FaultProxy, Request, TestingServer};

use crate::guarantees::{wait_finished, work_dir};
use crate::support::client_of;
use crate::support::server::unique_path;
use crate::support::worker::{Worker, WorkerConfig};
use crate::support::workload::{drain, duplicate_bound, Producer, SplitMix64};

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
    Cut,
    ShortBlackhole,
    LongBlackhole,
    DropNextReply,
    DropCreateReply,
    DropMultiReply,
}

const FAULTS: [Fault; 8] = [
    Fault::KillConsumer,
    Fault::RestartServer,
    Fault::Cut,
    Fault::ShortBlackhole,
    Fault::LongBlackhole,
    Fault::DropNextReply,
    Fault::DropCreateReply,
    Fault::DropMultiReply,
];

/// What a run did; printed through `Debug`.
#[derive(Debug)]
#[allow(dead_code)]
struct Report {
    seed: u64,
    rounds: usize,
    injected: BTreeMap<String, usize>,
    items: usize,
    lost: usize,
    duplicates: usize,
    bound: usize,
    sessions_lost: usize,
    elapsed: Duration,
}

fn run(seed: u64, rounds: usize) -> Report {
    println!("random faults: seed {seed}, {rounds} rounds");
    let started = Instant::now();
    let mut rng = SplitMix64::new(seed);
    let mut server = TestingServer::start().unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).unwrap();
    let (queue, locks) = (unique_path("random"), unique_path("random-locks"));
    let dir = work_dir("random");
    let config = WorkerConfig {
        connect: proxy.connect_string(),
        queue: queue.clone(),
        locks: locks.clone(),
        delay: Duration::from_millis(10),
        claim_window: WINDOW,
        session_timeout: SESSION,
    };
    let mut spawned = 0;
    let mut workers: Vec<Worker> = (0..WORKERS)
        .map(|_| {
            spawned += 1;
            Worker::spawn(&config, &dir, spawned)
        })
        .collect();
    for worker in &workers {
        worker.wait_ready(Duration::from_secs(60));
    }
    let items = (rounds + 2) * PER_ROUND;
    let producer = Producer::start(&server.connect_string(), &queue, items, Duration::from_millis(5));
    let mut injected: BTreeMap<String, usize> = BTreeMap::new();
    let mut kills = 0;
    for round in 0..rounds {
        wait_finished(&dir, (round + 1) * PER_ROUND);
        let fault = FAULTS[usize::try_from(rng.below(FAULTS.len() as u64)).unwrap()];
        let mut fired = true;
        match fault {
            Fault::KillConsumer => {
                let victim = usize::try_from(rng.below(WORKERS as u64)).unwrap();
                workers[victim].kill();
                kills += 1;
                spawned += 1;
                workers[victim] = Worker::spawn(&config, &dir, spawned);
            }
            Fault::RestartServer => server.restart().unwrap(),
            Fault::Cut => proxy.cut(),
            Fault::ShortBlackhole | Fault::LongBlackhole => {
                proxy.blackhole();
                // Less than the session timeout, or long enough to expire it.
                std::thread::sleep(if fault == Fault::ShortBlackhole {
                    SESSION / 4
                } else {
                    SESSION + Duration::from_secs(1)
                });
                proxy.heal();
            }
            Fault::DropNextReply | Fault::DropCreateReply | Fault::DropMultiReply => {
                match fault {
                    Fault::DropNextReply => proxy.drop_next_reply(),
                    Fault::DropCreateReply => proxy.drop_reply_to(Request::Create),
                    _ => proxy.drop_reply_to(Request::Multi),
                }
                // The workload sends the request soon; if not, the fault is withdrawn.
                let deadline = Instant::now() + Duration::from_secs(5);
                while proxy.dropping_reply() && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(10));
                }
                fired = !proxy.dropping_reply();
                proxy.heal();
            }
        }
        let name = if fired {
            format!("{fault:?}")
        } else {
            format!("{fault:?} (not fired)")
        };
        println!("round {round}: {name}");
        *injected.entry(name).or_default() += 1;
    }
    proxy.heal();
    let produced = producer.join();
    let verify = client_of(&server.connect_string());
    let tally = drain(&verify, &queue, &locks, &dir, &produced.items, Duration::from_secs(120));
    let bound = duplicate_bound(WINDOW, kills, tally.sessions_lost, produced.ambiguous);
    let report = Report {
        seed,
        rounds,
        injected,
        items: produced.items.len(),
        lost: produced.items.len() - tally.distinct_of(&produced.items),
        duplicates: tally.duplicates(),
        bound,
        sessions_lost: tally.sessions_lost,
        elapsed: started.elapsed(),
    };
    println!("random faults: {report:?}");
    assert_eq!(report.lost, 0, "{report:?}");
    assert!(report.duplicates <= report.bound, "{report:?}; {tally:?}");
    drop(workers);
    let _ = std::fs::remove_dir_all(&dir);
    report
}

fn env_number(name: &str) -> Option<u64> {
    std::env::var(name)
        .ok()
        .map(|v| v.trim().parse().unwrap_or_else(|e| panic!("{name}={v}: {e}")))
}

#[test]
fn random_faults_lose_no_item_and_leave_no_lock() {
    let report = run(env_number("ZKQ_FAULT_SEED").unwrap_or(20_240_601), 4);
    assert_eq!(report.rounds, 4);
}

#[test]
#[ignore = "long: ZKQ_FAULT_SEED and ZKQ_FAULT_ROUNDS choose the run"]
fn long() {
    let seed = env_number("ZKQ_FAULT_SEED").unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_secs())
    });
    let rounds = env_number("ZKQ_FAULT_ROUNDS").map_or(30, |r| usize::try_from(r).unwrap());
    run(seed, rounds);
}
