//! zk-queue: distributed queues on Apache ZooKeeper for plain-thread Rust.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod client;
mod error;
mod naming;
mod path;
mod recipes;
mod sync;

#[cfg(feature = "testing")]
pub mod testing;

pub use client::{
    Acl, ConnectionState, CreateMode, ExponentialBackoffRetry, Op, OpResult, Perms, RetryForever, RetryNTimes,
    RetryOneTime, RetryPolicy, RetryUntilElapsed, Stat, ZkClient, ZkClientBuilder,
};
pub use error::{Error, Result};
pub use recipes::{SimpleQueue, SimpleQueueBuilder};
