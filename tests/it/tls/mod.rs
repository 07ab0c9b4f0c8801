//! TLS to ZooKeeper's secure client port (feature `tls`), against real
//! servers with certificates made at run time (`testing::TestCertificates`).
//!
//! - `connecting.rs`: a session over TLS, data spanning many TLS records; a
//!   session that survives a cut connection and a restarted server; a
//!   request over a stalled TLS connection returns by its timeout.
//! - `failures.rs`: each refused server (unknown authority, expired
//!   certificate, wrong host, a plain port) fails the connect with its own
//!   typed cause, within the connection timeout; bad settings fail the build.
//! - `ensemble.rs`: a session over TLS moves to another member of an ensemble.
//! - `client_certs.rs`: the `x509` scheme knows a client by its certificate.
//! - `queues.rs`: a plain queue, a lock-safe queue and a `SimpleQueue` over TLS.
//! - `recovery.rs`: a certificate refused on reconnect is warned of once, and
//!   the session resumes when it is mended.

mod client_certs;
mod connecting;
mod ensemble;
mod failures;
mod queues;
mod recovery;

use std::sync::OnceLock;
use std::time::Duration;

use zk_queue::client::TlsConfig;
use zk_queue::testing::{ServerCertificate, TestCertificates, TestingServer};
use zk_queue::ZkClient;

/// The certificates shared by the tests.
pub fn certs() -> &'static TestCertificates {
    static CERTS: OnceLock<TestCertificates> = OnceLock::new();
    CERTS.get_or_init(|| TestCertificates::generate().expect("make test certificates"))
}

/// A server with a secure port presenting `which` certificate.
pub fn tls_server(which: ServerCertificate) -> TestingServer {
    TestingServer::builder()
        .secure_client_port(certs().server_tls(which))
        .start()
        .expect("start zookeeper with a secure port")
}

/// The server with a valid certificate shared by the tests that inject no
/// fault; its secure connect string.
pub fn shared_secure_connect_string() -> String {
    static SERVER: OnceLock<TestingServer> = OnceLock::new();
    SERVER
        .get_or_init(|| tls_server(ServerCertificate::Valid))
        .secure_connect_string()
        .expect("a secure port")
}

/// Settings that trust the test authority.
pub fn trusting() -> TlsConfig {
    TlsConfig::builder(certs().ca_file()).build().expect("tls settings")
}

/// A client over TLS of `connect`, with timeouts suited to tests.
pub fn tls_client_of(connect: &str, tls: TlsConfig) -> ZkClient {
    ZkClient::builder(connect)
        .session_timeout(Duration::from_secs(10))
        .connection_timeout(Duration::from_secs(10))
        .request_timeout(Duration::from_secs(10))
        .tls(tls)
        .connect()
        .unwrap_or_else(|e| panic!("connecting over tls to {connect}: {e}"))
}
