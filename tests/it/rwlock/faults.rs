//! The read-write lock under faults: timed calls return by their deadline
//! with the server down or stalled and leave no node; a lost create reply
//! leaves no extra node (a reader's, a writer's, or a downgraded writer's
//! read node); a writer or a reader whose session expires is told before
//! a writer holds; a killed Curator writer's or reader's node goes with its
//! session and the waiting writer holds;
//! never two writers hold through a cut, a partition past the session and
//! a server restart mid-hold.

use std::thread;
use std::time::{Duration, Instant};

use zk_queue::testing::{FaultProxy, Request, TestingServer};
use zk_queue::{recipes::RwLock, Error};

use super::{nodes, rwlock, Role, WAIT};
use crate::support::server::{shared_connect_string, unique_path};
use crate::support::{self, client, client_of, contention, eventually, short_session_client, Bound, AT_ONCE};

/// The deadline the timed calls below are given.
const DEADLINE: Duration = Duration::from_secs(2);

/// How late a timed call may return while the server is down: only the
/// time to notice.
const LATE_WHEN_DOWN: Duration = Duration::from_millis(200);

/// How late a timed call may return while the server is stalled: an answer
/// in flight may take a second more, as documented.
const LATE_WHEN_STALLED: Duration = Duration::from_secs(1);

/// Calls `read_timeout(DEADLINE)` or `write_timeout(DEADLINE)` on `lock`,
/// asserting it returned within the deadline plus `LATE_WHEN_DOWN` (plus
/// the suite's load margin); whether it held.
fn timed(lock: &RwLock, role: Role) -> Result<bool, Error> {
    timed_late(lock, role, LATE_WHEN_DOWN)
}

/// As [`timed`], allowing `late` past the deadline.
fn timed_late(lock: &RwLock, role: Role, late: Duration) -> Result<bool, Error> {
    support::within(
        &format!("{role:?} timed {DEADLINE:?}"),
        Bound::past(DEADLINE, late),
        || match role {
            Role::Read => lock.read_timeout(DEADLINE).map(|guard| guard.is_some()),
            Role::Write => lock.write_timeout(DEADLINE).map(|guard| guard.is_some()),
        },
    )
}

#[test]
fn timed_reads_and_writes_return_unreachable_by_their_deadline_with_the_server_down_and_leave_no_node() {
    let mut server = TestingServer::start().unwrap();
    let connect = server.connect_string();
    let path = "/rwlock";
    let (holder_client, reader_client, writer_client) = (client_of(&connect), client_of(&connect), client_of(&connect));
    let holder = rwlock(&holder_client, path);
    let (reader, writer) = (rwlock(&reader_client, path), rwlock(&writer_client, path));
    let held = holder.write().unwrap();
    let sessions = [&holder_client, &reader_client, &writer_client].map(|c| c.session_id().unwrap());
    thread::scope(|s| {
        let reading = s.spawn(|| timed(&reader, Role::Read));
        let writing = s.spawn(|| timed(&writer, Role::Write));
        eventually(WAIT, "both wait in the line", || nodes(&holder_client, path).len() == 3);
        server.stop().unwrap();
        for result in [reading.join().unwrap(), writing.join().unwrap()] {
            assert!(matches!(result, Err(Error::Unreachable { .. })), "{result:?}");
        }
    });
    // Down from the start of the call, too.
    for (lock, role) in [(&reader, Role::Read), (&writer, Role::Write)] {
        let result = timed(lock, role);
        assert!(matches!(result, Err(Error::Unreachable { .. })), "{result:?}");
    }
    // Letting go while the server is down does not wait for it.
    let started = Instant::now();
    drop(held);
    Bound::of(AT_ONCE).check("the release", started.elapsed());
    server.restart().unwrap();
    let admin = client_of(&connect);
    eventually(WAIT, "no node is left", || nodes(&admin, path).is_empty());
    let now = [&holder_client, &reader_client, &writer_client].map(|c| c.session_id().unwrap());
    assert_eq!(now, sessions, "no session expired: the nodes were deleted");
}

#[test]
fn timed_reads_and_writes_return_by_their_deadline_with_the_server_stalled_and_leave_no_node() {
    let proxy = FaultProxy::start(&shared_connect_string()).unwrap();
    let path = unique_path("rwlock-stalled");
    let (holder_client, stalled_client) = (client(), support::proxied_client(&proxy));
    let holder = rwlock(&holder_client, &path);
    let stalled = rwlock(&stalled_client, &path);
    let held = holder.write().unwrap();
    let stalled_result = |result: &Result<bool, Error>| {
        matches!(
            result,
            Ok(false) | Err(Error::Unreachable { .. } | Error::Timeout { .. })
        )
    };
    for role in [Role::Read, Role::Write] {
        thread::scope(|s| {
            let waiting = s.spawn(|| timed_late(&stalled, role, LATE_WHEN_STALLED));
            eventually(WAIT, "it waits in the line", || nodes(&holder_client, &path).len() == 2);
            proxy.blackhole();
            let result = waiting.join().unwrap();
            assert!(stalled_result(&result), "{role:?}: {result:?}");
        });
        // Stalled from the start of the call, too.
        let result = timed_late(&stalled, role, LATE_WHEN_STALLED);
        assert!(stalled_result(&result), "{role:?}: {result:?}");
        proxy.heal();
        let ours = held.node().rsplit('/').next().unwrap().to_owned();
        eventually(WAIT, "only the holder's node is left", || {
            nodes(&holder_client, &path) == [ours.clone()]
        });
    }
    drop(held);
    assert!(stalled.write_timeout(WAIT).unwrap().is_some(), "it writes once healed");
}

#[test]
fn a_create_whose_reply_was_lost_leaves_no_extra_node() {
    let proxy = FaultProxy::start(&shared_connect_string()).unwrap();
    let lossy = support::proxied_client(&proxy);
    let path = unique_path("rwlock-lost-create");
    let admin = client();
    admin.ensure_path(&path).unwrap();
    let lock = rwlock(&lossy, &path);
    let other = rwlock(&admin, &path);
    let only = |guard_node: &str| {
        let ours = guard_node.rsplit('/').next().unwrap().to_owned();
        nodes(&admin, &path) == [ours]
    };
    // A reader's create is applied, its reply lost.
    proxy.drop_reply_to(Request::Create);
    let read = lock.read_timeout(WAIT).unwrap().expect("reads");
    assert!(!proxy.dropping_reply(), "the fault was injected");
    assert!(only(read.node()), "one node, the reader's: {:?}", nodes(&admin, &path));
    assert!(other.try_write().unwrap().is_none(), "held, by the lossy reader");
    drop(read);
    eventually(WAIT, "no node is left", || nodes(&admin, &path).is_empty());
    // A writer's.
    proxy.drop_reply_to(Request::Create);
    let write = lock.write_timeout(WAIT).unwrap().expect("writes");
    assert!(!proxy.dropping_reply(), "the fault was injected");
    assert!(only(write.node()), "one node, the writer's: {:?}", nodes(&admin, &path));
    assert!(other.try_read().unwrap().is_none(), "written, by the lossy writer");
    // The writer's read node, created with the write node's sequence (not
    // a sequential node): found again by its protected name.
    proxy.drop_reply_to(Request::Create);
    let read = lock.read_timeout(WAIT).unwrap().expect("the writer reads");
    assert!(!proxy.dropping_reply(), "the fault was injected");
    assert_eq!(nodes(&admin, &path).len(), 2, "the write node and one read node");
    drop(write);
    assert!(only(read.node()), "the read node is left: {:?}", nodes(&admin, &path));
    drop(read);
    eventually(WAIT, "no node is left", || nodes(&admin, &path).is_empty());
}

#[test]
fn a_writer_whose_session_expires_is_told_before_another_writer_holds() {
    let proxy = FaultProxy::start(&shared_connect_string()).unwrap();
    let path = unique_path("rwlock-expired");
    let (short, other) = (short_session_client(&proxy.connect_string()), client());
    let holder = rwlock(&short, &path);
    let next = rwlock(&other, &path);
    let guard = holder.write().unwrap();
    let next_token = support::expiry::expire_holder(
        &proxy,
        guard.lost(),
        || nodes(&other, &path).len() == 2,
        || next.write().unwrap().token(),
    );
    assert!(!guard.is_held());
    assert!(next_token > guard.token(), "the next writer's token is larger");
    proxy.heal();
    eventually(WAIT, "the expired writer's client has a new session", || {
        short.state().is_connected()
    });
    // A write hold lost with its session: the thread reads as anyone does,
    // in the line, not in the lost node's place.
    assert!(holder.try_read().unwrap().is_some(), "no writer holds now");
    drop(guard);
    assert!(nodes(&other, &path).is_empty());
}

#[test]
fn under_a_cut_a_partition_past_the_session_and_a_server_restart_mid_hold_no_two_writers_ever_hold() {
    contention::one_holder_under_faults(
        |board, ledger, n, client, hold| {
            let lock = rwlock(client, "/rwlock");
            board.take_turns(
                n,
                hold,
                ledger,
                |wait| lock.write_timeout(wait),
                |guard| guard.is_held(),
            );
        },
        |admin| nodes(admin, "/rwlock").is_empty(),
    );
}

/// The session timeout of the killed Curator holders.
const KILLED_SESSION: Duration = Duration::from_secs(2);

/// A Curator participant holding the `role` half of the lock at `path` in
/// a process of its own is killed (`SIGKILL`) while a Rust writer waits in
/// line behind it: the writer holds within the killed session's timeout
/// plus a second (plus the load margin), and no node is left.
fn a_killed_curator_holder_lets_the_waiting_writer_in(name: &str, role: Role) {
    let path = unique_path(name);
    let ledger = support::ledger::Ledger::new();
    let (role_name, id) = match role {
        Role::Read => ("read", "r-java"),
        Role::Write => ("write", "w-java"),
    };
    let command = ledger
        .peer_command("curator-rwlock", &path, 1, id, Duration::from_secs(3600))
        .property("peer.role", role_name)
        .property("peer.sessionTimeoutMs", KILLED_SESSION.as_millis());
    let holder = command.timeout(WAIT * 2).spawn().unwrap();
    holder.wait_for_stderr_line("held 1", WAIT).unwrap();
    let client = client();
    let next = rwlock(&client, &path);
    assert!(
        next.try_write().unwrap().is_none(),
        "the {role:?} holder keeps a writer out"
    );
    thread::scope(|s| {
        let waiting = s.spawn(|| {
            let _write = next.write().unwrap();
            Instant::now()
        });
        eventually(WAIT, "the Rust writer waits in line", || {
            nodes(&client, &path).len() == 2
        });
        let killed = Instant::now();
        drop(holder); // SIGKILL
        let took = waiting.join().unwrap().duration_since(killed);
        eprintln!("the waiting writer held {took:?} after the {role:?} holder was killed");
        assert!(
            took >= KILLED_SESSION / 2,
            "held {took:?} after the kill: before the killed session could have expired"
        );
        Bound::of(KILLED_SESSION + Duration::from_secs(1)).check("holding after the kill", took);
    });
    eventually(WAIT, "no node is left", || nodes(&client, &path).is_empty());
}

#[test]
fn a_killed_curator_writer_s_node_goes_with_its_session_and_the_waiting_writer_holds() {
    a_killed_curator_holder_lets_the_waiting_writer_in("rwlock-killed", Role::Write);
}

#[test]
fn a_killed_curator_reader_s_node_goes_with_its_session_and_the_waiting_writer_holds() {
    a_killed_curator_holder_lets_the_waiting_writer_in("rwlock-killed-reader", Role::Read);
}

#[test]
fn a_reader_whose_session_expires_is_told_before_a_writer_holds() {
    let proxy = FaultProxy::start(&shared_connect_string()).unwrap();
    let path = unique_path("rwlock-reader-expired");
    let (short, other) = (short_session_client(&proxy.connect_string()), client());
    let reader = rwlock(&short, &path);
    let writer = rwlock(&other, &path);
    let read = reader.read().unwrap();
    let write_token = support::expiry::expire_holder(
        &proxy,
        read.lost(),
        || nodes(&other, &path).len() == 2,
        || writer.write().unwrap().token(),
    );
    assert!(!read.is_held());
    assert!(write_token > read.token(), "the writer's token is larger");
    proxy.heal();
    drop(read);
    eventually(WAIT, "no node is left", || nodes(&other, &path).is_empty());
}

#[test]
fn under_a_cut_a_partition_past_the_session_and_a_server_restart_mid_hold_no_reader_holds_beside_a_writer() {
    let mut server = TestingServer::start().unwrap();
    let mut cast = contention::Cast::new(&server, 2, 2);
    // Writers and readers in turn: the cut lands on a writer (the first
    // behind a proxy), the partition on a reader (the second).
    let roles = [Role::Write, Role::Read, Role::Write, Role::Read];
    for (name, role) in cast.names.iter_mut().zip(roles) {
        *name = format!("{}-{name}", if matches!(role, Role::Read) { "r" } else { "w" });
    }
    let board = contention::Board::new(&cast.names);
    let ledger = support::ledger::Ledger::new();
    let seen = board.under_faults(
        &mut server,
        &cast,
        contention::Board::check_readers_writers,
        |n, client, hold| {
            let lock = rwlock(client, "/rwlock");
            match roles[n] {
                Role::Write => board.take_turns(n, hold, &ledger, |wait| lock.write_timeout(wait), |g| g.is_held()),
                Role::Read => board.take_turns(n, hold, &ledger, |wait| lock.read_timeout(wait), |g| g.is_held()),
            }
        },
    );
    eprintln!("turns {:?}, samples holding {seen:?}", board.all_turns());
    let (entries, most) = ledger.check_readers_writers();
    eprintln!("{entries} turns, at most {most} inside at once");
    let admin = client_of(&server.connect_string());
    eventually(WAIT, "no node is left", || nodes(&admin, "/rwlock").is_empty());
}
