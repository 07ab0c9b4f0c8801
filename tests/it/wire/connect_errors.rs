//! A connect that fails says what happened: nothing listening (at once, with
//! no wait to speak of), or a server that accepted the connection but
//! established no session (after the connection timeout).

use std::net::TcpListener;
use std::time::Duration;

use zk_queue::client::ConnectCause;
use zk_queue::{Error, ZkClient};

use crate::support::{within, Bound};

/// The connection timeout of the connects below.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// How late past the connection timeout a connect may fail: the time to
/// notice.
const LATE: Duration = Duration::from_millis(500);

/// A local address nobody listens on.
fn free_address() -> String {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .to_string()
}

/// Connects to `connect`, expecting it to fail by the connection timeout.
fn failed_connect(connect: &str) -> Error {
    within("a failing connect", Bound::past(CONNECT_TIMEOUT, LATE), || {
        ZkClient::builder(connect)
            .connection_timeout(CONNECT_TIMEOUT)
            .connect()
            .map(|_| ())
    })
    .expect_err("the connect succeeded")
}

#[test]
fn a_refused_connect_says_nothing_is_reachable_and_names_no_wait() {
    let address = free_address();
    let err = failed_connect(&address);
    assert!(matches!(err, Error::Unreachable { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        format!("no zookeeper server reachable: {address}: connection refused")
    );
}

#[test]
fn a_server_that_accepts_but_never_answers_is_told_apart_from_an_unreachable_one() {
    // The kernel accepts connections on it; nothing ever answers a handshake.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = silent.local_addr().unwrap().to_string();
    let refused = free_address();
    let err = failed_connect(&format!("{address},{refused}"));
    let causes: Vec<ConnectCause> = match &err {
        Error::Unreachable { servers, .. } => servers.iter().map(|s| s.cause().clone()).collect(),
        other => panic!("not unreachable: {other:?}"),
    };
    assert_eq!(causes, [ConnectCause::NoSession, ConnectCause::Refused]);
    assert!(causes[0].connected() && !causes[1].connected());
    let message = err.to_string();
    assert!(
        message.starts_with("a zookeeper server accepted the connection, but no session was established within "),
        "{message}"
    );
    assert!(!message.contains("no zookeeper server reachable"), "{message}");
    assert!(
        message.contains(&format!("{address}: connected, but no session was established (")),
        "{message}"
    );
    assert!(message.contains(&format!("{refused}: connection refused")), "{message}");
}
