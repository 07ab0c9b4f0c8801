//! Self-tests of the test harness: `zk_queue::testing`'s `TestingServer`,
//! `TestingCluster` and `FaultProxy`, and the Java queue peers that the
//! interop tests run.

mod fault_proxy;
mod java_peer;
mod testing_cluster;
mod testing_server;
