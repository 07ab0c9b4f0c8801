//! zk-queue: distributed queues on Apache ZooKeeper for plain-thread Rust.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

#[cfg(feature = "testing")]
pub mod testing;
