//! `DoubleBarrier` under faults: a member whose session ends inside holds
//! the others' `leave` up for its session timeout, no longer; the
//! deadlines of `enter_timeout` and `leave_timeout` hold with the server
//! down and with it stalled; a member whose own delete lost its reply
//! finishes leaving.

use std::thread;
use std::time::{Duration, Instant};

use zk_queue::testing::{FaultProxy, Request, TestingServer};
use zk_queue::{recipes::DoubleBarrier, Error};

use super::{member, nodes, WAIT};
use crate::support::server::{shared_connect_string, unique_path};
use crate::support::{client, client_of, eventually, proxied_client, short_session_client, within, Bound};

/// The session timeout of `short_session_client`.
const SHORT_SESSION: Duration = Duration::from_secs(2);

/// Three members enter, then the one named `lost` is partitioned away for
/// good: the other two leave within its session timeout and a second.
fn others_leave_once_the_lost_members_session_ends(lost: &str) {
    let path = unique_path("double-barrier-lost");
    let admin = client();
    let proxy = FaultProxy::start(&shared_connect_string()).unwrap();
    let lost_client = short_session_client(&proxy.connect_string());
    let others: Vec<_> = ["k", "x"].iter().map(|id| member(&client(), &path, 3, id)).collect();
    let lost_member = member(&lost_client, &path, 3, lost);
    thread::scope(|s| {
        s.spawn(|| lost_member.enter().unwrap());
        for other in &others {
            s.spawn(move || other.enter().unwrap());
        }
    });
    proxy.blackhole();
    let cut = Instant::now();
    thread::scope(|s| {
        let leaving: Vec<_> = others
            .iter()
            .map(|other| {
                s.spawn(move || {
                    other.leave().unwrap();
                    cut.elapsed()
                })
            })
            .collect();
        for left in leaving {
            let took = left.join().unwrap();
            eprintln!("left {took:?} after the member {lost} was cut off");
            Bound::of(SHORT_SESSION + Duration::from_secs(1)).check("a leave after the member was cut off", took);
        }
    });
    assert!(nodes(&admin, &path).is_empty(), "no node and no ready left");
    lost_client.close();
}

#[test]
fn a_lowest_member_expired_inside_holds_the_others_leave_up_no_longer_than_its_session() {
    // Sorted first: the others wait for its node to go.
    others_leave_once_the_lost_members_session_ends("a-lost");
}

#[test]
fn a_highest_member_expired_inside_holds_the_others_leave_up_no_longer_than_its_session() {
    // Sorted last: the lowest waits for its node to go.
    others_leave_once_the_lost_members_session_ends("z-lost");
}

#[test]
fn enter_timeout_returns_unreachable_by_its_deadline_with_the_server_down_and_leaves_no_node() {
    let mut server = TestingServer::start().unwrap();
    let connect = server.connect_string();
    let waiter_client = client_of(&connect);
    let waiter = member(&waiter_client, "/round", 2, "waiter");
    let deadline = Duration::from_secs(2);
    thread::scope(|s| {
        let waiting = s.spawn(|| {
            let started = Instant::now();
            (waiter.enter_timeout(deadline), started.elapsed())
        });
        eventually(WAIT, "the member is waiting", || {
            nodes(&client_of(&connect), "/round") == ["waiter"]
        });
        server.stop().unwrap();
        let (result, took) = waiting.join().unwrap();
        eprintln!("enter_timeout({deadline:?}) returned {result:?} after {took:?}");
        assert!(matches!(result, Err(Error::Unreachable { .. })), "{result:?}");
        Bound::past(deadline, Duration::from_millis(200)).check(format!("enter_timeout({deadline:?})"), took);
    });
    server.restart().unwrap();
    let admin = client_of(&connect);
    eventually(WAIT, "its node is deleted in the background", || {
        nodes(&admin, "/round").is_empty()
    });
}

#[test]
fn a_member_counted_just_as_its_enter_timed_out_is_in_after_all() {
    // The member's link is slow (each way): the last member's `ready`
    // reaches it only after its deadline, and its delete reaches the
    // server only after that `ready` was created. It was counted, so the
    // other member is in with it: it must be in too, its node there.
    const LINK: Duration = Duration::from_millis(600);
    let deadline = Duration::from_secs(6);
    let path = unique_path("double-barrier-counted");
    let admin = client();
    admin.ensure_path(&path).unwrap();
    let proxy = FaultProxy::start(&shared_connect_string()).unwrap();
    let slow_client = proxied_client(&proxy);
    let slow = member(&slow_client, &path, 2, "slow");
    let last = member(&client(), &path, 2, "last");
    proxy.set_delay(LINK);
    thread::scope(|s| {
        let started = Instant::now();
        let slow_ref = &slow;
        let entering = s.spawn(move || {
            slow_ref
                .enter_timeout(deadline)
                .map(|entered| (entered, started.elapsed()))
        });
        eventually(WAIT, "the slow member's node is there", || {
            nodes(&admin, &path) == ["slow"]
        });
        // `ready` comes at the slow member's deadline, in the middle of
        // the window a link's delay either side of it.
        thread::sleep(deadline.saturating_sub(started.elapsed()));
        assert!(
            last.enter_timeout(Duration::from_secs(1)).unwrap(),
            "the last member counts two"
        );
        let (entered, took) = entering.join().unwrap().unwrap();
        eprintln!("the slow member's enter_timeout({deadline:?}) returned {entered} after {took:?}");
        assert!(entered, "counted, so in");
        assert!(
            took >= deadline,
            "through its deadline, not by the ready event: {took:?}"
        );
    });
    assert_eq!(nodes(&admin, &path), ["last", "ready", "slow"]);
    proxy.set_delay(Duration::ZERO);
    thread::scope(|s| {
        s.spawn(|| slow.leave().unwrap());
        last.leave().unwrap();
    });
    assert!(nodes(&admin, &path).is_empty());
}

/// The deadline of the timed calls below.
const DEADLINE: Duration = Duration::from_secs(2);

/// How late a timed call may return while the server is down: only the
/// time to notice.
const LATE_WHEN_DOWN: Duration = Duration::from_millis(200);

/// How late a timed call may return while the server is stalled: an answer
/// in flight may take a second more, as documented.
const LATE_WHEN_STALLED: Duration = Duration::from_secs(1);

/// Whether `result` is what a timed call may return with the server
/// stalled: not through, or the error that says why (`Timeout` from a
/// server that did not answer, `Unreachable` once the client gave the
/// stalled connection up; never the `ConnectionLoss` of a request in
/// flight then).
fn stalled(result: &Result<bool, Error>) -> bool {
    matches!(
        result,
        Ok(false) | Err(Error::Unreachable { .. } | Error::Timeout { .. })
    )
}

/// Runs `call` (a timed call of `member`, with [`DEADLINE`]) while it waits,
/// landing `fault` once `waiting` says it waits, then again with the fault
/// in place from the start; each within the deadline plus `late`, its result
/// as `expected` says.
fn through_a_fault(
    what: &str,
    late: Duration,
    call: impl Fn() -> Result<bool, Error> + Sync,
    waiting: impl FnMut() -> bool,
    fault: impl FnOnce(),
    expected: impl Fn(&Result<bool, Error>) -> bool,
) {
    let timed = || within(&format!("{what}({DEADLINE:?})"), Bound::past(DEADLINE, late), &call);
    thread::scope(|s| {
        let pending = s.spawn(timed);
        eventually(WAIT, "the member waits", waiting);
        fault();
        let result = pending.join().unwrap();
        assert!(expected(&result), "{result:?}");
    });
    let result = timed();
    assert!(expected(&result), "{result:?}");
}

/// How late `enter_timeout` may return while the server is stalled, as
/// documented: a member that gives up takes its node back after the
/// deadline, waiting a second for that, and a second more for the answer
/// in flight.
const LATE_WHEN_STALLED_GIVING_UP: Duration = Duration::from_secs(2);

#[test]
fn enter_timeout_returns_by_its_deadline_and_its_withdrawal_with_the_server_stalled_and_leaves_no_node() {
    let proxy = FaultProxy::start(&shared_connect_string()).unwrap();
    let path = unique_path("double-barrier-enter-stalled");
    let admin = client();
    let stalled_client = proxied_client(&proxy);
    let waiter = member(&stalled_client, &path, 2, "waiter");
    through_a_fault(
        "enter_timeout",
        LATE_WHEN_STALLED_GIVING_UP,
        || waiter.enter_timeout(DEADLINE),
        || nodes(&admin, &path) == ["waiter"],
        || proxy.blackhole(),
        stalled,
    );
    proxy.heal();
    eventually(WAIT, "its node is deleted", || nodes(&admin, &path).is_empty());
}

/// Two members in, the one of `leaver_client` leaving with
/// `leave_timeout` while the other stays inside; `fault` lands while it
/// waits, then again before it calls.
fn leave_with_one_inside(
    leaver_client: &zk_queue::ZkClient,
    admin: &zk_queue::ZkClient,
    path: &str,
    late: Duration,
    fault: impl FnOnce(),
    expected: impl Fn(&Result<bool, Error>) -> bool,
) -> (DoubleBarrier, DoubleBarrier) {
    // Sorted after the other, the leaver deletes its node first and waits
    // for the other's.
    let leaver = member(leaver_client, path, 2, "z-leaver");
    let stayer = member(admin, path, 2, "a-stayer");
    thread::scope(|s| {
        s.spawn(|| stayer.enter().unwrap());
        leaver.enter().unwrap();
    });
    through_a_fault(
        "leave_timeout",
        late,
        || leaver.leave_timeout(DEADLINE),
        || nodes(admin, path) == ["a-stayer", "ready"],
        fault,
        expected,
    );
    (leaver, stayer)
}

#[test]
fn leave_timeout_returns_unreachable_by_its_deadline_with_the_server_down() {
    let mut server = TestingServer::start().unwrap();
    let connect = server.connect_string();
    let (leaver_client, admin) = (client_of(&connect), client_of(&connect));
    let (leaver, stayer) = leave_with_one_inside(
        &leaver_client,
        &admin,
        "/round",
        LATE_WHEN_DOWN,
        || server.stop().unwrap(),
        |result| matches!(result, Err(Error::Unreachable { .. })),
    );
    server.restart().unwrap();
    thread::scope(|s| {
        s.spawn(|| stayer.leave().unwrap());
        leaver.leave().unwrap();
    });
    assert!(nodes(&admin, "/round").is_empty(), "no node and no ready left");
}

#[test]
fn leave_timeout_returns_by_its_deadline_with_the_server_stalled() {
    let proxy = FaultProxy::start(&shared_connect_string()).unwrap();
    let path = unique_path("double-barrier-leave-stalled");
    let (leaver_client, admin) = (proxied_client(&proxy), client());
    let (leaver, stayer) = leave_with_one_inside(
        &leaver_client,
        &admin,
        &path,
        LATE_WHEN_STALLED,
        || proxy.blackhole(),
        stalled,
    );
    proxy.heal();
    both_leave(&stayer, &leaver, &admin, &path);
}

#[test]
fn a_member_whose_own_delete_lost_its_reply_finishes_leaving_after_all() {
    let proxy = FaultProxy::start(&shared_connect_string()).unwrap();
    let path = unique_path("double-barrier-leave-lost-delete");
    let (leaver_client, admin) = (proxied_client(&proxy), client());
    // Sorted after the other, the leaver deletes its node first.
    let leaver = member(&leaver_client, &path, 2, "z-leaver");
    let stayer = member(&admin, &path, 2, "a-stayer");
    thread::scope(|s| {
        s.spawn(|| stayer.enter().unwrap());
        leaver.enter().unwrap();
    });
    // The leaver's delete of its own node is applied, but its reply is lost
    // and the connection stalls: the timed leave gives up not knowing.
    proxy.drop_reply_to_then_blackhole(Request::Delete);
    let timed_out = leaver.leave_timeout(DEADLINE);
    assert!(!matches!(timed_out, Ok(true)), "{timed_out:?}");
    assert_eq!(nodes(&admin, &path), ["a-stayer", "ready"], "its delete was applied");
    proxy.heal();
    // Its node is gone by its own delete, not by another's.
    both_leave(&stayer, &leaver, &admin, &path);
}

/// After a healed fault, both members leave; the leaver's connection may
/// still be the stalled one, whose requests fail until the client gives it
/// up: a retryable error, retried. Nothing is left at `path`.
fn both_leave(stayer: &DoubleBarrier, leaver: &DoubleBarrier, admin: &zk_queue::ZkClient, path: &str) {
    thread::scope(|s| {
        s.spawn(|| stayer.leave().unwrap());
        let started = Instant::now();
        while let Err(e) = leaver.leave() {
            assert!(e.is_retryable() && started.elapsed() < WAIT, "{e}");
        }
    });
    assert!(nodes(admin, path).is_empty(), "no node and no ready left");
}
