//! ZooKeeper's `x509` scheme knows a client by its certificate's subject: a
//! node whose ACL names one subject lets that client in and denies another
//! certificate, and a client without one; a server that needs a
//! certificate refuses a client without one with a typed cause.

use std::time::Duration;

use zk_queue::client::{Acl, ConnectCause, CreateMode, Perms, TlsConfig, TlsErrorKind};
use zk_queue::testing::{ClientAuth, ServerCertificate, TestingServer};
use zk_queue::{Error, ZkClient};

use super::{certs, shared_secure_connect_string, tls_client_of, trusting};
use crate::support::server::unique_path;
use crate::support::within;

/// A client of the shared TLS server presenting the certificate of `name`.
fn client_as(name: &str) -> ZkClient {
    let (cert, key) = certs().client(name).unwrap();
    let tls = TlsConfig::builder(certs().ca_file())
        .client_certificate(cert, key)
        .build()
        .unwrap();
    tls_client_of(&shared_secure_connect_string(), tls)
}

#[test]
fn an_x509_acl_lets_its_certificate_in_and_denies_another_and_none() {
    let alice = client_as("alice");
    alice.ensure_path("/it").unwrap();
    let path = unique_path("tls-x509");
    let acl = [Acl::new(Perms::ALL, "x509", "CN=alice")];
    alice
        .create_with_acl(&path, b"alice's", CreateMode::Persistent, &acl)
        .expect("alice may create a node only she may read");
    assert_eq!(alice.get_data(&path).unwrap().0, b"alice's");
    alice.set_data(&path, b"still alice's", None).unwrap();

    let bob = client_as("bob");
    assert!(
        matches!(bob.get_data(&path), Err(Error::NotAuthorized { .. })),
        "another certificate is denied"
    );
    let anonymous = tls_client_of(&shared_secure_connect_string(), trusting());
    assert!(
        matches!(
            anonymous.set_data(&path, b"mine", None),
            Err(Error::NotAuthorized { .. })
        ),
        "a client without a certificate is denied"
    );
    assert_eq!(alice.get_data(&path).unwrap().0, b"still alice's");
}

#[test]
fn a_server_that_needs_a_certificate_refuses_a_client_without_one_and_admits_one_with_one() {
    let server = TestingServer::builder()
        .secure_client_port(
            certs()
                .server_tls(ServerCertificate::Valid)
                .client_auth(ClientAuth::Need),
        )
        .start()
        .unwrap();
    let connect = server.secure_connect_string().unwrap();
    let timeout = Duration::from_secs(5);
    let result = within("a connect without the certificate needed", timeout, || {
        ZkClient::builder(&connect)
            .connection_timeout(timeout)
            .tls(trusting())
            .connect()
            .map(|_| ())
    });
    match result {
        Err(Error::Unreachable { servers, .. }) => match servers[0].cause() {
            ConnectCause::Tls(e) => assert_eq!(e.kind(), TlsErrorKind::Refused, "{e}"),
            other => panic!("not a tls cause: {other:?}"),
        },
        other => panic!("not unreachable: {other:?}"),
    }

    let (cert, key) = certs().client("carol").unwrap();
    let tls = TlsConfig::builder(certs().ca_file())
        .client_certificate(cert, key)
        .build()
        .unwrap();
    tls_client_of(&connect, tls).exists("/").unwrap();
}
