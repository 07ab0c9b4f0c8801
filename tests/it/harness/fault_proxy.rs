//! The fault proxy: each fault does what it says to a real client and server.

use std::net::TcpStream;
use std::time::{Duration, Instant};

use zk_queue::testing::{FaultProxy, Request, TestingServer};
use zk_queue::{
    client::{CreateMode, Op, RetryNTimes},
    ConnectionState, Error, ZkClient,
};

use crate::support::{client_of, server::unique_path, session_marker, wait_for_server_expiry, wait_for_state, Bound};

/// The longest wait for a connection state.
const WAIT: Duration = Duration::from_secs(30);

fn proxied(proxy: &FaultProxy) -> ZkClient {
    ZkClient::builder(&proxy.connect_string())
        .session_timeout(Duration::from_secs(2))
        .connection_timeout(Duration::from_secs(2))
        .request_timeout(Duration::from_secs(1))
        .retry_policy(RetryNTimes::new(0, Duration::ZERO))
        .connect()
        .unwrap()
}

#[test]
fn a_cut_connection_reconnects_to_the_same_session() {
    let server = TestingServer::start().unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).unwrap();
    let client = proxied(&proxy);
    let states = client.state_listener();
    let session = client.session_id().unwrap();
    client.ensure_path("/cut").unwrap();
    proxy.cut();
    wait_for_state(&states, ConnectionState::Suspended, WAIT);
    wait_for_state(&states, ConnectionState::Reconnected, WAIT);
    assert_eq!(client.session_id().unwrap(), session);
    assert!(client.exists("/cut").unwrap().is_some());
}

#[test]
fn a_blackhole_times_requests_out_and_healing_after_the_expiry_brings_a_new_session() {
    let server = TestingServer::start().unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).unwrap();
    let direct = client_of(&server.connect_string());
    let client = proxied(&proxy);
    let states = client.state_listener();
    let session = client.session_id().unwrap();
    let marker = session_marker(&client, &direct);
    proxy.blackhole();
    let started = Instant::now();
    let result = client.exists("/");
    assert!(
        matches!(result, Err(Error::Timeout { .. } | Error::ConnectionLoss { .. })),
        "{result:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    // Longer than the session timeout: the server expires the session, and
    // the client learns it once it reaches the server again.
    wait_for_server_expiry(&direct, &marker);
    proxy.heal();
    wait_for_state(&states, ConnectionState::Lost, WAIT);
    wait_for_state(&states, ConnectionState::Reconnected, WAIT);
    assert_ne!(client.session_id().unwrap(), session);
    assert!(client.exists("/").unwrap().is_some());
}

#[test]
fn a_dropped_reply_leaves_the_write_applied_and_the_client_uninformed() {
    let server = TestingServer::start().unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).unwrap();
    let client = proxied(&proxy);
    let direct = client_of(&server.connect_string());
    let path = unique_path("dropped-reply");
    direct.ensure_path(&path).unwrap();
    proxy.drop_next_reply();
    let result = client.create(&format!("{path}/written"), b"x", CreateMode::Persistent);
    assert!(
        matches!(result, Err(Error::ConnectionLoss { .. } | Error::Timeout { .. })),
        "{result:?}"
    );
    assert!(
        direct.exists(&format!("{path}/written")).unwrap().is_some(),
        "the server applied it"
    );
}

#[test]
fn a_dropped_reply_to_one_kind_of_request_spares_the_others() {
    let server = TestingServer::start().unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).unwrap();
    let client = proxied(&proxy);
    let direct = client_of(&server.connect_string());
    let path = unique_path("dropped-multi-reply");
    direct.ensure_path(&path).unwrap();
    proxy.drop_reply_to(Request::Multi);
    // Other requests pass, before and after their replies.
    client.exists("/").unwrap();
    client
        .create(&format!("{path}/plain"), b"", CreateMode::Persistent)
        .unwrap();
    assert!(proxy.dropping_reply());
    let result = client.multi(&[Op::create(
        format!("{path}/in-multi"),
        Vec::new(),
        CreateMode::Persistent,
    )]);
    assert!(
        matches!(result, Err(Error::ConnectionLoss { .. } | Error::Timeout { .. })),
        "{result:?}"
    );
    assert!(!proxy.dropping_reply());
    assert!(
        direct.exists(&format!("{path}/in-multi")).unwrap().is_some(),
        "the server applied it"
    );
}

#[test]
fn a_delay_slows_every_request() {
    let server = TestingServer::start().unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).unwrap();
    // Patient enough for a delayed round trip.
    let client = client_of(&proxy.connect_string());
    // Long enough that a delayed request takes more than an undelayed one
    // can on a loaded machine (the load margin), for each way.
    const DELAY: Duration = Duration::from_millis(500);
    proxy.set_delay(DELAY);
    let started = Instant::now();
    client.exists("/").unwrap();
    assert!(
        started.elapsed() >= 2 * DELAY,
        "a request and its reply are both delayed"
    );
    proxy.heal();
    let started = Instant::now();
    client.exists("/").unwrap();
    // Healed, the request is not delayed: well within one delay.
    Bound::of(DELAY / 2).check("a request through the healed proxy", started.elapsed());
}

/// How long a client connecting through the proxy may take to hear that its
/// stopped server refuses: at once (a refusal is an answer), where a
/// connection accepted and then closed would cost it the connection timeout
/// (10 s here) ...
const REFUSED_WITHIN: Duration = Duration::from_secs(1);
/// ... plus a quarter of that for a loaded machine.
const REFUSED_MARGIN: Duration = Duration::from_millis(250);

#[test]
fn while_its_server_is_down_the_proxy_refuses_connections_and_after_the_restart_serves_the_same_session() {
    let mut server = TestingServer::start().unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).unwrap();
    // A session that outlives the restart.
    let patient = |connect: &str| {
        ZkClient::builder(connect)
            .session_timeout(Duration::from_secs(10))
            .connection_timeout(Duration::from_secs(10))
            .connect()
    };
    let client = patient(&proxy.connect_string()).unwrap();
    let states = client.state_listener();
    let session = client.session_id().unwrap();
    server.kill().unwrap();
    wait_for_state(&states, ConnectionState::Suspended, WAIT);
    // The proxy stopped listening before its client saw the connection end.
    let raw = TcpStream::connect(proxy.connect_string());
    assert!(
        matches!(&raw, Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused),
        "a connection to the proxy of a stopped server: {raw:?}"
    );
    let started = Instant::now();
    let refused = patient(&proxy.connect_string());
    let took = started.elapsed();
    let message = refused
        .as_ref()
        .map(|_| String::new())
        .unwrap_or_else(|e| e.to_string());
    assert!(
        message.contains(&format!("{}: connection refused", proxy.connect_string())),
        "a new client through the proxy of a stopped server: {message:?}"
    );
    assert!(
        took <= REFUSED_WITHIN + REFUSED_MARGIN,
        "refused after {took:?}, allowed {:?}",
        REFUSED_WITHIN + REFUSED_MARGIN
    );
    server.restart().unwrap();
    wait_for_state(&states, ConnectionState::Reconnected, WAIT);
    assert_eq!(
        client.session_id().unwrap(),
        session,
        "the session survives the restart"
    );
    assert!(client.exists("/").unwrap().is_some());
}

#[test]
fn the_proxy_counts_the_live_connections_it_cut_and_a_cut_of_none_counts_nothing() {
    let server = TestingServer::start().unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).unwrap();
    proxy.cut();
    assert_eq!(proxy.connections_cut(), 0, "no connection was open");
    let client = proxied(&proxy);
    let states = client.state_listener();
    client.exists("/").unwrap();
    proxy.cut();
    wait_for_state(&states, ConnectionState::Suspended, WAIT);
    assert_eq!(proxy.connections_cut(), 1, "the client's connection");
    wait_for_state(&states, ConnectionState::Reconnected, WAIT);
    proxy.cut();
    assert_eq!(proxy.connections_cut(), 2, "the client's connection again");
}
