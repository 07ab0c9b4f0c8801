//! Shared helpers for the integration tests.
#![allow(dead_code)]

pub mod java;
pub mod queues;
pub mod recorder;
pub mod server;

use std::time::Duration;

use zk_queue::ZkClient;

/// A new client (its own session) of the shared server.
pub fn client() -> ZkClient {
    client_of(&server::shared_connect_string())
}

/// A new client of the server at `connect`, with timeouts suited to tests.
pub fn client_of(connect: &str) -> ZkClient {
    ZkClient::builder(connect)
        .session_timeout(Duration::from_secs(10))
        .connection_timeout(Duration::from_secs(10))
        .request_timeout(Duration::from_secs(10))
        .connect()
        .unwrap_or_else(|e| panic!("connecting to {connect}: {e}"))
}
