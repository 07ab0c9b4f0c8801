//! A member cut off from its quorum and serving read-only (the ensemble runs
//! with `readonlymode.enabled`) is refused: the client never asks for a
//! read-only session, so neither a new client nor a session already open
//! gets an answer from it, and both say which server they tried.

use std::time::{Duration, Instant};

use zk_queue::testing::TestingCluster;
use zk_queue::{Error, ZkClient, ZkClientBuilder};

use super::WAIT;
use crate::support::server::unique_path;
use crate::support::{eventually, Bound};

/// How long each call may wait here.
const CALL: Duration = Duration::from_secs(2);

fn builder(connect: &str) -> ZkClientBuilder {
    ZkClient::builder(connect)
        .session_timeout(Duration::from_secs(20))
        .connection_timeout(CALL)
        .request_timeout(CALL)
}

/// Asserts that `result` is the error of an unreachable ensemble naming
/// `address`, returned within the call's bound.
fn assert_refused<T: std::fmt::Debug>(result: zk_queue::Result<T>, address: &str, started: Instant, what: &str) {
    let took = started.elapsed();
    match result {
        Err(Error::Unreachable { servers, .. }) => assert!(
            servers.iter().any(|s| s.address() == address),
            "{what}: the failures do not name {address}: {servers:?}"
        ),
        other => panic!("{what}: a read-only member answered: {other:?}"),
    }
    Bound::of(CALL).check(what, took);
}

#[test]
fn a_member_serving_read_only_is_refused_by_new_and_open_sessions_alike() {
    let cluster = TestingCluster::start(3).unwrap();
    let survivor = cluster.member_connect_string(0);
    let client = builder(&survivor).connect().unwrap();
    let path = unique_path("read-only");
    client.ensure_path(&path).unwrap();
    client.set_data(&path, b"written", None).unwrap();

    cluster.kill(1).unwrap();
    cluster.kill(2).unwrap();
    eventually(WAIT, "member 0 serves read-only", || cluster.is_read_only(0));

    let started = Instant::now();
    assert_refused(client.get_data(&path), &survivor, started, "an open session's read");
    let started = Instant::now();
    assert_refused(builder(&survivor).connect(), &survivor, started, "a new client");

    // With its quorum back, the member serves the open session again.
    cluster.restart(1).unwrap();
    eventually(WAIT, "member 0 serves read-write", || !cluster.is_read_only(0));
    eventually(WAIT, "the open session is served again", || {
        client.get_data(&path).is_ok_and(|(data, _)| data == b"written")
    });
}
