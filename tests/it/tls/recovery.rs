//! A server that refuses TLS while a session reconnects: the refusal is
//! logged at WARN once (a server closing the handshake while it restarts is
//! not warned of), and the session resumes once the certificate is mended.

use std::time::Duration;

use zk_queue::testing::{ServerCertificate, ServerTls, TestingServer};
use zk_queue::ConnectionState;

use super::{certs, tls_client_of, trusting};
use crate::support::{logs, wait_for_state};

/// The longest wait for a state or a log line.
const WAIT: Duration = Duration::from_secs(30);

#[test]
fn a_certificate_refused_on_reconnect_is_warned_of_once_and_the_session_resumes_when_it_is_mended() {
    logs::start();
    // The server's key store is a copy the test swaps between restarts.
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("server.pem");
    let install = |which| std::fs::copy(certs().key_store(which), &store).unwrap();
    install(ServerCertificate::Valid);
    let mut server = TestingServer::builder()
        .secure_client_port(ServerTls::new(&store, certs().ca_file()))
        .start()
        .unwrap();
    let connect = server.secure_connect_string().unwrap();
    let client = tls_client_of(&connect, trusting());
    let session = client.session_id().unwrap();
    let states = client.state_listener();

    install(ServerCertificate::Expired);
    server.restart().unwrap();
    let warned = |lines: &[logs::Line]| {
        lines
            .iter()
            .filter(|l| l.level == log::Level::Warn && l.message.contains("certificate has expired"))
            .count()
    };
    crate::support::eventually(WAIT, "a warning of the expired certificate", || {
        warned(&logs::lines_with(&connect)) > 0
    });

    install(ServerCertificate::Valid);
    server.restart().unwrap();
    wait_for_state(&states, ConnectionState::Reconnected, WAIT);
    assert_eq!(client.session_id().unwrap(), session, "the same session, resumed");
    client.exists("/").unwrap();
    assert_eq!(
        warned(&logs::lines_with(&connect)),
        1,
        "one warning for the whole outage"
    );
}
