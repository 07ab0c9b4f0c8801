//! A session over TLS to an ensemble moves to another member when its
//! member dies: each server's certificate is verified for its own address.
//! (ZooKeeper's `cons` lists only the plain port's connections; `mntr`
//! counts both ports'.)

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use zk_queue::client::CreateMode;
use zk_queue::testing::{ServerCertificate, TestingCluster};
use zk_queue::ConnectionState;

use super::{certs, tls_client_of, trusting};
use crate::support::server::unique_path;
use crate::support::{eventually, wait_for_state};

/// The longest wait for a state.
const WAIT: Duration = Duration::from_secs(60);

/// The live client connections of `member`, both ports' (`mntr`, on its
/// plain port, counting the asking connection too).
fn connections(cluster: &TestingCluster, member: usize) -> usize {
    let Ok(mut stream) = TcpStream::connect(cluster.member_connect_string(member)) else {
        return 0;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let mut reply = String::new();
    if stream.write_all(b"mntr").is_err() || stream.read_to_string(&mut reply).is_err() {
        return 0;
    }
    reply
        .lines()
        .find_map(|line| line.strip_prefix("zk_num_alive_connections"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

/// The one member the only client is connected to (its connection besides
/// the asking one).
fn member_serving(cluster: &TestingCluster) -> Option<usize> {
    let serving: Vec<usize> = (0..cluster.size()).filter(|&m| connections(cluster, m) > 1).collect();
    match serving.as_slice() {
        [member] => Some(*member),
        _ => None,
    }
}

#[test]
fn a_session_over_tls_moves_to_another_member_when_its_member_dies() {
    let cluster = TestingCluster::start_with_tls(3, certs().server_tls(ServerCertificate::Valid)).unwrap();
    let client = tls_client_of(&cluster.secure_connect_string().unwrap(), trusting());
    let session = client.session_id().unwrap();
    client.ensure_path("/it").unwrap();
    let path = unique_path("tls-ensemble");
    client.create(&path, b"before", CreateMode::Persistent).unwrap();
    let serving = member_serving(&cluster).expect("a member serves the session");
    let states = client.state_listener();

    cluster.kill(serving).unwrap();
    wait_for_state(&states, ConnectionState::Reconnected, WAIT);

    assert_eq!(
        client.session_id().unwrap(),
        session,
        "the same session, on another member"
    );
    // The members' connection counts settle once the attempts the client
    // gave up on are closed.
    let mut now = None;
    eventually(WAIT, "another member alone serves the session", || {
        now = member_serving(&cluster);
        now.is_some()
    });
    assert_ne!(now, Some(serving));
    client.set_data(&path, b"after", None).unwrap();
    assert_eq!(client.get_data(&path).unwrap().0, b"after");
}
