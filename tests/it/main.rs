//! Integration tests against real ZooKeeper servers.

mod java_peer;
mod support;
mod testing_server;
