//! Each server TLS refuses fails the connect with its own typed cause within
//! the connection timeout (a refused certificate at once: no reason to wait
//! it out), and a stalled handshake fails it by the connection timeout; bad
//! settings fail the build.

use std::time::Duration;

use zk_queue::client::{ConnectCause, TlsConfig, TlsErrorKind};
use zk_queue::testing::{FaultProxy, ServerCertificate};
use zk_queue::{Error, ZkClient};

use super::{certs, tls_client_of, tls_server, trusting};
use crate::support::server::shared_connect_string;
use crate::support::{within, Bound};

/// How late past its connection timeout a connect may fail: the time to
/// notice.
const LATE: Duration = Duration::from_millis(500);

/// The connection timeout of the refused connects: each must fail within it.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Connects over TLS to `connect` with `tls`, expecting a failure within
/// the connection timeout: the TLS cause of the only server.
fn refused(connect: &str, tls: TlsConfig) -> (TlsErrorKind, Error) {
    let result = within("a refused tls connect", CONNECT_TIMEOUT, || {
        ZkClient::builder(connect)
            .connection_timeout(CONNECT_TIMEOUT)
            .tls(tls)
            .connect()
            .map(|_| ())
    });
    let err = result.expect_err("the connect succeeded");
    let kind = match &err {
        Error::Unreachable { servers, .. } => match servers.as_slice() {
            [server] => match server.cause() {
                ConnectCause::Tls(e) => e.kind(),
                other => panic!("not a tls cause: {other:?}"),
            },
            other => panic!("one server expected: {other:?}"),
        },
        other => panic!("not unreachable: {other:?}"),
    };
    (kind, err)
}

#[test]
fn a_server_signed_by_an_unknown_authority_is_refused_as_unknown_ca() {
    let server = tls_server(ServerCertificate::UnknownCa);
    let (kind, err) = refused(&server.secure_connect_string().unwrap(), trusting());
    assert_eq!(kind, TlsErrorKind::UnknownCa, "{err}");
    assert!(err.to_string().contains("unknown certificate authority"), "{err}");
    // The TLS library's error is kept as the cause of the cause.
    let tls = std::error::Error::source(&err).expect("the tls failure as the source");
    assert!(tls.source().is_some(), "no tls library error under {tls}");
}

#[test]
fn a_certificate_signed_by_an_authority_of_the_trusted_name_but_another_key_says_why_in_the_message() {
    let server = tls_server(ServerCertificate::ImpostorCa);
    let (_, err) = refused(&server.secure_connect_string().unwrap(), trusting());
    // Whatever kind the failure is given, the TLS library's reason is in the
    // message, not only in a cause a log line may not print.
    let tls = std::error::Error::source(&err).expect("the tls failure as the source");
    let reason = tls.source().expect("the tls library's error").to_string();
    let message = err.to_string();
    assert!(message.contains(&reason), "{message} does not say {reason:?}");
    assert!(
        message.starts_with("a zookeeper server accepted the connection, but no session was established: "),
        "{message}"
    );
}

#[test]
fn a_plain_client_aimed_at_a_secure_port_is_told_the_server_accepted_the_connection() {
    let secure = super::shared_secure_connect_string();
    let timeout = Duration::from_secs(2);
    let err = within("a plain connect to a secure port", Bound::past(timeout, LATE), || {
        ZkClient::builder(&secure)
            .connection_timeout(timeout)
            .connect()
            .map(|_| ())
    })
    .expect_err("a plain client got a session from a secure port");
    match &err {
        Error::Unreachable { servers, .. } => {
            assert_eq!(servers[0].cause(), &ConnectCause::NoSession, "{err}")
        }
        other => panic!("not unreachable: {other:?}"),
    }
    let message = err.to_string();
    assert!(
        message.starts_with("a zookeeper server accepted the connection, but no session was established within "),
        "{message}"
    );
    assert!(message.contains("a secure port reached without tls"), "{message}");
}

#[test]
fn an_expired_server_certificate_is_refused_as_expired() {
    let server = tls_server(ServerCertificate::Expired);
    let (kind, err) = refused(&server.secure_connect_string().unwrap(), trusting());
    assert_eq!(kind, TlsErrorKind::Expired, "{err}");
    assert!(err.to_string().contains("expired"), "{err}");
}

#[test]
fn a_certificate_for_another_host_is_refused_as_wrong_host_unless_that_name_is_verified() {
    let server = tls_server(ServerCertificate::WrongHost);
    let connect = server.secure_connect_string().unwrap();
    let (kind, err) = refused(&connect, trusting());
    assert_eq!(kind, TlsErrorKind::WrongHost, "{err}");
    assert!(err.to_string().contains("not valid for the host name"), "{err}");

    // The same certificate passes when its name is the one verified: only the
    // name was wrong.
    let named = TlsConfig::builder(certs().ca_file())
        .server_name("wrong.example")
        .build()
        .unwrap();
    let client = tls_client_of(&connect, named);
    client.exists("/").unwrap();
}

#[test]
fn a_plain_client_port_is_reported_as_not_speaking_tls() {
    let (kind, err) = refused(&shared_connect_string(), trusting());
    assert_eq!(kind, TlsErrorKind::NotTls, "{err}");
    assert!(err.to_string().contains("does not speak tls"), "{err}");
}

#[test]
fn a_stalled_tls_handshake_fails_the_connect_by_the_connection_timeout() {
    let server = tls_server(ServerCertificate::Valid);
    let proxy = FaultProxy::start(&server.secure_connect_string().unwrap()).unwrap();
    // The connection is accepted, and then nothing passes: the handshake stalls.
    proxy.blackhole();
    let timeout = Duration::from_secs(2);
    let result = within("a connect whose handshake stalls", timeout, || {
        ZkClient::builder(&proxy.connect_string())
            .connection_timeout(timeout)
            .tls(trusting())
            .connect()
            .map(|_| ())
    });
    match result {
        Err(Error::Unreachable { servers, .. }) => {
            assert_eq!(servers[0].cause(), &ConnectCause::NoSession, "{servers:?}")
        }
        other => panic!("not unreachable: {other:?}"),
    }
}

#[test]
fn unreadable_files_non_pem_files_and_a_foreign_key_fail_the_build() {
    let kind = |result: zk_queue::Result<TlsConfig>| match result {
        Err(Error::Tls(e)) => e.kind(),
        other => panic!("not a tls settings error: {other:?}"),
    };
    let dir = tempfile::tempdir().unwrap();
    let garbage = dir.path().join("garbage.pem");
    std::fs::write(&garbage, "-----BEGIN CERTIFICATE-----\nnot base64\n").unwrap();
    assert_eq!(
        kind(TlsConfig::builder(dir.path().join("missing.pem")).build()),
        TlsErrorKind::UnreadableFile
    );
    assert_eq!(kind(TlsConfig::builder(&garbage).build()), TlsErrorKind::BadPem);
    let (alice_cert, _) = certs().client("alice").unwrap();
    let (_, bob_key) = certs().client("bob").unwrap();
    assert_eq!(
        kind(
            TlsConfig::builder(certs().ca_file())
                .client_certificate(&alice_cert, &garbage)
                .build()
        ),
        TlsErrorKind::BadPem
    );
    assert_eq!(
        kind(
            TlsConfig::builder(certs().ca_file())
                .client_certificate(&alice_cert, &bob_key)
                .build()
        ),
        TlsErrorKind::BadClientCertificate
    );
    assert_eq!(
        kind(TlsConfig::builder(certs().ca_file()).server_name("not a name").build()),
        TlsErrorKind::BadServerName
    );
}
