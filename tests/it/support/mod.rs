//! Shared helpers for the integration tests.
#![allow(dead_code)]

pub mod java;
pub mod queues;
pub mod recorder;
pub mod server;
pub mod worker;
pub mod workload;

use std::time::{Duration, Instant};

use zk_queue::{ConnectionState, ZkClient};

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

/// Waits until `states` delivers `wanted`, failing after `within`.
pub fn wait_for_state(
    states: &crossbeam_channel::Receiver<ConnectionState>,
    wanted: ConnectionState,
    within: Duration,
) {
    let deadline = Instant::now() + within;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match states.recv_timeout(left) {
            Ok(state) if state == wanted => return,
            Ok(_) => {}
            Err(e) => panic!("no {wanted:?} within {within:?}: {e}"),
        }
    }
}
