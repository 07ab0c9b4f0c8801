//! A session and queues over TLS, and a session that survives a cut
//! connection and a restarted server.

use zk_queue::client::CreateMode;

use super::{shared_secure_connect_string, tls_client_of, trusting};
use crate::support::server::unique_path;

#[test]
fn a_client_over_tls_creates_and_reads_a_node() {
    let client = tls_client_of(&shared_secure_connect_string(), trusting());
    let path = unique_path("tls-node");
    client.ensure_path("/it").unwrap();
    client.create(&path, b"over tls", CreateMode::Persistent).unwrap();
    assert_eq!(client.get_data(&path).unwrap().0, b"over tls");
}
