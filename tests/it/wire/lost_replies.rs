//! A write the server applied whose reply never reached the client: the
//! call reports the unknown outcome (or settles it where the facade can),
//! the server applied the write exactly once, and the client goes on in the
//! same session.

use std::time::Duration;

use crossbeam_channel::Receiver;
use zk_queue::testing::{FaultProxy, Request, TestingServer};
use zk_queue::{
    client::{Acl, CreateMode, Op, Perms, RetryNTimes},
    ConnectionState, Error, ZkClient,
};

use super::{sequence_of, state_changes, wait_for_reattach};
use crate::support::server::unique_path;
use crate::support::{client_of, proxied_client};

/// A server, a proxy to it and a client of the server itself.
struct Rig {
    _server: TestingServer,
    proxy: FaultProxy,
    direct: ZkClient,
}

impl Rig {
    fn start() -> Rig {
        let server = TestingServer::start().unwrap();
        let proxy = FaultProxy::start(&server.connect_string()).unwrap();
        let direct = client_of(&server.connect_string());
        Rig {
            _server: server,
            proxy,
            direct,
        }
    }

    /// A client through the proxy that never retries, so a lost reply is
    /// the call's result.
    fn once_client(&self) -> ZkClient {
        ZkClient::builder(&self.proxy.connect_string())
            .session_timeout(Duration::from_secs(10))
            .connection_timeout(Duration::from_secs(5))
            .request_timeout(Duration::from_secs(5))
            .retry_policy(RetryNTimes::new(0, Duration::ZERO))
            .connect()
            .unwrap()
    }
}

/// Asserts that `result` is the failure of a request whose reply was lost.
fn assert_unknown<T: std::fmt::Debug>(result: Result<T, Error>) {
    assert!(
        matches!(result, Err(Error::ConnectionLoss { .. } | Error::Timeout { .. })),
        "{result:?}"
    );
}

/// Asserts that `client` reattached its session `session` after the fault
/// and serves requests in it.
fn assert_same_session_goes_on(client: &ZkClient, states: &Receiver<ConnectionState>, session: i64) {
    wait_for_reattach(states);
    assert_eq!(client.session_id().unwrap(), session, "a new session");
    client.exists("/").unwrap();
}

#[test]
fn a_create_whose_reply_is_lost_fails_as_unknown_and_was_applied_once() {
    let rig = Rig::start();
    let client = rig.once_client();
    let dir = unique_path("lost-create");
    client.ensure_path(&dir).unwrap();
    let session = client.session_id().unwrap();
    for (mode, name) in [
        (CreateMode::Persistent, "persistent"),
        (CreateMode::PersistentSequential, "sequential-"),
        (CreateMode::EphemeralSequential, "ephemeral-"),
        (CreateMode::Container, "container"),
    ] {
        let states = state_changes(&client);
        let before = client.stats().create;
        rig.proxy.drop_reply_to(Request::Create);
        assert_unknown(client.create(&format!("{dir}/{name}"), name.as_bytes(), mode));
        assert!(!rig.proxy.dropping_reply(), "{mode:?}: the reply was not dropped");
        assert_eq!(client.stats().create - before, 1, "{mode:?}: retried");
        let applied: Vec<String> = rig
            .direct
            .get_children(&dir)
            .unwrap()
            .0
            .into_iter()
            .filter(|child| child.starts_with(name))
            .collect();
        assert_eq!(applied.len(), 1, "{mode:?}: {applied:?}");
        if mode.is_sequential() {
            sequence_of(&format!("{dir}/{}", applied[0]), &format!("{dir}/{name}"));
        }
        let (data, stat) = rig.direct.get_data(&format!("{dir}/{}", applied[0])).unwrap();
        assert_eq!(data, name.as_bytes());
        if mode == CreateMode::EphemeralSequential {
            assert_eq!(stat.ephemeral_owner, session);
        }
        assert_same_session_goes_on(&client, &states, session);
    }
}

#[test]
fn a_delete_whose_reply_is_lost_is_settled_by_its_retry() {
    let rig = Rig::start();
    let client = proxied_client(&rig.proxy);
    let dir = unique_path("lost-delete");
    client.ensure_path(&dir).unwrap();
    let session = client.session_id().unwrap();
    for version in [None, Some(0)] {
        let path = format!("{dir}/node");
        client.create(&path, b"", CreateMode::Persistent).unwrap();
        let states = state_changes(&client);
        let before = client.stats().delete;
        rig.proxy.drop_reply_to(Request::Delete);
        // The retry finds the node gone, which the lost attempt did.
        client.delete(&path, version).unwrap();
        assert!(!rig.proxy.dropping_reply(), "the reply was not dropped");
        assert_eq!(client.stats().delete - before, 2, "sent once, retried once");
        assert!(rig.direct.exists(&path).unwrap().is_none());
        assert_same_session_goes_on(&client, &states, session);
    }
}

#[test]
fn a_delete_whose_reply_is_lost_fails_as_unknown_without_retries_and_was_applied() {
    let rig = Rig::start();
    let client = rig.once_client();
    let path = unique_path("lost-delete-once");
    client.ensure_path(&path).unwrap();
    let session = client.session_id().unwrap();
    let states = state_changes(&client);
    rig.proxy.drop_reply_to(Request::Delete);
    assert_unknown(client.delete(&path, Some(0)));
    assert!(rig.direct.exists(&path).unwrap().is_none());
    assert_same_session_goes_on(&client, &states, session);
}

#[test]
fn a_set_data_whose_reply_is_lost_fails_as_unknown_and_was_applied_once() {
    let rig = Rig::start();
    let client = rig.once_client();
    let path = unique_path("lost-set-data");
    client.ensure_path(&path).unwrap();
    let session = client.session_id().unwrap();
    let states = state_changes(&client);
    rig.proxy.drop_reply_to(Request::SetData);
    assert_unknown(client.set_data(&path, b"new", Some(0)));
    assert!(!rig.proxy.dropping_reply(), "the reply was not dropped");
    let (data, stat) = rig.direct.get_data(&path).unwrap();
    assert_eq!((data.as_slice(), stat.version), (&b"new"[..], 1));
    assert_same_session_goes_on(&client, &states, session);
}

#[test]
fn a_set_acl_whose_reply_is_lost_fails_as_unknown_and_was_applied_once() {
    let rig = Rig::start();
    let client = rig.once_client();
    let path = unique_path("lost-set-acl");
    client.ensure_path(&path).unwrap();
    let session = client.session_id().unwrap();
    let states = state_changes(&client);
    let acl = [Acl::new(Perms::READ | Perms::ADMIN, "world", "anyone")];
    rig.proxy.drop_reply_to(Request::SetAcl);
    assert_unknown(client.set_acl(&path, &acl, Some(0)));
    assert!(!rig.proxy.dropping_reply(), "the reply was not dropped");
    let (read, stat) = rig.direct.get_acl(&path).unwrap();
    assert_eq!((read.as_slice(), stat.aversion), (&acl[..], 1));
    assert_same_session_goes_on(&client, &states, session);
}

#[test]
fn a_multi_whose_reply_is_lost_fails_as_unknown_and_was_applied_once() {
    let rig = Rig::start();
    let client = rig.once_client();
    let dir = unique_path("lost-multi");
    client.ensure_path(&dir).unwrap();
    let a = format!("{dir}/a");
    client.create(&a, b"old", CreateMode::Persistent).unwrap();
    let session = client.session_id().unwrap();
    let states = state_changes(&client);
    rig.proxy.drop_reply_to(Request::Multi);
    assert_unknown(client.multi(&[
        Op::set_data(&a, b"new".to_vec(), None),
        Op::create(format!("{dir}/s-"), Vec::new(), CreateMode::PersistentSequential),
    ]));
    assert!(!rig.proxy.dropping_reply(), "the reply was not dropped");
    let (data, stat) = rig.direct.get_data(&a).unwrap();
    assert_eq!((data.as_slice(), stat.version), (&b"new"[..], 1));
    assert_eq!(rig.direct.get_children(&dir).unwrap().0.len(), 2, "one node created");
    assert_same_session_goes_on(&client, &states, session);
}

#[test]
fn a_retried_multi_guarded_by_a_version_check_is_refused_by_its_check_after_a_lost_reply() {
    let rig = Rig::start();
    let client = proxied_client(&rig.proxy);
    let dir = unique_path("lost-multi-retried");
    client.ensure_path(&dir).unwrap();
    let a = format!("{dir}/a");
    client.create(&a, b"old", CreateMode::Persistent).unwrap();
    let session = client.session_id().unwrap();
    let states = state_changes(&client);
    let before = client.stats().multi;
    rig.proxy.drop_reply_to(Request::Multi);
    // The first attempt was applied; its retry finds the version moved on.
    match client.multi(&[
        Op::check(&a, 0),
        Op::set_data(&a, b"new".to_vec(), None),
        Op::create(format!("{dir}/s-"), Vec::new(), CreateMode::PersistentSequential),
    ]) {
        Err(Error::MultiFailed { index: 0, source }) => {
            assert!(matches!(*source, Error::BadVersion { .. }), "{source:?}")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(client.stats().multi - before, 2, "sent once, retried once");
    let (data, stat) = rig.direct.get_data(&a).unwrap();
    assert_eq!((data.as_slice(), stat.version), (&b"new"[..], 1));
    assert_eq!(rig.direct.get_children(&dir).unwrap().0.len(), 2, "one node created");
    assert_same_session_goes_on(&client, &states, session);
}

#[test]
fn a_batch_whose_reply_is_lost_reports_each_unknown_outcome_and_is_never_sent_twice() {
    let rig = Rig::start();
    let client = proxied_client(&rig.proxy);
    let dir = unique_path("lost-batch");
    client.ensure_path(&dir).unwrap();
    let session = client.session_id().unwrap();

    let states = state_changes(&client);
    let nodes: Vec<(String, Vec<u8>)> = (0..5).map(|_| (format!("{dir}/n-"), Vec::new())).collect();
    let before = client.stats().create;
    rig.proxy.drop_reply_to(Request::Create);
    let created = client.create_many(&nodes, CreateMode::PersistentSequential).unwrap();
    assert_eq!(client.stats().create - before, 5, "a batch is never retried");
    assert!(
        created.iter().any(|r| matches!(r, Err(Error::ConnectionLoss { .. }))),
        "{created:?}"
    );
    let (children, _) = rig.direct.get_children(&dir).unwrap();
    for result in &created {
        match result {
            Ok(path) => assert!(children.iter().any(|c| path.ends_with(c.as_str())), "{path}"),
            Err(e) => assert!(matches!(e, Error::ConnectionLoss { .. }), "{e:?}"),
        }
    }
    let ok = created.iter().filter(|r| r.is_ok()).count();
    assert!(
        (ok.max(1)..=nodes.len()).contains(&children.len()),
        "{} nodes for {ok} confirmed creates: {children:?}",
        children.len()
    );
    assert_same_session_goes_on(&client, &states, session);

    let states = state_changes(&client);
    let deletes: Vec<(String, Option<i32>)> = children.iter().map(|c| (format!("{dir}/{c}"), None)).collect();
    rig.proxy.drop_reply_to(Request::Delete);
    let deleted = client.delete_many(&deletes).unwrap();
    assert!(
        deleted.iter().any(|r| matches!(r, Err(Error::ConnectionLoss { .. }))),
        "{deleted:?}"
    );
    for ((path, _), result) in deletes.iter().zip(&deleted) {
        match result {
            Ok(()) => assert!(rig.direct.exists(path).unwrap().is_none(), "{path}"),
            Err(e) => assert!(matches!(e, Error::ConnectionLoss { .. }), "{e:?}"),
        }
    }
    assert_same_session_goes_on(&client, &states, session);
}
