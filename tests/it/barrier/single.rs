//! `Barrier`: waiters held while the node exists and released together
//! when it goes; `wait_timeout` by its deadline, with the server down or
//! stalled too.

use std::thread;
use std::time::{Duration, Instant};

use zk_queue::client::{Acl, Perms};
use zk_queue::testing::{FaultProxy, TestingServer};
use zk_queue::{recipes::Barrier, Error};

use super::WAIT;
use crate::support::server::unique_path;
use crate::support::{client, client_of, eventually, proxied_client, wait_for_watches, within, Bound};

/// The deadline of the timed waits below.
const DEADLINE: Duration = Duration::from_secs(2);

/// How late a timed call may return while the server is down: only the
/// time to notice.
const LATE_WHEN_DOWN: Duration = Duration::from_millis(200);

/// The deadline of the timed wait on a set barrier with the server up.
const SHORT_DEADLINE: Duration = Duration::from_millis(500);

/// How late that wait may return with the server up.
const LATE_WHEN_UP: Duration = Duration::from_millis(200);

/// How soon a waiter is released once the barrier node is deleted: the
/// watch's event and the waiter's check of the node.
const RELEASED_WITHIN: Duration = Duration::from_millis(500);

#[test]
fn every_waiter_is_released_when_the_barrier_is_removed() {
    let path = unique_path("barrier-release");
    let admin = client();
    let barrier = Barrier::new(&admin, &path).unwrap();
    assert!(barrier.wait_timeout(Duration::ZERO).unwrap(), "not set: no wait");
    barrier.set_barrier().unwrap();
    barrier.set_barrier().unwrap();
    let stat = admin.exists(&path).unwrap().expect("the barrier node");
    assert_eq!(stat.ephemeral_owner, 0, "a persistent node, as Curator's");
    thread::scope(|s| {
        let waiters: Vec<_> = (0..4)
            .map(|_| {
                let path = &path;
                s.spawn(move || {
                    let waiter = Barrier::new(&client(), path).unwrap();
                    waiter.wait().unwrap();
                    Instant::now()
                })
            })
            .collect();
        // Held while the node exists: a timed wait ends at its deadline.
        let started = Instant::now();
        assert!(!barrier.wait_timeout(SHORT_DEADLINE).unwrap());
        let took = started.elapsed();
        assert!(took >= SHORT_DEADLINE, "returned before its deadline, after {took:?}");
        Bound::past(SHORT_DEADLINE, LATE_WHEN_UP).check("a timed wait on a set barrier", took);
        assert!(
            waiters.iter().all(|w| !w.is_finished()),
            "no waiter passes a set barrier"
        );
        let removed = Instant::now();
        Barrier::new(&client(), &path).unwrap().remove_barrier().unwrap();
        for waiter in waiters {
            let released = waiter.join().unwrap();
            eprintln!("a waiter was released {:?} after the removal", released - removed);
            Bound::of(RELEASED_WITHIN).check("a waiter's release after the removal", released - removed);
        }
    });
    barrier.remove_barrier().unwrap();
    assert!(admin.exists(&path).unwrap().is_none());
}

#[test]
fn wait_timeout_returns_unreachable_by_its_deadline_with_the_server_down() {
    let mut server = TestingServer::start().unwrap();
    let client = client_of(&server.connect_string());
    let barrier = Barrier::new(&client, "/app/barrier").unwrap();
    barrier.set_barrier().unwrap();
    let timed_wait = || {
        let started = Instant::now();
        let result = barrier.wait_timeout(DEADLINE);
        let took = started.elapsed();
        eprintln!("wait_timeout({DEADLINE:?}) returned {result:?} after {took:?}");
        Bound::past(DEADLINE, LATE_WHEN_DOWN).check(format!("wait_timeout({DEADLINE:?})"), took);
        result
    };
    thread::scope(|s| {
        let waiting = s.spawn(timed_wait);
        // Down while it waits on its watch: the server holds that watch.
        wait_for_watches(&server, 1);
        assert!(!waiting.is_finished(), "the wait ended before the server went down");
        server.stop().unwrap();
        let result = waiting.join().unwrap();
        assert!(matches!(result, Err(Error::Unreachable { .. })), "{result:?}");
    });
    eventually(WAIT, "the client notices", || !client.state().is_connected());
    // Down from the start of the call, too.
    let result = timed_wait();
    assert!(matches!(result, Err(Error::Unreachable { .. })), "{result:?}");
}

#[test]
fn wait_timeout_returns_by_its_deadline_with_the_server_stalled() {
    const LATE_WHEN_STALLED: Duration = Duration::from_secs(1);
    // A server of its own, so its watch count is the waiter's.
    let server = TestingServer::start().unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).unwrap();
    let path = unique_path("barrier-stalled");
    let stalled_client = proxied_client(&proxy);
    let barrier = Barrier::new(&stalled_client, &path).unwrap();
    barrier.set_barrier().unwrap();
    let stalled = |result: &Result<bool, Error>| {
        matches!(
            result,
            Ok(false) | Err(Error::Unreachable { .. } | Error::Timeout { .. })
        )
    };
    let timed_wait = || {
        within(
            &format!("wait_timeout({DEADLINE:?})"),
            Bound::past(DEADLINE, LATE_WHEN_STALLED),
            || barrier.wait_timeout(DEADLINE),
        )
    };
    thread::scope(|s| {
        let waiting = s.spawn(timed_wait);
        // Stalled while it waits on its watch: the server holds that watch.
        wait_for_watches(&server, 1);
        assert!(!waiting.is_finished(), "the wait ended before the stall");
        proxy.blackhole();
        let result = waiting.join().unwrap();
        assert!(stalled(&result), "{result:?}");
    });
    // Stalled from the start of the call, too.
    let result = timed_wait();
    assert!(stalled(&result), "{result:?}");
    proxy.heal();
    Barrier::new(&client_of(&server.connect_string()), &path)
        .unwrap()
        .remove_barrier()
        .unwrap();
    // Its connection may still be the stalled one, whose requests fail
    // until the client gives it up: a retryable error, retried.
    let started = Instant::now();
    loop {
        match barrier.wait_timeout(WAIT) {
            Ok(released) => break assert!(released, "released once healed"),
            Err(e) => assert!(e.is_retryable() && started.elapsed() < WAIT, "{e}"),
        }
    }
}

#[test]
fn a_built_barrier_sets_its_node_with_the_data_and_acl_given_and_refuses_bad_settings() {
    let parent = unique_path("barrier-built");
    let path = format!("{parent}/gate");
    let admin = client();
    admin.ensure_path(&parent).unwrap();
    // Everything but ADMIN: not the default ACL.
    let acl = vec![Acl::new(
        Perms::READ | Perms::WRITE | Perms::CREATE | Perms::DELETE,
        "world",
        "anyone",
    )];
    let barrier = Barrier::builder(&admin, &path)
        .data("deploy 42")
        .acl(acl.clone())
        .build()
        .unwrap();
    barrier.set_barrier().unwrap();
    let reader = client();
    assert_eq!(reader.get_data(&path).unwrap().0, b"deploy 42");
    assert_eq!(reader.get_acl(&path).unwrap().0, acl);
    barrier.remove_barrier().unwrap();
    assert!(reader.exists(&path).unwrap().is_none());

    assert!(matches!(
        Barrier::builder(&admin, &path).acl(Vec::new()).build(),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        Barrier::builder(&admin, "/").build(),
        Err(Error::InvalidPath { .. })
    ));
}
