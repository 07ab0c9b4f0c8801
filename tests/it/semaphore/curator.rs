//! One path shared with Curator's `InterProcessSemaphoreV2` (the Java
//! peer's `curator-semaphore` mode) and `InterProcessSemaphoreMutex`
//! (`curator-semaphore-mutex`): the same nodes, so Rust and Java
//! participants together never hold more leases than there are.

use std::thread;
use std::time::{Duration, Instant};

use zk_queue::recipes::{Mutex, SemaphoreMutex};
use zk_queue::testing::FaultProxy;

use super::{nothing_left, semaphore, take_turns, Ledger, WAIT};
use crate::support::expiry::stop_counting_once_partitioned;
use crate::support::java::PeerProcess;
use crate::support::ledger::ready;
use crate::support::server::{shared_connect_string, unique_path};
use crate::support::{client, eventually, short_session_client, Bound};

/// How long each participant holds each time.
const HOLD: Duration = Duration::from_millis(20);

/// A Curator semaphore participant `id` of `max_leases` on `path` that
/// holds a lease `rounds` times, writing to `ledger`, once it is ready.
fn curator_semaphore(path: &str, max_leases: usize, id: &str, rounds: usize, ledger: &Ledger) -> PeerProcess {
    let command = ledger
        .peer_command("curator-semaphore", path, rounds, id, HOLD)
        .property("peer.maxLeases", max_leases);
    ready(command, WAIT)
}

#[test]
fn rust_and_curator_participants_never_hold_more_leases_than_there_are() {
    let path = unique_path("semaphore-curator");
    let ledger = Ledger::new();
    let java: Vec<PeerProcess> = ["java-a", "java-b", "java-c"]
        .iter()
        .map(|id| curator_semaphore(&path, 2, id, 10, &ledger))
        .collect();
    thread::scope(|s| {
        for id in ["rust-a", "rust-b", "rust-c"] {
            let (path, ledger) = (&path, &ledger);
            s.spawn(move || take_turns(&semaphore(&client(), path, 2), id, 10, HOLD, ledger));
        }
    });
    for peer in java {
        peer.wait().unwrap();
    }
    assert_eq!(ledger.check(2), (60, 2));
    let entries = ledger.entries();
    assert!(
        entries.iter().any(|e| e.starts_with("java")) && entries.iter().any(|e| e.starts_with("rust")),
        "both languages held"
    );
    assert!(nothing_left(&client(), &path), "every node is gone");
}

#[test]
fn a_rust_semaphore_mutex_and_curator_s_never_hold_at_once() {
    let path = unique_path("semaphore-mutex-curator");
    let ledger = Ledger::new();
    let java: Vec<PeerProcess> = ["java-a", "java-b"]
        .iter()
        .map(|id| ledger.peer("curator-semaphore-mutex", &path, 10, id, HOLD, WAIT))
        .collect();
    thread::scope(|s| {
        for id in ["rust-a", "rust-b"] {
            let (path, ledger) = (&path, &ledger);
            s.spawn(move || {
                let mutex = SemaphoreMutex::new(&client(), path).unwrap();
                for round in 0..10 {
                    let guard = mutex.lock().unwrap();
                    let who = format!("{id}.{round}");
                    ledger.enter(&who);
                    assert!(guard.is_held());
                    thread::sleep(HOLD);
                    ledger.exit(&who);
                }
            });
        }
    });
    for peer in java {
        peer.wait().unwrap();
    }
    assert_eq!(ledger.check(1), (40, 1));
    assert!(nothing_left(&client(), &path), "every node is gone");
}

#[test]
fn a_curator_participant_waiting_for_a_lease_is_not_passed_over_by_rust_participants() {
    let path = unique_path("semaphore-curator-waiter");
    let ledger = Ledger::new();
    let admin = client();
    let first = semaphore(&admin, &path, 1);
    let held = first.acquire().unwrap();
    let java = curator_semaphore(&path, 1, "java", 1, &ledger);
    eventually(WAIT, "the Curator participant waits with its lease", || {
        super::leases_and_locks(&admin, &path).0.len() == 2
    });
    let other = client();
    let rust = semaphore(&other, &path, 1);
    assert!(rust.try_acquire().unwrap().is_none(), "a lease is held and one waits");
    assert_eq!(
        super::leases_and_locks(&admin, &path).0.len(),
        2,
        "the refused try left no lease"
    );
    thread::scope(|s| {
        let waiting = s.spawn(|| take_turns(&rust, "rust", 1, HOLD, &ledger));
        eventually(WAIT, "the Rust participant waits in the lock's line", || {
            super::leases_and_locks(&admin, &path).1.len() == 2
        });
        drop(held);
        waiting.join().unwrap();
    });
    java.wait().unwrap();
    assert_eq!(ledger.check(1), (2, 1));
    assert_eq!(ledger.entries(), ["java.0", "rust.0"], "the waiter first");
    assert!(nothing_left(&admin, &path));
}

#[test]
fn a_rust_participant_finding_a_lease_free_while_a_curator_participant_is_in_the_line_is_served_after_it() {
    let path = unique_path("semaphore-curator-line");
    let ledger = Ledger::new();
    let admin = client();
    // The path and its count record.
    drop(semaphore(&admin, &path, 1).acquire().unwrap());
    // A participant taking a lease holds the semaphore's lock: the
    // Curator participant waits in the line behind it, every lease free.
    let lock = Mutex::builder(&admin, &format!("{path}/locks")).build().unwrap();
    let taking = lock.lock().unwrap();
    let java = curator_semaphore(&path, 1, "java", 1, &ledger);
    eventually(WAIT, "the Curator participant is in the line", || {
        super::leases_and_locks(&admin, &path).1.len() == 2
    });
    let other = client();
    let rust = semaphore(&other, &path, 1);
    assert!(
        super::leases_and_locks(&admin, &path).0.is_empty(),
        "every lease is free"
    );
    assert!(
        rust.try_acquire().unwrap().is_none(),
        "a free lease is not taken past the line"
    );
    assert!(
        super::leases_and_locks(&admin, &path).0.is_empty(),
        "the refused try left no lease"
    );
    thread::scope(|s| {
        let waiting = s.spawn(|| take_turns(&rust, "rust", 1, HOLD, &ledger));
        eventually(WAIT, "the Rust participant waits in the line", || {
            super::leases_and_locks(&admin, &path).1.len() == 3
        });
        drop(taking);
        waiting.join().unwrap();
    });
    java.wait().unwrap();
    assert_eq!(ledger.check(1), (2, 1));
    assert_eq!(
        ledger.entries(),
        ["java.0", "rust.0"],
        "the participant in the line first"
    );
    eventually(WAIT, "every node is gone", || nothing_left(&admin, &path));
}

#[test]
fn a_rust_holder_partitioned_past_its_session_stops_counting_before_a_curator_participant_holds() {
    let path = unique_path("semaphore-curator-outage");
    let ledger = Ledger::new();
    let admin = client();
    let proxy = FaultProxy::start(&shared_connect_string()).unwrap();
    let short = short_session_client(&proxy.connect_string());
    let ours = semaphore(&short, &path, 1);
    let lease = ours.acquire().unwrap();
    ledger.enter("rust");
    let java = curator_semaphore(&path, 1, "java", 1, &ledger);
    eventually(WAIT, "the Curator participant waits with its lease", || {
        super::leases_and_locks(&admin, &path).0.len() == 2
    });
    // A partition longer than our 2 s session: the server expires it and
    // the Curator participant's lease counts one.
    stop_counting_once_partitioned(&proxy, "rust", &ledger, || lease.is_held());
    java.wait().unwrap();
    proxy.heal();
    assert_eq!(ledger.check(1), (2, 1), "never ours beside Curator's");
    assert_eq!(ledger.entries(), ["rust", "java.0"]);
    drop(lease);
    eventually(WAIT, "every node is gone", || nothing_left(&admin, &path));
}

#[test]
fn a_killed_curator_semaphore_mutex_holder_s_lease_goes_with_its_session_and_ours_holds() {
    const KILLED_SESSION: Duration = Duration::from_secs(2);
    let path = unique_path("semaphore-mutex-killed");
    let ledger = Ledger::new();
    let command = ledger
        .peer_command("curator-semaphore-mutex", &path, 1, "java", Duration::from_secs(3600))
        .property("peer.sessionTimeoutMs", KILLED_SESSION.as_millis());
    let holder = command.timeout(WAIT * 2).spawn().unwrap();
    holder.wait_for_stderr_line("held 1", WAIT).unwrap();
    let client = client();
    let next = SemaphoreMutex::new(&client, &path).unwrap();
    thread::scope(|s| {
        let waiting = s.spawn(|| {
            let _guard = next.lock().unwrap();
            Instant::now()
        });
        eventually(WAIT, "ours waits with its lease", || {
            super::leases_and_locks(&client, &path).0.len() == 2
        });
        let killed = Instant::now();
        drop(holder); // SIGKILL
        let took = waiting.join().unwrap().duration_since(killed);
        eprintln!("ours held {took:?} after the kill");
        Bound::of(KILLED_SESSION + Duration::from_secs(1)).check("holding after the kill", took);
    });
    eventually(WAIT, "no node is left", || nothing_left(&client, &path));
}
