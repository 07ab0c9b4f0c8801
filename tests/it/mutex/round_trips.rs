//! What an acquisition waits for and sends: an uncontended lock one round
//! trip (its create with the listing of the lock path, sent together, and
//! on the handle's first lock its watch on the lock path), and no request
//! per lock for the holder to hear of its node's loss; a waiter behind the
//! first node holds on the event of that node's deletion, with no request.
//! Without persistent watches, a holder watches its own node (one request,
//! not awaited), and a waiter watches its own while it waits, so it too
//! holds on the event. A waiter whose own node was deleted while it waited
//! does not hold with it. A participant that has had to wait drops its
//! watch on the lock path (its events would reach it for every node) and
//! watches its own nodes with a request each. Each timed test runs
//! the participant that is timed behind a proxy that delays every forwarded
//! chunk by [`DELAY`], so each round trip it waits for costs at least twice
//! that: one round trip more than the bound is more than the bound plus
//! [`LOAD`], the margin for a loaded machine.

use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use zk_queue::recipes::Mutex;
use zk_queue::testing::{FaultProxy, TestingServer};
use zk_queue::ZkClient;

use super::{mutex, nodes, WAIT};
use crate::support::server::{shared_connect_string, unique_path};
use crate::support::{client, client_of, eventually, proxied_client, wait_for_watches, watch_count};

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
        (stats.create, stats.get_children, stats.get_data, stats.other),
        (1, 1, 0, 1),
        "a create, a listing and the watch on the lock path, no read of its own node"
    );
    // The token is the node's creation zxid, as the create's answer told it.
    let (_, stat) = admin.get_data(guard.node()).unwrap();
    assert_eq!(guard.token(), u64::try_from(stat.czxid).unwrap());
    // Another cycle sends no other watch.
    drop(guard);
    let before = slow.stats();
    let guard = lock.lock().unwrap();
    drop(guard);
    let after = slow.stats();
    assert_eq!(
        (
            after.create - before.create,
            after.get_children - before.get_children,
            after.get_data - before.get_data,
            after.other - before.other,
            after.delete - before.delete,
        ),
        (1, 1, 0, 0, 1),
        "a cycle: a create, a listing, a delete"
    );
    // The watch on the lock path tells the holder that its node is gone.
    let guard = lock.lock().unwrap();
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
fn a_waiter_behind_the_holder_holds_on_the_event_of_its_deletion_with_no_request() {
    let server = TestingServer::start().unwrap();
    let connect = server.connect_string();
    let path = "/lock";
    let holder_client = client_of(&connect);
    let holder = mutex(&holder_client, path);
    let guard = holder.lock().unwrap();
    // The holder's watch on the lock path, as the server counts it.
    let holder_watches = watch_count(&server);
    let proxy = FaultProxy::start(&connect).unwrap();
    let slow = proxied_client(&proxy);
    let waiter = mutex(&slow, path);
    proxy.set_delay(DELAY);
    thread::scope(|s| {
        let waiting = s.spawn(|| {
            let guard = waiter.lock().unwrap();
            (Instant::now(), guard.token(), slow.stats())
        });
        eventually(WAIT, "the waiter joined", || nodes(&holder_client, path).len() == 2);
        // The waiter's watch on the lock path, and its watch on the holder's node.
        wait_for_watches(&server, 2 * holder_watches + 1);
        let before = slow.stats();
        let released = Instant::now();
        let token = guard.token();
        drop(guard);
        let (held, next_token, after) = waiting.join().unwrap();
        let took = held - released;
        eprintln!("the waiter held {took:?} after the release began, behind a {DELAY:?} link");
        assert!(next_token > token);
        // The event reaches it after one delay; a listing after it would be
        // one round trip more.
        assert!(took < DELAY + LOAD, "more than the event: {took:?}");
        assert_eq!(
            after.total() - before.total(),
            0,
            "no request after the event: {before:?} {after:?}"
        );
    });
    // The new holder hears of its node's loss all the same.
    let guard = waiter.lock().unwrap();
    let lost = guard.lost();
    holder_client.delete(guard.node(), None).unwrap();
    assert_eq!(
        lost.recv_timeout(WAIT),
        Err(crossbeam_channel::RecvTimeoutError::Disconnected)
    );
}

#[test]
fn a_waiter_behind_the_second_node_holds_on_the_second_one_s_deletion_with_no_request_after_the_first_release() {
    let server = TestingServer::start().unwrap();
    let connect = server.connect_string();
    let path = "/lock";
    let holder_client = client_of(&connect);
    let holder = mutex(&holder_client, path);
    let guard = holder.lock().unwrap();
    // The holder's watch on the lock path, as the server counts it.
    let lock_path_watch = watch_count(&server);
    let next_client = client_of(&connect);
    let next = mutex(&next_client, path);
    let proxy = FaultProxy::start(&connect).unwrap();
    let slow = proxied_client(&proxy);
    let last = mutex(&slow, path);
    proxy.set_delay(DELAY);
    let (held, is_held) = mpsc::channel();
    let (release, to_release) = mpsc::channel::<()>();
    thread::scope(|s| {
        let next_turn = s.spawn(move || {
            let guard = next.lock().unwrap();
            held.send(()).unwrap();
            to_release.recv().unwrap();
            let released = Instant::now();
            drop(guard);
            released
        });
        eventually(WAIT, "the next waiter joined", || {
            nodes(&holder_client, path).len() == 2
        });
        let last_turn = s.spawn(|| {
            let guard = last.lock().unwrap();
            (Instant::now(), slow.stats(), guard.token())
        });
        eventually(WAIT, "the last waiter joined", || {
            nodes(&holder_client, path).len() == 3
        });
        // Each waiter's watch on the lock path; the next one's on the
        // holder's node; the last one's on the node it waits for and on the
        // first node.
        wait_for_watches(&server, 3 * lock_path_watch + 3);
        let before = slow.stats();
        drop(guard);
        is_held.recv_timeout(WAIT).unwrap();
        release.send(()).unwrap();
        let released = next_turn.join().unwrap();
        let (holds, after, _) = last_turn.join().unwrap();
        let took = holds - released;
        eprintln!("the last waiter held {took:?} after the second release, behind a {DELAY:?} link");
        // The event reaches it after one delay; a listing would be a round
        // trip more.
        assert!(took < DELAY + LOAD, "more than the event: {took:?}");
        assert_eq!(
            after.total() - before.total(),
            0,
            "no request after the first release: {before:?} {after:?}"
        );
    });
}

#[test]
fn a_waiter_whose_own_node_was_deleted_does_not_hold_on_the_event_but_joins_again() {
    let path = unique_path("mutex-waiter-node-deleted");
    let admin = client();
    let holder = mutex(&admin, &path);
    let guard = holder.lock().unwrap();
    let waiting_client = client();
    let waiter = mutex(&waiting_client, &path);
    thread::scope(|s| {
        let waiting = s.spawn(|| {
            let guard = waiter.lock().unwrap();
            let there = admin.exists(guard.node()).unwrap().is_some();
            (guard.node().to_owned(), guard.is_held(), there)
        });
        eventually(WAIT, "the waiter joined", || nodes(&admin, &path).len() == 2);
        let waiting_node = nodes(&admin, &path)
            .into_iter()
            .find(|name| !guard.node().ends_with(name.as_str()))
            .unwrap();
        admin.delete(&format!("{path}/{waiting_node}"), None).unwrap();
        drop(guard);
        let (node, held, there) = waiting.join().unwrap();
        assert!(!node.ends_with(&waiting_node), "it held with the node that was deleted");
        assert!(held && there, "its node is there");
    });
}

/// A client through `proxy` that sets no persistent watches.
fn proxied_client_without_persistent_watches(proxy: &FaultProxy) -> ZkClient {
    ZkClient::builder(&proxy.connect_string())
        .session_timeout(Duration::from_secs(10))
        .connection_timeout(Duration::from_secs(5))
        .request_timeout(Duration::from_secs(5))
        .without_persistent_watches()
        .connect()
        .unwrap()
}

#[test]
fn without_persistent_watches_a_holder_watches_its_node_and_a_waiter_its_own_while_it_waits() {
    let server = TestingServer::start().unwrap();
    let connect = server.connect_string();
    let path = "/lock";
    let proxy = FaultProxy::start(&connect).unwrap();
    let slow = proxied_client_without_persistent_watches(&proxy);
    let holder_client = client_of(&connect);
    holder_client.ensure_path(path).unwrap();
    let holder = Mutex::builder(&slow, path).build().unwrap();
    proxy.set_delay(DELAY);
    let started = Instant::now();
    let guard = holder.lock().unwrap();
    let took = started.elapsed();
    assert!(took < 2 * DELAY + LOAD, "more than one round trip: {took:?}");
    let stats = slow.stats();
    assert_eq!(
        (stats.create, stats.get_children, stats.get_data, stats.other),
        (1, 1, 1, 0),
        "a create, a listing and the watch on its own node"
    );
    let lost = guard.lost();
    holder_client.delete(guard.node(), None).unwrap();
    assert_eq!(
        lost.recv_timeout(WAIT),
        Err(crossbeam_channel::RecvTimeoutError::Disconnected)
    );
    drop(guard);
    let other_client = client_of(&connect);
    let other = mutex(&other_client, path);
    let guard = other.lock().unwrap();
    let watches_before = watch_count(&server);
    thread::scope(|s| {
        let waiting = s.spawn(|| {
            let guard = holder.lock().unwrap();
            let (held, stats) = (Instant::now(), slow.stats());
            // The watch it set on its own node while it waited tells it of
            // the node's loss.
            let lost = guard.lost();
            holder_client.delete(guard.node(), None).unwrap();
            (held, stats, lost.recv_timeout(WAIT), guard.is_held())
        });
        eventually(WAIT, "the waiter joined", || nodes(&holder_client, path).len() == 2);
        // The waiter's watches on its own node and on the holder's.
        wait_for_watches(&server, watches_before + 2);
        let before = slow.stats();
        let released = Instant::now();
        drop(guard);
        let (held, after, told, still_held) = waiting.join().unwrap();
        let took = held - released;
        assert!(took < DELAY + LOAD, "more than the event: {took:?}");
        assert_eq!(after.total() - before.total(), 0, "no request after the event");
        assert_eq!(told, Err(crossbeam_channel::RecvTimeoutError::Disconnected));
        assert!(!still_held);
    });
}

#[test]
fn a_participant_that_had_to_wait_drops_its_watch_on_the_lock_path_and_watches_its_node() {
    let server = TestingServer::start().unwrap();
    let connect = server.connect_string();
    let path = "/lock";
    let (first_client, waiting_client) = (client_of(&connect), client_of(&connect));
    let (first, waiting) = (mutex(&first_client, path), mutex(&waiting_client, path));
    let guard = first.lock().unwrap();
    // The first participant's watch on the lock path, as the server counts it.
    let first_watch = watch_count(&server);
    thread::scope(|s| {
        let waiter = s.spawn(|| drop(waiting.lock().unwrap()));
        eventually(WAIT, "the waiter joined", || nodes(&first_client, path).len() == 2);
        drop(guard);
        waiter.join().unwrap();
    });
    // The waiter's watch on the lock path went with its hold; the first
    // participant, which never waited, keeps its own.
    wait_for_watches(&server, first_watch);
    let before = waiting_client.stats();
    let guard = waiting.lock().unwrap();
    let after = waiting_client.stats();
    assert_eq!(
        (after.get_data - before.get_data, after.other - before.other),
        (1, 0),
        "a watch on its own node, none on the lock path"
    );
    let lost = guard.lost();
    first_client.delete(guard.node(), None).unwrap();
    assert_eq!(
        lost.recv_timeout(WAIT),
        Err(crossbeam_channel::RecvTimeoutError::Disconnected)
    );
}
