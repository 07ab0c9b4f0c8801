//! What the examples share: a ZooKeeper to talk to.

use anyhow::Context;
use zk_queue::testing::{connect_string_from_env, TestingServer};

/// The server named by `ZK_CONNECT`, or an embedded one started here (kept
/// alive by the returned handle).
pub fn zookeeper() -> anyhow::Result<(String, Option<TestingServer>)> {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    match connect_string_from_env() {
        Some(connect) => Ok((connect, None)),
        None => {
            println!("ZK_CONNECT is unset: starting an embedded ZooKeeper");
            let server = TestingServer::start().context("starting an embedded ZooKeeper")?;
            Ok((server.connect_string(), Some(server)))
        }
    }
}
