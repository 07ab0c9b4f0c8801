//! Integration tests against real ZooKeeper servers, started by the tests
//! through `zk_queue::testing` (or the server named by `ZK_CONNECT`).

mod bench;
mod cli;
mod client;
mod curator_interop;
mod curator_scenarios;
mod dead_letters;
mod faults;
mod harness;
mod hostile;
mod pull;
mod queue;
mod queue_kinds;
mod queue_stats;
mod security;
mod simple_queue;
mod support;
