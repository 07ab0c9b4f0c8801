//! The kazoo queues' timed and `try_` takes hold their deadlines with the
//! server down or stalled, and say so in the recipes' one vocabulary.

use std::thread;
use std::time::Duration;

use zk_queue::client::RetryNTimes;
use zk_queue::recipes::{KazooLockingQueue, KazooQueue};
use zk_queue::testing::{FaultProxy, TestingServer};
use zk_queue::{ConnectionState, Error, ZkClient};

use super::items;
use super::peer::kazoo_put;
use crate::support::server::unique_path;
use crate::support::{
    client_of, proxied_client, session_marker, wait_for_server_expiry, wait_for_state, wait_for_watches, within, Bound,
    CloseOnPanic,
};

/// A take's own bound.
const BOUND: Duration = Duration::from_secs(2);

/// How late a call may return with the server down: the request's grace.
const LATE_WHEN_DOWN: Duration = Duration::from_millis(200);

/// How late a call may return with the server stalled: an answer in flight.
const LATE_WHEN_STALLED: Duration = Duration::from_secs(1);

/// How long a `try_` call may wait for a server.
const TRY_WAIT: Duration = Duration::from_secs(1);

/// The longest wait for a state change.
const WAIT: Duration = Duration::from_secs(30);

#[test]
fn waiting_and_try_takes_end_with_unreachable_by_their_deadline_with_the_server_down() {
    let mut server = TestingServer::start().unwrap();
    let client = client_of(&server.connect_string());
    let states = client.state_listener();
    let queue = KazooQueue::new(&client, &unique_path("kazoo-down-queue")).unwrap();
    let locking = KazooLockingQueue::new(&client, &unique_path("kazoo-down-locking")).unwrap();
    thread::scope(|s| {
        let plain = s.spawn(|| {
            within("KazooQueue::take_timeout", Bound::past(BOUND, LATE_WHEN_DOWN), || {
                queue.take_timeout(BOUND)
            })
        });
        let locked = s.spawn(|| {
            within(
                "KazooLockingQueue::take_timeout",
                Bound::past(BOUND, LATE_WHEN_DOWN),
                || locking.take_timeout(BOUND).map(|e| e.map(|e| e.name().to_owned())),
            )
        });
        // One watch for the plain queue, two (entries, locks) for the locking one.
        wait_for_watches(&server, 3);
        server.stop().unwrap();
        let plain = plain.join().unwrap();
        assert!(matches!(plain, Err(Error::Unreachable { .. })), "{plain:?}");
        let locked = locked.join().unwrap();
        assert!(matches!(locked, Err(Error::Unreachable { .. })), "{locked:?}");
    });
    wait_for_state(&states, ConnectionState::Suspended, WAIT);
    let plain = within("KazooQueue::try_take", Bound::past(TRY_WAIT, LATE_WHEN_DOWN), || {
        queue.try_take()
    });
    assert!(matches!(plain, Err(Error::Unreachable { .. })), "{plain:?}");
    let locked = within(
        "KazooLockingQueue::try_take",
        Bound::past(TRY_WAIT, LATE_WHEN_DOWN),
        || locking.try_take().map(|e| e.is_some()),
    );
    assert!(matches!(locked, Err(Error::Unreachable { .. })), "{locked:?}");
}

#[test]
fn waiting_takes_end_with_nothing_by_their_deadline_with_the_server_stalled() {
    let server = TestingServer::start().unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).unwrap();
    let client = proxied_client(&proxy);
    let queue = KazooQueue::new(&client, &unique_path("kazoo-stalled-queue")).unwrap();
    let locking = KazooLockingQueue::new(&client, &unique_path("kazoo-stalled-locking")).unwrap();
    let (queue, locking) = (&queue, &locking);
    thread::scope(|s| {
        let bound = BOUND + LATE_WHEN_STALLED;
        let plain = s.spawn(move || within("KazooQueue::take_timeout", bound, || queue.take_timeout(BOUND)));
        let locked = s.spawn(move || {
            within("KazooLockingQueue::take_timeout", bound, || {
                locking.take_timeout(BOUND).map(|e| e.map(|e| e.name().to_owned()))
            })
        });
        wait_for_watches(&server, 3);
        proxy.blackhole();
        // Connected as far as the client can tell, waiting: nothing taken.
        assert!(matches!(plain.join().unwrap(), Ok(None)));
        assert!(matches!(locked.join().unwrap(), Ok(None)));
    });
    proxy.heal();
}

#[test]
fn takes_without_deadline_ride_out_a_partition_past_the_request_timeout_and_the_session_and_get_what_kazoo_puts_after_it(
) {
    let server = TestingServer::start().unwrap();
    let connect = server.connect_string();
    let proxy = FaultProxy::start(&connect).unwrap();
    // Requests give up after 1 s and the session ends 2 s into the
    // partition: both are met while the takes wait, which have no deadline
    // of their own.
    let client = ZkClient::builder(&proxy.connect_string())
        .session_timeout(Duration::from_secs(2))
        .connection_timeout(Duration::from_secs(2))
        .request_timeout(Duration::from_secs(1))
        .retry_policy(RetryNTimes::new(1, Duration::from_millis(100)))
        .connect()
        .unwrap();
    let direct = client_of(&connect);
    let states = client.state_listener();
    let (plain_path, locking_path) = (unique_path("kazoo-expiry-queue"), unique_path("kazoo-expiry-locking"));
    let queue = KazooQueue::new(&client, &plain_path).unwrap();
    let locking = KazooLockingQueue::new(&client, &locking_path).unwrap();
    let marker = session_marker(&client, &direct);
    thread::scope(|s| {
        // Ends the takes if the test fails.
        let _close = CloseOnPanic(&client);
        let plain = s.spawn(|| queue.take());
        let locked = s.spawn(|| locking.take().map(|e| e.data().to_vec()));
        wait_for_watches(&server, 3);
        proxy.blackhole();
        wait_for_server_expiry(&direct, &marker);
        proxy.heal();
        wait_for_state(&states, ConnectionState::Lost, WAIT);
        kazoo_put(&connect, &plain_path, "queue", &items("after", &[100]));
        kazoo_put(&connect, &locking_path, "locking", &items("after", &[100]));
        assert_eq!(plain.join().unwrap().unwrap(), b"after-0");
        assert_eq!(locked.join().unwrap().unwrap(), b"after-0");
    });
}
