//! What an acquisition waits for: an uncontended lock one round trip (its
//! create with the listing of the lock path, sent together), a waiter one
//! listing after the event of its predecessor's deletion. Each test runs
//! the participant that is timed behind a proxy that delays every
//! forwarded chunk by [`DELAY`], so each round trip it waits for costs at
//! least twice that: one round trip more than the bound is more than the
//! bound plus [`LOAD`], the margin for a loaded machine.

use std::thread;
use std::time::{Duration, Instant};

use zk_queue::testing::{FaultProxy, TestingServer};

use super::{mutex, nodes, WAIT};
use crate::support::server::{shared_connect_string, unique_path};
use crate::support::{client, client_of, eventually, proxied_client, wait_for_watches};

/// The proxy's delay per forwarded chunk, each way.
const DELAY: Duration = Duration::from_millis(300);

/// What a loaded machine may add to a bound: less than a round trip.
const LOAD: Duration = Duration::from_millis(550);

#[test]
fn an_uncontended_lock_waits_for_one_round_trip_its_listing_sent_with_its_create() {
    let path = unique_path("mutex-one-round-trip");
    let admin = client();
    admin.ensure_path(&path).unwrap();
    let proxy = FaultProxy::start(&shared_connect_string()).unwrap();
    let slow = proxied_client(&proxy);
    let lock = mutex(&slow, &path);
    proxy.set_delay(DELAY);

    let started = Instant::now();
    let guard = lock.lock().unwrap();
    let took = started.elapsed();
    eprintln!("an uncontended lock took {took:?} behind a {DELAY:?} link");
    // A create, then a listing, would be two round trips (four delays); a
    // read of its own node after them, three.
    assert!(took < 2 * DELAY + LOAD, "more than one round trip: {took:?}");
    let stats = slow.stats();
    assert_eq!(
        (stats.create, stats.get_children, stats.get_data),
        (1, 1, 1),
        "a create, a listing, and the watch on its own node"
    );
    // The token is the node's creation zxid, as the create's answer told it.
    let (_, stat) = admin.get_data(guard.node()).unwrap();
    assert_eq!(guard.token(), u64::try_from(stat.czxid).unwrap());
    // The watch on its own node, sent without waiting, was set.
    let lost = guard.lost();
    admin.delete(guard.node(), None).unwrap();
    assert_eq!(
        lost.recv_timeout(WAIT),
        Err(crossbeam_channel::RecvTimeoutError::Disconnected),
        "the holder is told its node is gone"
    );
    assert!(!guard.is_held());
}

#[test]
fn a_waiter_holds_one_listing_after_its_predecessor_s_deletion_event() {
    let server = TestingServer::start().unwrap();
    let connect = server.connect_string();
    let path = "/lock";
    let holder_client = client_of(&connect);
    let holder = mutex(&holder_client, path);
    let guard = holder.lock().unwrap();
    let proxy = FaultProxy::start(&connect).unwrap();
    let slow = proxied_client(&proxy);
    let waiter = mutex(&slow, path);
    proxy.set_delay(DELAY);
    thread::scope(|s| {
        let waiting = s.spawn(|| {
            let guard = waiter.lock().unwrap();
            (Instant::now(), guard.token())
        });
        eventually(WAIT, "the waiter joined", || nodes(&holder_client, path).len() == 2);
        // The holder's watch on its own node, and the waiter's on the holder's.
        wait_for_watches(&server, 2);
        let before = slow.stats();
        let released = Instant::now();
        let token = guard.token();
        drop(guard);
        let (held, next_token) = waiting.join().unwrap();
        let took = held - released;
        eprintln!("the waiter held {took:?} after the release began, behind a {DELAY:?} link");
        assert!(next_token > token);
        // The event reaches it after one delay; its listing is one round
        // trip. A read of its own node after the listing would be one more.
        assert!(
            took < 3 * DELAY + LOAD,
            "more than one listing after the event: {took:?}"
        );
        let after = slow.stats();
        assert_eq!(
            (after.get_children - before.get_children, after.create - before.create),
            (1, 0),
            "one listing after the event"
        );
    });
}
