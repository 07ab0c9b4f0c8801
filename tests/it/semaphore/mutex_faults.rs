//! `SemaphoreMutex` under faults: never two hold through a cut, a
//! partition past the session and a server restart mid-hold; a lost create
//! reply leaves no node behind; the fencing token grows across the lease
//! container reaped and created again.

use std::time::Duration;

use zk_queue::testing::{FaultProxy, Request, TestingServer};
use zk_queue::{recipes::SemaphoreMutex, ZkClient};

use super::{leases_and_locks, nothing_left, WAIT};
use crate::support::server::{shared_connect_string, unique_path};
use crate::support::{self, client, client_of, contention, eventually};

/// A semaphore mutex at `path` for `client`.
fn semaphore_mutex(client: &ZkClient, path: &str) -> SemaphoreMutex {
    SemaphoreMutex::new(client, path).unwrap()
}

#[test]
fn under_a_cut_a_partition_past_the_session_and_a_server_restart_mid_hold_no_two_semaphore_mutex_holders_ever_hold() {
    contention::one_holder_under_faults(
        |board, ledger, n, client, hold| {
            let mutex = semaphore_mutex(client, "/semaphore-mutex");
            board.take_turns(
                n,
                hold,
                ledger,
                |wait| mutex.lock_timeout(wait),
                |guard| guard.is_held(),
            );
        },
        |admin| nothing_left(admin, "/semaphore-mutex"),
    );
}

/// Locks through a client whose next `times` create replies are lost, and
/// checks that the lock is held once, by one lease node, and that nothing
/// is left once it is let go.
fn lock_losing_create_replies(name: &str, times: u32) {
    let proxy = FaultProxy::start(&shared_connect_string()).unwrap();
    let lossy = support::proxied_client(&proxy);
    let path = unique_path(name);
    let admin = client();
    let lossy_mutex = semaphore_mutex(&lossy, &path);
    // The path and its count record exist, so the first create of the
    // lock is its own.
    drop(semaphore_mutex(&admin, &path).lock().unwrap());
    proxy.drop_replies_to(Request::Create, times);
    let guard = lossy_mutex.lock_timeout(WAIT).unwrap().expect("held");
    assert!(!proxy.dropping_reply(), "the faults were injected");
    let ours = guard.node().rsplit('/').next().unwrap().to_owned();
    eventually(WAIT, "one lease is left, the one held, and no lock node", || {
        leases_and_locks(&admin, &path) == (vec![ours.clone()], vec![])
    });
    assert!(guard.is_held());
    let other = semaphore_mutex(&admin, &path);
    assert!(other.try_lock().unwrap().is_none(), "held once, by the lossy client");
    drop(guard);
    eventually(WAIT, "no node is left", || nothing_left(&admin, &path));
    assert!(other.try_lock().unwrap().is_some(), "free once let go");
}

#[test]
fn a_semaphore_mutex_create_whose_reply_was_lost_leaves_no_node_behind() {
    lock_losing_create_replies("semaphore-mutex-lost-create", 1);
}

#[test]
fn semaphore_mutex_creates_whose_replies_were_lost_on_the_slow_way_too_leave_no_node_behind() {
    lock_losing_create_replies("semaphore-mutex-lost-creates", 3);
}

#[test]
fn a_semaphore_mutex_s_fencing_token_grows_across_its_containers_reaped_and_created_again() {
    let server = TestingServer::builder()
        .container_check_interval(Duration::from_millis(100))
        .start()
        .unwrap();
    let client = client_of(&server.connect_string());
    let mutex = semaphore_mutex(&client, "/semaphore-mutex");
    let mut tokens = Vec::new();
    for round in 0..3 {
        let guard = mutex.lock().unwrap();
        assert!(
            guard.node().ends_with("-lease-0000000000"),
            "round {round}: the sequences started over: {}",
            guard.node()
        );
        tokens.push(guard.token());
        drop(guard);
        // Empty, the leases container is reaped by the server.
        eventually(WAIT, "the leases container is reaped", || {
            client.exists("/semaphore-mutex/leases").unwrap().is_none()
        });
    }
    assert!(tokens.windows(2).all(|w| w[0] < w[1]), "tokens only grow: {tokens:?}");
}
