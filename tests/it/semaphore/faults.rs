//! The semaphore under faults: timed calls return by their deadline with
//! the server down or stalled and leave no node; a holder whose session
//! expires is told before another holds; a killed Curator holder's lease
//! goes with its session and the next waiter holds; lost create replies
//! leave no node behind; never more hold than there are leases through a
//! cut, a partition past the session and a server restart mid-hold.

use std::thread;
use std::time::{Duration, Instant};

use zk_queue::testing::{FaultProxy, Request, TestingServer};
use zk_queue::{recipes::Semaphore, Error};

use super::{leases_and_locks, nothing_left, semaphore, Ledger, WAIT};
use crate::support::server::{shared_connect_string, unique_path};
use crate::support::{self, client, client_of, contention, eventually, short_session_client, Bound};

/// The deadline the timed calls below are given.
const DEADLINE: Duration = Duration::from_secs(2);

/// How late a timed call may return while the server is down: only the
/// time to notice.
const LATE_WHEN_DOWN: Duration = Duration::from_millis(200);

/// How long `try_acquire` may wait for a server: a second, as documented.
const TRY_WAIT: Duration = Duration::from_secs(1);

/// How late a timed call may return while the server is stalled: an answer
/// in flight may take a second more, as documented.
const LATE_WHEN_STALLED: Duration = Duration::from_secs(1);

/// Calls `acquire_timeout(DEADLINE)` on `semaphore`, asserting it returned
/// within the deadline plus `late` (plus the suite's load margin).
fn timed_acquire(semaphore: &Semaphore, late: Duration) -> Result<bool, Error> {
    support::within(
        &format!("acquire_timeout({DEADLINE:?})"),
        Bound::past(DEADLINE, late),
        || semaphore.acquire_timeout(DEADLINE).map(|lease| lease.is_some()),
    )
}

#[test]
fn acquire_timeout_returns_unreachable_by_its_deadline_with_the_server_down_and_leaves_no_node() {
    let mut server = TestingServer::start().unwrap();
    let connect = server.connect_string();
    let path = "/semaphore";
    let (holder_client, waiter_client) = (client_of(&connect), client_of(&connect));
    let holder = semaphore(&holder_client, path, 1);
    let waiter = semaphore(&waiter_client, path, 1);
    let held = holder.acquire().unwrap();
    let states = waiter_client.state_listener();
    thread::scope(|s| {
        let waiting = s.spawn(|| timed_acquire(&waiter, LATE_WHEN_DOWN));
        eventually(WAIT, "the waiter waits with its lease", || {
            leases_and_locks(&holder_client, path).0.len() == 2
        });
        server.stop().unwrap();
        let result = waiting.join().unwrap();
        assert!(matches!(result, Err(Error::Unreachable { .. })), "{result:?}");
    });
    support::wait_for_state(&states, zk_queue::ConnectionState::Suspended, WAIT);
    // Down from the start of the call, too.
    let result = timed_acquire(&waiter, LATE_WHEN_DOWN);
    assert!(matches!(result, Err(Error::Unreachable { .. })), "{result:?}");
    let result = support::within("try_acquire", Bound::past(TRY_WAIT, LATE_WHEN_DOWN), || {
        waiter.try_acquire().map(|lease| lease.is_some())
    });
    assert!(matches!(result, Err(Error::Unreachable { .. })), "{result:?}");
    // Returning a lease while the server is down does not wait for it.
    let sessions = (holder_client.session_id().unwrap(), waiter_client.session_id().unwrap());
    support::within("returning the lease", support::AT_ONCE, || drop(held));
    server.restart().unwrap();
    let admin = client_of(&connect);
    eventually(WAIT, "no node is left", || nothing_left(&admin, path));
    let now = (holder_client.session_id().unwrap(), waiter_client.session_id().unwrap());
    assert_eq!(now, sessions, "no session expired");
}

#[test]
fn acquire_timeout_returns_by_its_deadline_with_the_server_stalled_and_leaves_no_node() {
    let proxy = FaultProxy::start(&shared_connect_string()).unwrap();
    let path = unique_path("semaphore-stalled");
    let (holder_client, waiter_client) = (client(), support::proxied_client(&proxy));
    let holder = semaphore(&holder_client, &path, 1);
    let waiter = semaphore(&waiter_client, &path, 1);
    let held = holder.acquire().unwrap();
    let stalled_result = |result: &Result<bool, Error>| {
        matches!(
            result,
            Ok(false) | Err(Error::Unreachable { .. } | Error::Timeout { .. })
        )
    };
    thread::scope(|s| {
        let waiting = s.spawn(|| timed_acquire(&waiter, LATE_WHEN_STALLED));
        eventually(WAIT, "the waiter waits with its lease", || {
            leases_and_locks(&holder_client, &path).0.len() == 2
        });
        proxy.blackhole();
        let result = waiting.join().unwrap();
        assert!(stalled_result(&result), "{result:?}");
    });
    // Stalled from the start of the call, too.
    let result = timed_acquire(&waiter, LATE_WHEN_STALLED);
    assert!(stalled_result(&result), "{result:?}");
    let result = support::within("try_acquire", Bound::past(TRY_WAIT, LATE_WHEN_STALLED), || {
        waiter.try_acquire().map(|lease| lease.is_some())
    });
    assert!(stalled_result(&result), "{result:?}");
    proxy.heal();
    let ours = held.node().rsplit('/').next().unwrap().to_owned();
    eventually(WAIT, "only the holder's lease is left", || {
        leases_and_locks(&holder_client, &path) == (vec![ours.clone()], vec![])
    });
    drop(held);
    assert!(
        waiter.acquire_timeout(WAIT).unwrap().is_some(),
        "the waiter holds once healed"
    );
}

#[test]
fn a_holder_whose_session_expires_is_told_before_another_holds() {
    let proxy = FaultProxy::start(&shared_connect_string()).unwrap();
    let path = unique_path("semaphore-expired");
    let (short, other) = (short_session_client(&proxy.connect_string()), client());
    let holder = semaphore(&short, &path, 1);
    let next = semaphore(&other, &path, 1);
    let lease = holder.acquire().unwrap();
    assert!(lease.is_held());
    let next_token = support::expiry::expire_holder(
        &proxy,
        lease.lost(),
        || leases_and_locks(&other, &path).0.len() == 2,
        || next.acquire().unwrap().token(),
    );
    assert!(!lease.is_held());
    assert!(next_token > lease.token(), "the next holder's token is larger");
    proxy.heal();
    eventually(WAIT, "the expired holder's client has a new session", || {
        short.state().is_connected()
    });
    assert!(!lease.is_held(), "lost for good");
    drop(lease);
    eventually(WAIT, "no node is left", || nothing_left(&other, &path));
    assert!(
        holder.try_acquire().unwrap().is_some(),
        "the expired participant can hold again"
    );
}

#[test]
fn a_holder_whose_lease_node_is_deleted_is_told_and_the_next_waiter_holds() {
    let path = unique_path("semaphore-node-deleted");
    let (a, b) = (client(), client());
    let (holder, next) = (semaphore(&a, &path, 1), semaphore(&b, &path, 1));
    let lease = holder.acquire().unwrap();
    let lost = lease.lost();
    thread::scope(|s| {
        let waiting = s.spawn(|| next.acquire().unwrap().token());
        eventually(WAIT, "the next participant waits with its lease", || {
            leases_and_locks(&b, &path).0.len() == 2
        });
        b.delete(lease.node(), None).unwrap();
        assert_eq!(
            lost.recv_timeout(WAIT),
            Err(crossbeam_channel::RecvTimeoutError::Disconnected)
        );
        assert!(!lease.is_held());
        assert!(waiting.join().unwrap() > lease.token());
    });
}

/// The session timeout of the killed Curator holder.
const KILLED_SESSION: Duration = Duration::from_secs(2);

#[test]
fn a_killed_curator_holder_s_lease_goes_with_its_session_and_the_next_waiter_holds() {
    let path = unique_path("semaphore-killed");
    let ledger = Ledger::new();
    let command = ledger
        .peer_command("curator-semaphore", &path, 1, "java", Duration::from_secs(3600))
        .property("peer.maxLeases", 1)
        .property("peer.sessionTimeoutMs", KILLED_SESSION.as_millis());
    let holder = command.timeout(WAIT * 2).spawn().unwrap();
    holder.wait_for_stderr_line("held 1", WAIT).unwrap();
    let client = client();
    let next = semaphore(&client, &path, 1);
    thread::scope(|s| {
        let waiting = s.spawn(|| {
            let _lease = next.acquire().unwrap();
            Instant::now()
        });
        eventually(WAIT, "the next waiter waits with its lease", || {
            leases_and_locks(&client, &path).0.len() == 2
        });
        let killed = Instant::now();
        drop(holder); // SIGKILL
        let took = waiting.join().unwrap().duration_since(killed);
        eprintln!("the next waiter held {took:?} after the kill");
        Bound::of(KILLED_SESSION + Duration::from_secs(1)).check("holding after the kill", took);
    });
    eventually(WAIT, "no node is left", || nothing_left(&client, &path));
}

/// Acquires through a client whose next `times` create replies are lost,
/// and checks that the lease is held once, by one node, and that nothing
/// else is left.
fn acquire_losing_create_replies(name: &str, times: u32) {
    let proxy = FaultProxy::start(&shared_connect_string()).unwrap();
    let lossy = support::proxied_client(&proxy);
    let path = unique_path(name);
    let admin = client();
    let lossy_semaphore = semaphore(&lossy, &path, 1);
    // The path and its count record exist, so the first create of the
    // acquisition is its own.
    drop(semaphore(&admin, &path, 1).acquire().unwrap());
    proxy.drop_replies_to(Request::Create, times);
    let lease = lossy_semaphore.acquire_timeout(WAIT).unwrap().expect("held");
    assert!(!proxy.dropping_reply(), "the faults were injected");
    let ours = lease.node().rsplit('/').next().unwrap().to_owned();
    eventually(WAIT, "one lease is left, the one held, and no lock node", || {
        leases_and_locks(&admin, &path) == (vec![ours.clone()], vec![])
    });
    assert!(lease.is_held());
    let other = semaphore(&admin, &path, 1);
    assert!(other.try_acquire().unwrap().is_none(), "held once, by the lossy client");
    drop(lease);
    eventually(WAIT, "no node is left", || nothing_left(&admin, &path));
}

#[test]
fn a_create_whose_reply_was_lost_leaves_no_node_behind() {
    acquire_losing_create_replies("semaphore-lost-create", 1);
}

#[test]
fn creates_whose_replies_were_lost_on_the_slow_way_too_leave_no_node_behind() {
    acquire_losing_create_replies("semaphore-lost-creates", 3);
}

#[test]
fn under_a_cut_a_partition_past_the_session_and_a_server_restart_mid_hold_never_more_hold_than_leases() {
    const LEASES: usize = 2;
    let mut server = TestingServer::start().unwrap();
    let cast = contention::Cast::new(&server, 3, 2);
    let board = contention::Board::new(&cast.names);
    let ledger = Ledger::new();
    let seen = board.under_faults(
        &mut server,
        &cast,
        |board| board.check(LEASES),
        |n, client, hold| {
            let semaphore = semaphore(client, "/semaphore", LEASES);
            board.take_turns(
                n,
                hold,
                &ledger,
                |wait| semaphore.acquire_timeout(wait),
                |lease| lease.is_held(),
            );
        },
    );
    eprintln!("turns {:?}, samples holding {seen:?}", board.all_turns());
    // The ledger fails if ever more than LEASES held at once; whether they
    // all happened to hold together under the faults is not arranged.
    let (entries, most) = ledger.check(LEASES);
    eprintln!("{entries} turns, at most {most} at once");
    let admin = client_of(&server.connect_string());
    eventually(WAIT, "no node is left", || nothing_left(&admin, "/semaphore"));
}

#[test]
fn a_semaphore_mutex_holder_whose_session_expires_is_told_before_another_holds() {
    let proxy = FaultProxy::start(&shared_connect_string()).unwrap();
    let path = unique_path("semaphore-mutex-expired");
    let (short, other) = (short_session_client(&proxy.connect_string()), client());
    let holder = zk_queue::recipes::SemaphoreMutex::new(&short, &path).unwrap();
    let next = zk_queue::recipes::SemaphoreMutex::new(&other, &path).unwrap();
    let guard = holder.lock().unwrap();
    let next_token = support::expiry::expire_holder(
        &proxy,
        guard.lost(),
        || leases_and_locks(&other, &path).0.len() == 2,
        || next.lock().unwrap().token(),
    );
    assert!(!guard.is_held());
    assert!(next_token > guard.token(), "the next holder's token is larger");
    proxy.heal();
    drop(guard);
    eventually(WAIT, "no node is left", || nothing_left(&other, &path));
}
