//! A session over TLS, and one that survives a cut connection and a
//! restarted server: it is reattached over a new TLS connection, with its
//! ephemeral node and its watches; a request over a stalled TLS connection
//! returns by its timeout.

use std::time::Duration;

use zk_queue::client::{CreateMode, RetryNTimes};
use zk_queue::testing::{FaultProxy, ServerCertificate};
use zk_queue::{ConnectionState, ZkClient};

use super::{shared_secure_connect_string, tls_client_of, tls_server, trusting};
use crate::support::server::unique_path;
use crate::support::{wait_for_state, within};

/// The longest wait for a state or a watch.
const WAIT: Duration = Duration::from_secs(30);

#[test]
fn a_client_over_tls_creates_and_reads_a_node() {
    let client = tls_client_of(&shared_secure_connect_string(), trusting());
    let path = unique_path("tls-node");
    client.ensure_path("/it").unwrap();
    client.create(&path, b"over tls", CreateMode::Persistent).unwrap();
    assert_eq!(client.get_data(&path).unwrap().0, b"over tls");
}

#[test]
fn a_secure_port_chosen_by_the_caller_is_the_one_served_over_tls() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let server = zk_queue::testing::TestingServer::builder()
        .secure_client_port(super::certs().server_tls(ServerCertificate::Valid))
        .secure_port(port)
        .start()
        .expect("start zookeeper with a secure port of our choice");
    assert_eq!(server.secure_port(), Some(port));
    let connect = format!("127.0.0.1:{port}");
    assert_eq!(server.secure_connect_string().as_deref(), Some(connect.as_str()));
    let client = tls_client_of(&connect, trusting());
    assert!(client.exists("/").unwrap().is_some());
}

#[test]
fn data_larger_than_a_tls_record_crosses_both_ways_intact() {
    let client = tls_client_of(&shared_secure_connect_string(), trusting());
    client.ensure_path("/it").unwrap();
    let path = unique_path("tls-large");
    // A TLS record holds at most 16 KiB: this spans about 40 of them.
    let data: Vec<u8> = (0..640 * 1024).map(|i| (i * 7 % 251) as u8).collect();
    client.create(&path, &data, CreateMode::Persistent).unwrap();
    assert_eq!(client.get_data(&path).unwrap().0, data);
}

#[test]
fn a_session_over_tls_survives_a_cut_connection_with_its_ephemeral_node_and_watch() {
    let server = tls_server(ServerCertificate::Valid);
    let proxy = FaultProxy::start(&server.secure_connect_string().unwrap()).unwrap();
    let client = tls_client_of(&proxy.connect_string(), trusting());
    let direct = tls_client_of(&server.secure_connect_string().unwrap(), trusting());
    let session = client.session_id().unwrap();
    client.ensure_path("/it").unwrap();
    let mine = unique_path("tls-ephemeral");
    client.create(&mine, b"", CreateMode::Ephemeral).unwrap();
    let watched = unique_path("tls-watched");
    client.ensure_path(&watched).unwrap();
    let (_, _, watch) = client.get_children_watch(&watched).unwrap();
    let states = client.state_listener();

    proxy.cut();
    wait_for_state(&states, ConnectionState::Reconnected, WAIT);

    assert_eq!(client.session_id().unwrap(), session, "the same session, reattached");
    assert!(direct.exists(&mine).unwrap().is_some(), "the ephemeral node lives on");
    direct
        .create(&format!("{watched}/child"), b"", CreateMode::Persistent)
        .unwrap();
    assert!(watch.wait_timeout(WAIT), "the watch, set again over tls, fires");
}

#[test]
fn a_session_over_tls_survives_a_server_restart() {
    let mut server = tls_server(ServerCertificate::Valid);
    let connect = server.secure_connect_string().unwrap();
    let client = tls_client_of(&connect, trusting());
    let session = client.session_id().unwrap();
    client.ensure_path("/it").unwrap();
    let path = unique_path("tls-restart");
    client.create(&path, b"before", CreateMode::Persistent).unwrap();
    let states = client.state_listener();

    server.restart().unwrap();
    assert_eq!(server.secure_connect_string().unwrap(), connect, "the same secure port");
    wait_for_state(&states, ConnectionState::Reconnected, WAIT);

    assert_eq!(client.session_id().unwrap(), session, "the same session, reattached");
    client.set_data(&path, b"after", None).unwrap();
    assert_eq!(client.get_data(&path).unwrap().0, b"after");
}

#[test]
fn a_request_over_a_stalled_tls_connection_returns_by_its_timeout() {
    let server = tls_server(ServerCertificate::Valid);
    let proxy = FaultProxy::start(&server.secure_connect_string().unwrap()).unwrap();
    let request_timeout = Duration::from_secs(1);
    let client = ZkClient::builder(&proxy.connect_string())
        .session_timeout(Duration::from_secs(10))
        .request_timeout(request_timeout)
        .retry_policy(RetryNTimes::new(0, Duration::ZERO))
        .tls(trusting())
        .connect()
        .unwrap();
    client.exists("/").unwrap();

    // Nothing passes either way: neither replies nor TLS records.
    proxy.blackhole();
    let result = within("a read over a stalled tls connection", request_timeout, || {
        client.exists("/")
    });
    assert!(result.is_err(), "answered through a blackhole: {result:?}");
}
