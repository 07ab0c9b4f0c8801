//! Integration tests against real ZooKeeper servers, started by the tests
//! through `zk_queue::testing` (or the server named by `ZK_CONNECT`).

mod bad_input;
mod bench;
mod cli;
mod cli_more;
mod client;
mod concurrency;
mod curator_interop;
mod curator_scenarios;
mod dead_letters;
mod fault_proxy;
mod faults;
mod guarantees;
mod hostile;
mod interop;
mod java_peer;
mod pull;
mod put_replies;
mod queue;
mod queue_kinds;
mod queue_stats;
mod random_faults;
mod raw_queue;
mod security;
mod simple_queue;
mod support;
mod testing_cluster;
mod testing_server;
