//! Integration tests against real ZooKeeper servers, started by the tests
//! through `zk_queue::testing` (or the server named by `ZK_CONNECT`).
//!
//! One folder per concern, each with a module doc listing its files:
//! `queue` (the Curator-style queues, with Curator's own tests ported in
//! `queue/curator`), `simple_queue` (the classic recipe), `hostile` (bad input
//! and hostile data), `faults` (real faults and the delivery guarantees),
//! `leader_latch` (the leader latch, with Curator's), `barrier` (the barriers, with
//! Curator's `DistributedDoubleBarrier`), `mutex` (the lock,
//! with Curator's `InterProcessMutex`), `rwlock` (the read-write lock, with
//! Curator's `InterProcessReadWriteLock`), `semaphore` (the semaphores, with
//! Curator's `InterProcessSemaphoreV2`), `selector` (the leader selector,
//! with Curator's `LeaderSelector`), `cli` (the `zkq` tool),
//! `wire` (every request the client sends, checked on a real server) and
//! `harness` (the test harness itself), `tls` (TLS to the secure client
//! port, feature `tls`); `client`,
//! `security` and `bench` are single files; `support` holds the shared helpers.

mod barrier;
mod bench;
mod cli;
mod client;
mod faults;
mod harness;
mod hostile;
mod kazoo;
mod leader_latch;
#[cfg(feature = "metrics")]
mod metrics;
mod mutex;
mod queue;
mod rwlock;
mod security;
mod selector;
mod semaphore;
mod simple_queue;
mod support;
#[cfg(feature = "tls")]
mod tls;
mod wire;
