//! What the lock promises without faults: one holder at a time (or
//! `max_leases`), in the order of arrival, reentrant within a thread, one
//! watch per waiter, and fencing tokens that only grow.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::thread;
use std::time::Duration;

use zk_queue::recipes::Mutex;
use zk_queue::testing::TestingServer;

use super::{mutex, nodes, take_turns, Ledger, WAIT};
use crate::support::server::unique_path;
use crate::support::{client, client_of, eventually, wait_for_watches, watch_count, Stop};

/// Has `participants` clients, each on a thread of its own, hold a lock at
/// a new path with `max_leases` `rounds` times for `hold` each; returns
/// the ledger they wrote and the path.
fn contend(participants: usize, max_leases: usize, rounds: usize, hold: Duration) -> (Ledger, String) {
    let path = unique_path("mutex-contend");
    let ledger = Ledger::new();
    thread::scope(|s| {
        for n in 0..participants {
            let (path, ledger) = (&path, &ledger);
            s.spawn(move || {
                let client = client();
                let mutex = Mutex::builder(&client, path).max_leases(max_leases).build().unwrap();
                take_turns(&mutex, &n.to_string(), rounds, hold, ledger);
            });
        }
    });
    (ledger, path)
}

#[test]
fn eight_clients_never_hold_at_once_by_a_shared_ledger() {
    let (ledger, path) = contend(8, 1, 5, Duration::from_millis(2));
    assert_eq!(ledger.check(1), (40, 1));
    assert!(nodes(&client(), &path).is_empty(), "every node is gone");
}

#[test]
fn waiters_hold_in_the_order_they_arrived() {
    let path = unique_path("mutex-fifo");
    let admin = client();
    let first = mutex(&admin, &path);
    let holding = first.lock().unwrap();
    let order = Arc::new(StdMutex::new(Vec::new()));
    thread::scope(|s| {
        for n in 0..6 {
            let (path, order) = (&path, Arc::clone(&order));
            s.spawn(move || {
                let client = client();
                let mutex = mutex(&client, path);
                let _guard = mutex.lock().unwrap();
                order.lock().unwrap().push(n);
            });
            // The next arrives only once this one's node is in the line.
            eventually(WAIT, "the waiter's node is in the line", || {
                nodes(&admin, path).len() == n + 2
            });
        }
        drop(holding);
    });
    assert_eq!(*order.lock().unwrap(), (0..6).collect::<Vec<_>>());
}

#[test]
fn a_thread_reacquires_at_once_and_releases_with_its_last_guard() {
    let path = unique_path("mutex-reentrant");
    let (client, other_client) = (client(), client());
    let mutex = mutex(&client, &path);
    let other = super::mutex(&other_client, &path);
    let outer = mutex.lock().unwrap();
    let inner = mutex.try_lock().unwrap().expect("reentrant: held at once");
    let innermost = mutex
        .lock_timeout(Duration::from_millis(1))
        .unwrap()
        .expect("reentrant");
    assert_eq!(inner.node(), outer.node());
    assert_eq!((inner.token(), innermost.token()), (outer.token(), outer.token()));
    assert_eq!(nodes(&client, &path).len(), 1, "one node for the three guards");
    drop(outer);
    drop(innermost);
    assert!(mutex.is_held_by_current_thread());
    assert!(inner.is_held());
    assert!(other.try_lock().unwrap().is_none(), "still held with one guard left");
    let node = inner.node().to_owned();
    drop(inner);
    assert!(!mutex.is_held_by_current_thread());
    assert_eq!(client.exists(&node).unwrap(), None, "the last guard deleted the node");
    assert!(other.try_lock().unwrap().is_some());
    // Another thread is another holder: it waits.
    let held = mutex.lock().unwrap();
    thread::scope(|s| {
        let blocked = s.spawn(|| mutex.lock_timeout(Duration::from_millis(300)).unwrap().is_none());
        assert!(blocked.join().unwrap(), "another thread does not share the hold");
    });
    drop(held);
}

#[test]
fn max_leases_lets_exactly_that_many_hold_at_once() {
    let (ledger, path) = contend(6, 3, 3, Duration::from_millis(100));
    assert_eq!(ledger.check(3), (18, 3), "three at once, never four");

    // Exactly three: a fourth waits until one of them lets go.
    let clients: Vec<_> = (0..4).map(|_| client()).collect();
    let leases: Vec<Mutex> = clients
        .iter()
        .map(|c| Mutex::builder(c, &path).max_leases(3).build().unwrap())
        .collect();
    let mut held: Vec<_> = leases[..3]
        .iter()
        .map(|m| m.try_lock().unwrap().expect("a lease"))
        .collect();
    assert!(leases[3].try_lock().unwrap().is_none(), "no fourth lease");
    held.pop();
    assert!(leases[3].try_lock().unwrap().is_some(), "a lease let go is free");
}

#[test]
fn a_release_wakes_no_herd_only_the_next_holds_and_only_the_waiter_three_behind_looks_again() {
    let server = TestingServer::start().unwrap();
    let connect = server.connect_string();
    let path = "/lock";
    let holder_client = client_of(&connect);
    let holder = mutex(&holder_client, path);
    let guard = holder.lock().unwrap();
    // The holder's watch on the lock path (which tells it of its node's
    // loss), as the server counts it.
    let lock_path_watch = watch_count(&server);
    assert!(lock_path_watch > 0);
    let clients: Vec<_> = (0..4).map(|_| client_of(&connect)).collect();
    let woken: Vec<_> = (0..4).map(|_| Arc::new(StdMutex::new(None))).collect();
    let done = Stop::new();
    thread::scope(|s| {
        let _done = done.on_drop();
        for (n, client) in clients.iter().enumerate() {
            let (woken, done) = (Arc::clone(&woken[n]), &done);
            s.spawn(move || {
                let mutex = mutex(client, path);
                let guard = mutex.lock().unwrap();
                *woken.lock().unwrap() = Some(guard.token());
                // Held until the test has looked.
                while !done.stopped() {
                    thread::sleep(Duration::from_millis(10));
                }
            });
            eventually(WAIT, "the waiter joined", || nodes(&holder_client, path).len() == n + 2);
        }
        // Each waiter's watch on the lock path beside the holder's; the
        // data watches of the next (on the holder's node), and of the
        // others on their predecessors and on one node further ahead: the
        // first (for the second and third waiters), the one two before
        // their predecessor (for the fourth).
        wait_for_watches(&server, 5 * lock_path_watch + 7);
        let requests: Vec<u64> = clients.iter().map(|c| c.stats().total()).collect();
        let listings = clients[2].stats().get_children;
        drop(guard);
        eventually(WAIT, "the next waiter holds", || woken[0].lock().unwrap().is_some());
        // The third waiter looks at the line again (its listing, then its
        // watch on the new first node).
        eventually(WAIT, "the third waiter looked again", || {
            clients[2].stats().total() >= requests[2] + 2
        });
        let after: Vec<u64> = clients.iter().map(|c| c.stats().total()).collect();
        done.stop();
        // The next waiter holds on the event of the first node's deletion,
        // and the one behind it is now behind the first, with no request.
        assert_eq!(
            [after[0], after[1], after[3]],
            [requests[0], requests[1], requests[3]],
            "only the third waiter sent requests"
        );
        assert_eq!(clients[2].stats().get_children, listings + 1, "one listing");
        assert!(woken[1..].iter().all(|w| w.lock().unwrap().is_none()));
    });
    assert_eq!(nodes(&holder_client, path), Vec::<String>::new());
}

#[test]
fn a_waiter_whose_predecessor_goes_while_the_first_holds_looks_again_and_does_not_hold() {
    let path = unique_path("mutex-predecessor-goes");
    let admin = client();
    let holder = mutex(&admin, &path);
    let guard = holder.lock().unwrap();
    let (middle_client, last_client) = (client(), client());
    let (middle, last) = (mutex(&middle_client, &path), mutex(&last_client, &path));
    let holds = AtomicBool::new(false);
    thread::scope(|s| {
        let middle_turn = s.spawn(|| drop(middle.lock().unwrap()));
        eventually(WAIT, "the second waiter joined", || nodes(&admin, &path).len() == 2);
        let middle_node = nodes(&admin, &path)
            .into_iter()
            .find(|name| !guard.node().ends_with(name.as_str()))
            .unwrap();
        let last_turn = s.spawn(|| {
            let guard = last.lock().unwrap();
            holds.store(true, Ordering::SeqCst);
            drop(guard);
        });
        eventually(WAIT, "the last waiter joined", || nodes(&admin, &path).len() == 3);
        let listings = last_client.stats().get_children;
        // The node the last waiter waits for goes (as a waiter's that gave
        // up would) while the first still holds.
        admin.delete(&format!("{path}/{middle_node}"), None).unwrap();
        eventually(WAIT, "the last waiter looked at the line again", || {
            last_client.stats().get_children > listings
        });
        assert!(!holds.load(Ordering::SeqCst), "it held while the first did");
        drop(guard);
        last_turn.join().unwrap();
        middle_turn.join().unwrap();
    });
    assert!(holds.load(Ordering::SeqCst));
    assert_eq!(nodes(&admin, &path), Vec::<String>::new());
}

#[test]
fn the_token_grows_across_holders_and_across_the_path_deleted_and_created_again() {
    let path = unique_path("mutex-token");
    let (a, b) = (client(), client());
    let (mutex_a, mutex_b) = (mutex(&a, &path), mutex(&b, &path));
    let mut tokens = Vec::new();
    for mutex in [&mutex_a, &mutex_b, &mutex_a] {
        tokens.push(mutex.lock().unwrap().token());
    }
    // Deleted and created again, the path starts its sequences over.
    a.delete(&path, None).unwrap();
    let guard = mutex_b.lock().unwrap();
    assert!(
        guard.node().ends_with("-lock-0000000000"),
        "the sequences started over: {}",
        guard.node()
    );
    tokens.push(guard.token());
    assert!(tokens.windows(2).all(|w| w[0] < w[1]), "tokens only grow: {tokens:?}");
}

#[test]
fn nodes_have_curator_s_protected_lock_names_and_the_participant_s_data() {
    let path = unique_path("mutex-names");
    let client = client();
    let named = Mutex::builder(&client, &path).data("worker-7").build().unwrap();
    let guard = named.lock().unwrap();
    let name = guard.node().rsplit('/').next().unwrap().to_owned();
    let (prefix, sequence) = name.split_once("-lock-").expect("a lock- name");
    let uuid = prefix.strip_prefix("_c_").expect("Curator's protected mark");
    assert_eq!((uuid.len(), sequence.len()), (36, 10), "{name}");
    assert_eq!(client.get_data(guard.node()).unwrap().0, b"worker-7");
    assert_eq!(named.participant_nodes().unwrap(), vec![name]);
    drop(guard);
    // By default, the host's address, as Curator writes.
    let default = mutex(&client, &path);
    let guard = default.lock().unwrap();
    let data = String::from_utf8(client.get_data(guard.node()).unwrap().0).unwrap();
    assert!(data.is_empty() || data.parse::<std::net::IpAddr>().is_ok(), "{data}");
}

#[test]
fn closing_the_client_wakes_a_blocked_lock_with_closed() {
    let path = unique_path("mutex-closed");
    let (holder_client, waiter_client) = (client(), client());
    let holder = mutex(&holder_client, &path);
    let waiter = mutex(&waiter_client, &path);
    let _held = holder.lock().unwrap();
    thread::scope(|s| {
        let blocked = s.spawn(|| waiter.lock().map(|guard| guard.token()));
        eventually(WAIT, "the waiter is in the line", || {
            nodes(&holder_client, &path).len() == 2
        });
        waiter_client.close();
        assert!(matches!(blocked.join().unwrap(), Err(zk_queue::Error::Closed)));
    });
    eventually(WAIT, "the closed session's node is gone", || {
        nodes(&holder_client, &path).len() == 1
    });
}

#[test]
fn the_token_grows_across_the_lock_s_container_reaped_and_created_again() {
    let server = TestingServer::builder()
        .container_check_interval(Duration::from_millis(100))
        .start()
        .unwrap();
    let client = client_of(&server.connect_string());
    let mutex = mutex(&client, "/lock");
    let mut tokens = Vec::new();
    for round in 0..3 {
        let guard = mutex.lock().unwrap();
        assert!(
            guard.node().ends_with("-lock-0000000000"),
            "round {round}: the sequences started over: {}",
            guard.node()
        );
        tokens.push(guard.token());
        drop(guard);
        // Empty, the lock's container is reaped by the server.
        eventually(WAIT, "the lock's container is reaped", || {
            client.exists("/lock").unwrap().is_none()
        });
    }
    assert!(tokens.windows(2).all(|w| w[0] < w[1]), "tokens only grow: {tokens:?}");
}
