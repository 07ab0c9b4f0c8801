//! The lock under faults: timed calls return by their deadline with the
//! server down or stalled and leave no node; a holder whose session expires
//! is told before another holds; a killed holder's node goes with its
//! session; a lost create reply leaves one node; never two hold through a
//! cut, a partition past the session and a server restart mid-hold.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use zk_queue::testing::{FaultProxy, Request, TestingServer};
use zk_queue::{recipes::Mutex, Error, ZkClient};

use super::{mutex, nodes, WAIT};
use crate::support::server::{shared_connect_string, unique_path};
use crate::support::{self, client, client_of, contention, eventually, short_session_client, Bound, AT_ONCE};

/// The deadline the timed calls below are given.
const DEADLINE: Duration = Duration::from_secs(2);

/// How late a timed call may return while the server is down: only the
/// time to notice.
const LATE_WHEN_DOWN: Duration = Duration::from_millis(200);

/// How long `try_lock` may wait for a server: a second, as documented.
const TRY_WAIT: Duration = Duration::from_secs(1);

/// How late a timed call may return while the server is stalled: an answer
/// in flight may take a second more, as documented.
const LATE_WHEN_STALLED: Duration = Duration::from_secs(1);

/// Calls `lock_timeout(DEADLINE)` on `mutex`, asserting it returned within
/// the deadline plus `late` (plus the suite's load margin).
fn timed_lock(mutex: &Mutex, late: Duration) -> Result<bool, Error> {
    support::within(
        &format!("lock_timeout({DEADLINE:?})"),
        Bound::past(DEADLINE, late),
        || mutex.lock_timeout(DEADLINE).map(|guard| guard.is_some()),
    )
}

#[test]
fn lock_timeout_returns_unreachable_by_its_deadline_with_the_server_down_and_leaves_no_node() {
    let mut server = TestingServer::start().unwrap();
    let connect = server.connect_string();
    let path = "/lock";
    let (holder_client, waiter_client) = (client_of(&connect), client_of(&connect));
    let holder = mutex(&holder_client, path);
    let waiter = mutex(&waiter_client, path);
    let held = holder.lock().unwrap();
    let states = waiter_client.state_listener();
    thread::scope(|s| {
        let waiting = s.spawn(|| timed_lock(&waiter, LATE_WHEN_DOWN));
        eventually(WAIT, "the waiter is in the line", || {
            nodes(&holder_client, path).len() == 2
        });
        server.stop().unwrap();
        let result = waiting.join().unwrap();
        assert!(matches!(result, Err(Error::Unreachable { .. })), "{result:?}");
    });
    support::wait_for_state(&states, zk_queue::ConnectionState::Suspended, WAIT);
    // Down from the start of the call, too.
    let result = timed_lock(&waiter, LATE_WHEN_DOWN);
    assert!(matches!(result, Err(Error::Unreachable { .. })), "{result:?}");
    let started = Instant::now();
    let result = waiter.try_lock().map(|guard| guard.is_some());
    Bound::past(TRY_WAIT, LATE_WHEN_DOWN).check("try_lock", started.elapsed());
    assert!(matches!(result, Err(Error::Unreachable { .. })), "{result:?}");
    // Letting go while the server is down does not wait for it.
    let sessions = (holder_client.session_id().unwrap(), waiter_client.session_id().unwrap());
    let started = Instant::now();
    drop(held);
    Bound::of(AT_ONCE).check("the release", started.elapsed());
    server.restart().unwrap();
    // Both sessions live on, and their nodes go: deleted in the background.
    let admin = client_of(&connect);
    eventually(WAIT, "no node is left", || nodes(&admin, path).is_empty());
    let now = (holder_client.session_id().unwrap(), waiter_client.session_id().unwrap());
    assert_eq!(now, sessions, "no session expired");
}

#[test]
fn lock_timeout_returns_by_its_deadline_with_the_server_stalled_and_leaves_no_node() {
    let proxy = FaultProxy::start(&shared_connect_string()).unwrap();
    let path = unique_path("mutex-stalled");
    let (holder_client, waiter_client) = (client(), support::proxied_client(&proxy));
    let holder = mutex(&holder_client, &path);
    let waiter = mutex(&waiter_client, &path);
    let held = holder.lock().unwrap();
    thread::scope(|s| {
        let waiting = s.spawn(|| timed_lock(&waiter, LATE_WHEN_STALLED));
        eventually(WAIT, "the waiter is in the line", || {
            nodes(&holder_client, &path).len() == 2
        });
        proxy.blackhole();
        let result = waiting.join().unwrap();
        assert!(
            matches!(
                result,
                Ok(false) | Err(Error::Unreachable { .. } | Error::Timeout { .. })
            ),
            "{result:?}"
        );
    });
    // Stalled from the start of the call, too.
    let result = timed_lock(&waiter, LATE_WHEN_STALLED);
    assert!(
        matches!(
            result,
            Ok(false) | Err(Error::Unreachable { .. } | Error::Timeout { .. })
        ),
        "{result:?}"
    );
    proxy.heal();
    let ours = held.node().rsplit('/').next().unwrap().to_owned();
    eventually(WAIT, "only the holder's node is left", || {
        nodes(&holder_client, &path) == [ours.clone()]
    });
    drop(held);
    assert!(
        waiter.lock_timeout(WAIT).unwrap().is_some(),
        "the waiter holds once healed"
    );
}

#[test]
fn a_holder_whose_session_expires_is_told_before_another_holds() {
    let proxy = FaultProxy::start(&shared_connect_string()).unwrap();
    let path = unique_path("mutex-expired");
    let (short, other) = (short_session_client(&proxy.connect_string()), client());
    let holder = mutex(&short, &path);
    let next = mutex(&other, &path);
    let guard = holder.lock().unwrap();
    assert!(guard.is_held());
    let next_token = support::expiry::expire_holder(
        &proxy,
        guard.lost(),
        || nodes(&other, &path).len() == 2,
        || next.lock().unwrap().token(),
    );
    assert!(!guard.is_held());
    assert!(next_token > guard.token(), "the next holder's token is larger");
    proxy.heal();
    eventually(WAIT, "the expired holder's client has a new session", || {
        short.state().is_connected()
    });
    assert!(!guard.is_held(), "lost for good");
    drop(guard);
    // The old node went with its session, the next holder's with its guard.
    assert!(nodes(&other, &path).is_empty());
    assert!(
        holder.try_lock().unwrap().is_some(),
        "the expired participant can hold again"
    );
}

#[test]
fn a_holder_whose_node_is_deleted_is_told_and_the_next_waiter_holds() {
    let path = unique_path("mutex-node-deleted");
    let (a, b) = (client(), client());
    let (holder, next) = (mutex(&a, &path), mutex(&b, &path));
    let guard = holder.lock().unwrap();
    let lost = guard.lost();
    thread::scope(|s| {
        let waiting = s.spawn(|| next.lock().unwrap().token());
        eventually(WAIT, "the next participant waits", || nodes(&b, &path).len() == 2);
        b.delete(guard.node(), None).unwrap();
        assert_eq!(
            lost.recv_timeout(WAIT),
            Err(crossbeam_channel::RecvTimeoutError::Disconnected)
        );
        assert!(!guard.is_held());
        assert!(waiting.join().unwrap() > guard.token());
    });
}

#[test]
fn a_holder_that_was_disconnected_no_longer_counts_on_its_hold() {
    let proxy = FaultProxy::start(&shared_connect_string()).unwrap();
    let path = unique_path("mutex-disconnected");
    let cut_off = support::proxied_client(&proxy);
    let holder = mutex(&cut_off, &path);
    let guard = holder.lock().unwrap();
    let session = cut_off.session_id().unwrap();
    proxy.cut();
    eventually(WAIT, "the loss is signalled", || {
        guard.lost().try_recv() == Err(crossbeam_channel::TryRecvError::Disconnected)
    });
    eventually(WAIT, "reconnected", || cut_off.state().is_connected());
    assert_eq!(cut_off.session_id().unwrap(), session, "the session lived on");
    // The server may have expired the session meanwhile: the hold stays in doubt.
    assert!(!guard.is_held());
    drop(guard);
    assert!(nodes(&client(), &path).is_empty(), "its node is deleted on drop");
}

#[test]
fn a_create_whose_reply_was_lost_leaves_one_node_and_the_lock_is_held_once() {
    let proxy = FaultProxy::start(&shared_connect_string()).unwrap();
    let lossy = support::proxied_client(&proxy);
    let path = unique_path("mutex-lost-create");
    let admin = client();
    admin.ensure_path(&path).unwrap();
    let mutex = mutex(&lossy, &path);
    support::logs::start();
    // The create is applied, its reply lost.
    proxy.drop_reply_to(Request::Create);
    let guard = mutex.lock_timeout(WAIT).unwrap().expect("held");
    assert!(!proxy.dropping_reply(), "the fault was injected");
    let ours = guard.node().rsplit('/').next().unwrap().to_owned();
    let found = support::logs::lines_with(&path);
    assert!(
        found
            .iter()
            .any(|l| l.message.ends_with(&format!("its node is {ours}"))),
        "found again by its protected name: {found:?}"
    );
    assert_eq!(nodes(&admin, &path), [ours], "one node, the one held");
    assert!(guard.is_held());
    let other = super::mutex(&admin, &path);
    assert!(other.try_lock().unwrap().is_none(), "held once, by the lossy client");
    drop(guard);
    eventually(WAIT, "no node is left", || nodes(&admin, &path).is_empty());
}

/// The entry test the holder process runs.
const ENTRY: &str = "mutex::faults::holder_process";
const CONNECT: &str = "ZKQ_MUTEX_CONNECT";
const PATH: &str = "ZKQ_MUTEX_PATH";
const OUT: &str = "ZKQ_MUTEX_OUT";

/// The session timeout of the holder process.
const HOLDER_SESSION: Duration = Duration::from_secs(2);

/// Runs in a child process of this test binary: holds the lock at
/// `ZKQ_MUTEX_PATH`, writes `held` to `ZKQ_MUTEX_OUT`, and sleeps until
/// killed. Does nothing without the environment.
#[test]
#[ignore = "run as a child process by a_killed_holder_s_node_goes_with_its_session"]
fn holder_process() {
    let Ok(connect) = std::env::var(CONNECT) else { return };
    let client = ZkClient::builder(&connect)
        .session_timeout(HOLDER_SESSION)
        .connect()
        .expect("the holder connects");
    let mutex = mutex(&client, &std::env::var(PATH).expect("a lock path"));
    let _guard = mutex.lock().expect("the holder holds");
    std::fs::write(std::env::var(OUT).expect("an output file"), "held").expect("report held");
    loop {
        thread::sleep(Duration::from_secs(3600));
    }
}

/// A holder process, killed with `SIGKILL` on drop.
struct Holder(Child);

impl Holder {
    fn spawn(path: &str, out: &Path) -> Holder {
        let child = Command::new(std::env::current_exe().expect("the test binary"))
            .args([ENTRY, "--exact", "--ignored", "--nocapture", "--test-threads=1"])
            .env(CONNECT, shared_connect_string())
            .env(PATH, path)
            .env(OUT, out)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn the holder process");
        Holder(child)
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_killed_holder_s_node_goes_with_its_session_and_the_next_waiter_holds() {
    let path = unique_path("mutex-killed");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("holder.out");
    let mut holder = Holder::spawn(&path, &out);
    eventually(WAIT, "the holder process holds", || out.exists());
    let client = client();
    let next = mutex(&client, &path);
    thread::scope(|s| {
        let waiting = s.spawn(|| {
            let _guard = next.lock().unwrap();
            Instant::now()
        });
        eventually(WAIT, "the next waiter is in the line", || {
            nodes(&client, &path).len() == 2
        });
        holder.0.kill().unwrap();
        let killed = Instant::now();
        holder.0.wait().unwrap();
        let held = waiting.join().unwrap();
        let took = held.duration_since(killed);
        eprintln!("the next waiter held {took:?} after the kill");
        Bound::of(HOLDER_SESSION + Duration::from_secs(1)).check("holding after the kill", took);
    });
}

#[test]
fn under_a_cut_a_partition_past_the_session_and_a_server_restart_mid_hold_no_two_ever_hold() {
    contention::one_holder_under_faults(
        |board, ledger, n, client, hold| {
            let mutex = mutex(client, "/lock");
            board.take_turns(
                n,
                hold,
                ledger,
                |wait| mutex.lock_timeout(wait),
                |guard| guard.is_held(),
            );
        },
        |admin| nodes(admin, "/lock").is_empty(),
    );
}
