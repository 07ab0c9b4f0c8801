//! The blocking client facade: idempotent paths, multi, states, close, auth.

use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::RecvTimeoutError;
use zk_queue::testing::{FaultProxy, TestingServer};
use zk_queue::{
    client::{Acl, CreateMode, Op, OpResult, RetryNTimes},
    ConnectionState, Error, SimpleQueue, ZkClient,
};

use crate::support::{
    client, client_of, proxied_client, server::shared_connect_string, server::unique_path, wait_for_watches,
    CloseOnPanic,
};

#[test]
fn ensure_path_is_idempotent_under_concurrent_callers() {
    let path = unique_path("ensure") + "/a/b/c";
    let clients: Vec<ZkClient> = (0..6).map(|_| client()).collect();
    thread::scope(|s| {
        for c in &clients {
            let path = &path;
            s.spawn(move || c.ensure_path(path).unwrap());
        }
    });
    clients[0].ensure_path(&path).unwrap();
    assert!(clients[0].exists(&path).unwrap().is_some());
}

#[test]
fn sequential_create_returns_the_created_path_and_stat() {
    let client = client();
    let dir = unique_path("seq");
    client.ensure_path(&dir).unwrap();
    let (first, stat) = client
        .create(&format!("{dir}/n-"), b"abc", CreateMode::PersistentSequential)
        .unwrap();
    let (second, _) = client
        .create(&format!("{dir}/n-"), b"", CreateMode::PersistentSequential)
        .unwrap();
    assert_eq!(first, format!("{dir}/n-0000000000"));
    assert_eq!(second, format!("{dir}/n-0000000001"));
    assert_eq!(stat.data_length, 3);
    let (data, read) = client.get_data(&first).unwrap();
    assert_eq!((data.as_slice(), read.czxid), (&b"abc"[..], stat.czxid));
}

#[test]
fn typed_errors_for_zookeeper_answers() {
    let client = client();
    let dir = unique_path("answers");
    assert!(matches!(client.get_data(&dir), Err(Error::NoNode { path }) if path == dir));
    client.ensure_path(&dir).unwrap();
    assert!(matches!(
        client.create(&dir, b"", CreateMode::Persistent),
        Err(Error::NodeExists { .. })
    ));
    assert!(matches!(
        client.set_data(&dir, b"x", Some(7)),
        Err(Error::BadVersion { .. })
    ));
    client
        .create(&format!("{dir}/child"), b"", CreateMode::Persistent)
        .unwrap();
    assert!(matches!(client.delete(&dir, None), Err(Error::NotEmpty { .. })));
    assert_eq!(client.set_data(&dir, b"x", Some(0)).unwrap().version, 1);
}

#[test]
fn multi_applies_all_or_nothing() {
    let client = client();
    let dir = unique_path("multi");
    client.ensure_path(&dir).unwrap();
    let item = format!("{dir}/item");
    client.create(&item, b"v", CreateMode::Persistent).unwrap();
    let results = client
        .multi(&[
            Op::check(&item, 0),
            Op::delete(&item, None),
            Op::create(format!("{dir}/moved-"), b"v".to_vec(), CreateMode::PersistentSequential),
        ])
        .unwrap();
    assert_eq!(results[..2], [OpResult::Check, OpResult::Delete]);
    assert_eq!(
        results[2],
        OpResult::Create {
            path: format!("{dir}/moved-0000000001")
        }
    );
    // A failing check leaves everything as it was.
    let moved = format!("{dir}/moved-0000000001");
    let err = client
        .multi(&[Op::delete(&moved, None), Op::check(&moved, 5)])
        .unwrap_err();
    match err {
        Error::MultiFailed { index, source } => {
            assert_eq!(index, 1);
            assert!(
                matches!(*source, Error::NoNode { .. } | Error::BadVersion { .. }),
                "{source:?}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(client.exists(&moved).unwrap().is_some());
}

#[test]
fn state_listener_reports_connected_then_disconnects_on_close() {
    let client = client();
    let states = client.state_listener();
    assert_eq!(
        states.recv_timeout(Duration::from_secs(1)).unwrap(),
        ConnectionState::Connected
    );
    client.close();
    // A timeout would mean the channel outlived the client.
    match states.recv_timeout(Duration::from_secs(5)) {
        Err(RecvTimeoutError::Disconnected) => {}
        other => panic!("the channel closes with the client, got {other:?}"),
    }
    assert!(matches!(client.exists("/"), Err(Error::Closed)));
    client.close();
}

#[test]
fn close_wakes_a_blocked_take_with_closed() {
    // A server of its own: the take's watch is the only one on it.
    let server = TestingServer::start().unwrap();
    let client = client_of(&server.connect_string());
    let queue = SimpleQueue::new(&client, &unique_path("close-wakes")).unwrap();
    let (result, woken_after) = thread::scope(|s| {
        let _guard = CloseOnPanic(&client);
        let taker = s.spawn(|| queue.take());
        // The take found the queue empty and waits on its watch.
        wait_for_watches(&server, 1);
        assert!(!taker.is_finished());
        let closed = Instant::now();
        client.close();
        (taker.join().unwrap(), closed.elapsed())
    });
    assert!(matches!(result, Err(Error::Closed)), "{result:?}");
    assert!(woken_after < Duration::from_secs(5), "{woken_after:?}");
}

#[test]
fn digest_auth_protects_nodes_from_other_clients() {
    let connect = shared_connect_string();
    let owner = ZkClient::builder(&connect)
        .add_auth("digest", b"alice:secret")
        .default_acl(vec![Acl::creator_all()])
        .retry_policy(RetryNTimes::new(0, Duration::ZERO))
        .connect()
        .unwrap();
    let parent = unique_path("acl");
    client().ensure_path(&parent).unwrap();
    let path = format!("{parent}/secret");
    owner.create(&path, b"", CreateMode::Persistent).unwrap();
    let item = format!("{path}/item");
    owner.create(&item, b"private", CreateMode::Persistent).unwrap();
    let stranger = client();
    assert!(matches!(stranger.get_data(&item), Err(Error::NotAuthorized { .. })));
    assert!(matches!(stranger.get_children(&path), Err(Error::NotAuthorized { .. })));
    // Deleting a child needs DELETE on its parent.
    assert!(matches!(stranger.delete(&item, None), Err(Error::NotAuthorized { .. })));
    assert!(matches!(
        stranger.create(&format!("{path}/x"), b"", CreateMode::Persistent),
        Err(Error::NotAuthorized { .. })
    ));
    let friend = ZkClient::builder(&connect)
        .add_auth("digest", b"alice:secret")
        .connect()
        .unwrap();
    assert_eq!(friend.get_data(&item).unwrap().0, b"private");
}

#[test]
fn child_watch_fires_on_a_new_child_and_not_before() {
    let client = client();
    let dir = unique_path("child-watch");
    client.ensure_path(&dir).unwrap();
    let (names, stat, watch) = client.get_children_watch(&dir).unwrap();
    assert!(names.is_empty());
    assert_eq!(stat.num_children, 0);
    assert!(
        !watch.wait_timeout(Duration::from_millis(200)),
        "fired without a change"
    );
    assert!(!watch.is_fired());
    let other = crate::support::client();
    other.create(&format!("{dir}/a"), b"", CreateMode::Persistent).unwrap();
    assert!(watch.wait_timeout(Duration::from_secs(10)));
    assert!(watch.is_fired());
    // One-shot: a new watch is needed for the next change.
    let (names, _, watch) = client.get_children_watch(&dir).unwrap();
    assert_eq!(names, ["a"]);
    other.delete(&format!("{dir}/a"), None).unwrap();
    watch.wait();
}

#[test]
fn stats_count_requests_by_kind() {
    let client = client();
    let dir = unique_path("stats");
    let before = client.stats();
    client.ensure_path(&dir).unwrap();
    client.get_children(&dir).unwrap();
    client.get_data(&dir).unwrap();
    let after = client.stats();
    assert_eq!(after.get_children - before.get_children, 1);
    assert_eq!(after.get_data - before.get_data, 1);
    assert!(after.exists > before.exists && after.create > before.create);
}

#[test]
fn stats_count_the_time_a_request_waited_for_its_answer_and_not_the_idle_time() {
    const DELAY: Duration = Duration::from_millis(300);
    let proxy = FaultProxy::start(&shared_connect_string()).unwrap();
    let client = proxied_client(&proxy);
    client.exists("/").unwrap();
    let before_idle = client.stats().waiting;
    // Idle, with pings going out (they are not requests a caller waits on).
    thread::sleep(DELAY * 2);
    let after_idle = client.stats().waiting;
    // A measured time: bounded, not compared for equality. Counted, the
    // idle time would add at least twice the delay.
    let idle_counted = after_idle - before_idle;
    assert!(
        idle_counted < DELAY,
        "idle time is not waiting: {idle_counted:?} counted"
    );
    proxy.set_delay(DELAY);
    let started = Instant::now();
    client.exists("/").unwrap();
    let call = started.elapsed();
    let waited = client.stats().waiting - after_idle;
    assert!(
        waited >= DELAY && waited <= call,
        "waited {waited:?} in a call of {call:?}"
    );
}

#[test]
fn batches_run_pipelined_with_a_result_per_request_in_order() {
    let client = client();
    let dir = unique_path("batch");
    client.ensure_path(&dir).unwrap();
    let mut nodes: Vec<(String, Vec<u8>)> = (0..2_500u32)
        .map(|i| (format!("{dir}/n-"), i.to_be_bytes().to_vec()))
        .collect();
    nodes.insert(7, ("not a path".into(), vec![]));
    nodes.insert(9, (format!("{dir}/missing/child"), vec![]));
    let before = client.stats();
    let created = client.create_many(&nodes, CreateMode::PersistentSequential).unwrap();
    assert_eq!(
        client.stats().create - before.create,
        2_501,
        "the invalid path was not sent"
    );
    assert!(matches!(created[7], Err(Error::InvalidPath { .. })));
    assert!(matches!(created[9], Err(Error::NoNode { .. })));
    let paths: Vec<String> = created.into_iter().filter_map(Result::ok).collect();
    assert_eq!(paths.len(), 2_500);
    assert!(paths.windows(2).all(|w| w[0] < w[1]), "created in request order");
    let read = client.get_data_many(&paths).unwrap();
    for (i, r) in read.iter().enumerate() {
        assert_eq!(r.as_ref().unwrap().0, (i as u32).to_be_bytes());
    }
    let mut deletes: Vec<(String, Option<i32>)> = paths.iter().map(|p| (p.clone(), Some(0))).collect();
    deletes[3].1 = Some(5);
    let deleted = client.delete_many(&deletes).unwrap();
    assert!(matches!(deleted[3], Err(Error::BadVersion { .. })));
    assert_eq!(deleted.iter().filter(|r| r.is_ok()).count(), 2_499);
    assert_eq!(client.get_children(&dir).unwrap().0.len(), 1);
}
