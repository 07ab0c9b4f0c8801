//! A session reattached after a dropped connection: the client sets its
//! watches again on the server, so a change made while it was away fires
//! them, and authenticates again.

use std::time::Duration;

use zk_queue::testing::{FaultProxy, TestingServer};
use zk_queue::{
    client::{Acl, CreateMode},
    ConnectionState, Error, ZkClient,
};

use crate::support::{client_of, server::unique_path, wait_for_state};

/// The longest wait for a state or a watch.
const WAIT: Duration = Duration::from_secs(30);

fn proxied(proxy: &FaultProxy, auth: Option<&[u8]>) -> ZkClient {
    let mut builder = ZkClient::builder(&proxy.connect_string())
        .session_timeout(Duration::from_secs(10))
        .connection_timeout(Duration::from_secs(5))
        .request_timeout(Duration::from_secs(5));
    if let Some(auth) = auth {
        builder = builder.add_auth("digest", auth);
    }
    builder.connect().unwrap()
}

#[test]
fn a_child_watch_fires_after_a_reattach_for_a_child_created_while_the_client_was_away() {
    let server = TestingServer::start().unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).unwrap();
    let client = proxied(&proxy, None);
    let direct = client_of(&server.connect_string());
    let (changed, unchanged) = (unique_path("reattach-changed"), unique_path("reattach-unchanged"));
    client.ensure_path(&changed).unwrap();
    client.ensure_path(&unchanged).unwrap();
    let states = client.state_listener();
    let (_, _, watch) = client.get_children_watch(&changed).unwrap();
    let (_, _, quiet) = client.get_children_watch(&unchanged).unwrap();

    // The event of this create is swallowed with the connection.
    proxy.blackhole();
    direct
        .create(&format!("{changed}/item"), b"", CreateMode::Persistent)
        .unwrap();
    assert!(
        !watch.wait_timeout(Duration::from_millis(300)),
        "the event crossed the blackhole"
    );
    proxy.heal();
    wait_for_state(&states, ConnectionState::Reconnected, WAIT);

    assert!(
        watch.wait_timeout(WAIT),
        "the watch set again did not fire for the child created while the client was away"
    );
    // A disconnection alone fires nothing: the watch on the unchanged node waits on.
    direct
        .create(&format!("{changed}/marker"), b"", CreateMode::Persistent)
        .unwrap();
    let (_, _, marker) = client.get_children_watch(&changed).unwrap();
    direct
        .create(&format!("{changed}/second"), b"", CreateMode::Persistent)
        .unwrap();
    assert!(marker.wait_timeout(WAIT), "the connection serves events again");
    assert!(
        !quiet.is_fired(),
        "a watch on an unchanged node fired after the reattach"
    );
    direct
        .create(&format!("{unchanged}/item"), b"", CreateMode::Persistent)
        .unwrap();
    assert!(
        quiet.wait_timeout(WAIT),
        "the unchanged node's watch, set again, fires on its change"
    );
}

#[test]
fn authentication_is_sent_again_after_a_reconnect() {
    let server = TestingServer::start().unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).unwrap();
    let client = proxied(&proxy, Some(b"alice:secret"));
    let path = unique_path("reattach-auth");
    client.ensure_path(&path).unwrap();
    let private = format!("{path}/private");
    client
        .create_with_acl(&private, b"mine", CreateMode::Persistent, &[Acl::creator_all()])
        .unwrap();
    let stranger = client_of(&server.connect_string());
    assert!(matches!(stranger.get_data(&private), Err(Error::NotAuthorized { .. })));

    let states = client.state_listener();
    let session = client.session_id().unwrap();
    for _ in 0..2 {
        proxy.cut();
        wait_for_state(&states, ConnectionState::Suspended, WAIT);
        wait_for_state(&states, ConnectionState::Reconnected, WAIT);
        assert_eq!(client.session_id().unwrap(), session);
        assert_eq!(client.get_data(&private).unwrap().0, b"mine");
    }
}
