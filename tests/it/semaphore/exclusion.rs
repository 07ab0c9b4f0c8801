//! The semaphore among Rust clients: never more holders than leases,
//! growing fencing tokens (also across its containers reaped), several leases at once, the lease count recorded
//! at the path, and the semaphore mutex's refused reentry.

use std::sync::Mutex as StdMutex;
use std::thread;
use std::time::{Duration, Instant};

use zk_queue::testing::TestingServer;
use zk_queue::{recipes::SemaphoreMutex, Error};

use super::{leases_and_locks, nothing_left, semaphore, take_turns, Ledger, WAIT};
use crate::support::server::unique_path;
use crate::support::{client, client_of, eventually};

/// How long each holder holds.
const HOLD: Duration = Duration::from_millis(20);

#[test]
fn clients_never_hold_more_leases_than_max_leases_by_a_shared_ledger_and_all_finish() {
    let path = unique_path("semaphore-exclusion");
    let ledger = Ledger::new();
    thread::scope(|s| {
        for id in ["a", "b", "c", "d", "e", "f"] {
            let (path, ledger) = (&path, &ledger);
            s.spawn(move || take_turns(&semaphore(&client(), path, 3), id, 10, HOLD, ledger));
        }
    });
    // The ledger fails if ever more than three held at once. Whether three
    // happened to hold together depends on the scheduling: every lease held
    // at once is arranged in `try_acquire_gives_none_while_every_lease_is_held_and_leaves_no_node`.
    let (entries, most) = ledger.check(3);
    assert_eq!(entries, 60, "60 holds, at most {most} at once");
    assert!(nothing_left(&client(), &path), "every node is gone");
}

#[test]
fn fencing_tokens_grow_across_holders() {
    let path = unique_path("semaphore-tokens");
    let tokens = StdMutex::new(Vec::new());
    thread::scope(|s| {
        for _ in 0..3 {
            let (path, tokens) = (&path, &tokens);
            s.spawn(move || {
                let semaphore = semaphore(&client(), path, 1);
                for _ in 0..5 {
                    let lease = semaphore.acquire().unwrap();
                    // One holder at a time: the order of these pushes is
                    // the order of the holds.
                    tokens.lock().unwrap().push(lease.token());
                    thread::sleep(Duration::from_millis(5));
                }
            });
        }
    });
    let tokens = tokens.into_inner().unwrap();
    assert_eq!(tokens.len(), 15);
    assert!(tokens.windows(2).all(|w| w[0] < w[1]), "{tokens:?}");
}

#[test]
fn try_acquire_gives_none_while_every_lease_is_held_and_leaves_no_node() {
    let path = unique_path("semaphore-try");
    let (a, b) = (client(), client());
    let holder = semaphore(&a, &path, 2);
    let held = holder.acquire_many(2).unwrap();
    let other = semaphore(&b, &path, 2);
    assert!(other.try_acquire().unwrap().is_none());
    assert!(other.try_acquire_many(1).unwrap().is_none());
    let (leases, locks) = leases_and_locks(&a, &path);
    assert_eq!(
        (leases.len(), locks.len()),
        (2, 0),
        "only the holder's leases: {leases:?} {locks:?}"
    );
    drop(held);
    let lease = other.try_acquire().unwrap().expect("a lease is free");
    assert!(lease.is_held());
    drop(lease);
    assert!(nothing_left(&a, &path));
}

#[test]
fn acquire_timeout_gives_none_by_its_deadline_and_holds_once_a_lease_is_returned() {
    let path = unique_path("semaphore-timeout");
    let (a, b) = (client(), client());
    let (holder, waiter) = (semaphore(&a, &path, 1), semaphore(&b, &path, 1));
    let held = holder.acquire().unwrap();
    let started = Instant::now();
    assert!(waiter.acquire_timeout(Duration::from_millis(300)).unwrap().is_none());
    assert!(started.elapsed() >= Duration::from_millis(300));
    eventually(WAIT, "the waiter's lease and lock node are gone", || {
        leases_and_locks(&a, &path) == (vec![held.node().rsplit('/').next().unwrap().to_owned()], vec![])
    });
    thread::scope(|s| {
        let waiting = s.spawn(|| waiter.acquire_timeout(WAIT).unwrap().map(|lease| lease.token()));
        eventually(WAIT, "the waiter waits with its lease", || {
            leases_and_locks(&a, &path).0.len() == 2
        });
        let token = held.token();
        drop(held);
        assert!(waiting.join().unwrap().expect("held") > token);
    });
    assert!(nothing_left(&a, &path));
}

#[test]
fn acquire_many_takes_every_lease_asked_and_refuses_more_than_there_are() {
    let path = unique_path("semaphore-many");
    let client = client();
    let semaphore = semaphore(&client, &path, 3);
    let leases = semaphore.acquire_many(3).unwrap();
    assert_eq!(leases.len(), 3);
    assert!(leases.iter().all(|lease| lease.is_held()));
    assert_eq!(semaphore.participant_nodes().unwrap().len(), 3);
    assert!(semaphore
        .acquire_many_timeout(1, Duration::from_millis(200))
        .unwrap()
        .is_none());
    drop(leases);
    for n in [0, 4] {
        let refused = semaphore.acquire_many(n);
        assert!(matches!(refused, Err(Error::InvalidArgument(_))), "{n}: {refused:?}");
    }
    // The timed-out acquisition's lease and lock node go once its deadline
    // has passed, so in the background, as the waiter's above.
    eventually(WAIT, "every lease and lock node is gone", || {
        nothing_left(&client, &path)
    });
}

#[test]
fn a_participant_with_another_lease_count_than_the_one_recorded_at_the_path_is_refused() {
    let path = unique_path("semaphore-count");
    let (a, b) = (client(), client());
    let three = semaphore(&a, &path, 3);
    let lease = three.acquire().unwrap();
    assert_eq!(a.get_data(&path).unwrap().0, b"max_leases=3", "the count is recorded");
    let five = semaphore(&b, &path, 5);
    for refused in [five.acquire().map(drop), five.try_acquire().map(drop)] {
        assert!(
            matches!(&refused, Err(Error::InvalidArgument(m)) if m.contains('3') && m.contains('5')),
            "{refused:?}"
        );
    }
    assert_eq!(leases_and_locks(&a, &path).0.len(), 1, "the refused created nothing");
    // The same count goes on.
    let also_three = semaphore(&b, &path, 3);
    assert!(also_three.try_acquire().unwrap().is_some());
    drop(lease);
}

#[test]
fn data_at_the_path_that_is_no_count_record_is_left_alone() {
    let path = unique_path("semaphore-foreign-data");
    let client = client();
    client
        .create(&path, b"owned by ops", zk_queue::client::CreateMode::Persistent)
        .unwrap();
    let semaphore = semaphore(&client, &path, 2);
    assert!(semaphore.try_acquire().unwrap().is_some());
    assert_eq!(client.get_data(&path).unwrap().0, b"owned by ops");
}

#[test]
fn a_semaphore_mutex_refuses_the_holding_thread_s_second_lock_and_makes_other_threads_wait() {
    let path = unique_path("semaphore-mutex-reentry");
    let client = client();
    let mutex = SemaphoreMutex::new(&client, &path).unwrap();
    let guard = mutex.lock().unwrap();
    assert!(mutex.is_held_by_current_thread());
    let started = Instant::now();
    for refused in [
        mutex.lock().map(drop),
        mutex.try_lock().map(drop),
        mutex.lock_timeout(WAIT).map(drop),
    ] {
        assert!(matches!(refused, Err(Error::InvalidState(_))), "{refused:?}");
    }
    assert!(started.elapsed() < Duration::from_secs(1), "refused at once");
    thread::scope(|s| {
        let other = s.spawn(|| {
            assert!(mutex.try_lock().unwrap().is_none(), "held by the first thread");
            mutex.lock().unwrap().token()
        });
        eventually(WAIT, "the other thread waits", || {
            leases_and_locks(&client, &path).0.len() == 2
        });
        let token = guard.token();
        drop(guard);
        assert!(other.join().unwrap() > token);
    });
    assert!(!mutex.is_held_by_current_thread());
    let again = mutex.lock().unwrap();
    assert!(again.is_held());
}

#[test]
fn an_uncontended_lease_takes_one_write_and_its_return_one() {
    let path = unique_path("semaphore-requests");
    let client = client();
    let semaphore = semaphore(&client, &path, 2);
    // The first acquisition also checks the lease count and creates the path.
    drop(semaphore.acquire().unwrap());
    let before = client.stats();
    let lease = semaphore.acquire().unwrap();
    let acquired = client.stats();
    drop(lease);
    let returned = client.stats();
    // The create with the listings of the leases and the line, the watch.
    assert_eq!(
        (acquired.create - before.create, acquired.delete - before.delete),
        (1, 0),
        "{before:?} {acquired:?}"
    );
    assert_eq!(acquired.get_children - before.get_children, 2);
    assert_eq!(acquired.get_data - before.get_data, 1);
    assert_eq!(acquired.total() - before.total(), 4);
    assert_eq!(returned.delete - acquired.delete, 1);
    assert_eq!(returned.create, acquired.create);
}

#[test]
fn fencing_tokens_grow_across_the_leases_container_reaped_and_created_again() {
    let server = TestingServer::builder()
        .container_check_interval(Duration::from_millis(100))
        .start()
        .unwrap();
    let client = client_of(&server.connect_string());
    let semaphore = semaphore(&client, "/semaphore", 1);
    let mut tokens = Vec::new();
    for round in 0..3 {
        let lease = semaphore.acquire().unwrap();
        assert!(
            lease.node().ends_with("-lease-0000000000"),
            "round {round}: the sequences started over: {}",
            lease.node()
        );
        tokens.push(lease.token());
        drop(lease);
        // Empty, the leases container is reaped by the server.
        eventually(WAIT, "the leases container is reaped", || {
            client.exists("/semaphore/leases").unwrap().is_none()
        });
    }
    assert!(tokens.windows(2).all(|w| w[0] < w[1]), "tokens only grow: {tokens:?}");
}
