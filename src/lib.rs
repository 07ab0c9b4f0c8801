//! Distributed queues on Apache ZooKeeper for plain-thread Rust.
//!
//! Calls block the calling thread; there is no async runtime to adopt. Queues
//! use the wire formats of the Java world, so Rust and Java processes share
//! them: [`SimpleQueue`] is the classic ZooKeeper queue recipe
//! (`org.apache.zookeeper.recipes.queue.DistributedQueue`, and Curator's
//! `SimpleDistributedQueue`).
//!
//! # Quick start
//! ```no_run
//! # fn main() -> Result<(), zk_queue::Error> {
//! use std::time::Duration;
//! use zk_queue::{SimpleQueue, ZkClient};
//!
//! let client = ZkClient::connect("127.0.0.1:2181")?;
//! let queue = SimpleQueue::new(&client, "/jobs")?;
//! queue.offer(b"resize image 42")?;
//! let job = queue.take()?; // blocks until an item is there
//! assert_eq!(job, b"resize image 42");
//! assert_eq!(queue.poll_timeout(Duration::from_millis(100))?, None);
//! # Ok(())
//! # }
//! ```
//!
//! # Layers
//! - [`ZkClient`]: a blocking facade over the `zookeeper-client` crate, with a
//!   deadline on every request attempt, Curator-style [`RetryPolicy`]s,
//!   [`ConnectionState`] listeners and a new session after an expiry.
//! - Recipes: [`SimpleQueue`].
//! - `testing` (feature `testing`): real ZooKeeper servers for tests.
//!
//! # Threads and blocking
//! [`ZkClient`] is cheap to clone and may be used from any number of threads;
//! clones share one session. Each call blocks until ZooKeeper answers, the
//! attempt's deadline passes ([`ZkClientBuilder::request_timeout`]) or the
//! retry policy gives up, so nothing waits forever on a hung server. Blocking
//! queue calls come in families named like std and crossbeam: `take` (waits),
//! `poll` (never waits), `take_timeout` (waits up to a bound). One background
//! thread per client follows the session; watcher callbacks only open a latch,
//! and user code never runs on a ZooKeeper thread.
//!
//! # Delivery guarantees
//! | mode | guarantee |
//! | --- | --- |
//! | [`SimpleQueue`] `take` / `remove` / `poll` | at most once: the item is deleted before the caller sees it (see the type's docs for the lost-reply case) |
//! | [`SimpleQueue::offer`] | stored once `Ok` is returned; a create whose reply was lost is retried and may store the item twice |
//!
//! # Errors
//! Every fallible call returns [`Error`], a non-exhaustive enum whose messages
//! are short lowercase sentences; causes are reachable through
//! [`std::error::Error::source`]. Invalid paths and oversized items are
//! refused before any request is sent.
//!
//! # Logging
//! The crate logs through [`log`]; the ZooKeeper client's `tracing` records
//! are forwarded to `log` too.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod client;
mod codec;
mod error;
mod naming;
mod path;
mod queue;
mod recipes;
mod sync;

#[cfg(feature = "testing")]
pub mod testing;

pub use client::{
    Acl, ChildWatch, ClientStats, ConnectionState, CreateMode, ExponentialBackoffRetry, Op, OpResult, Perms,
    RetryForever, RetryNTimes, RetryOneTime, RetryPolicy, RetryUntilElapsed, Stat, ZkClient, ZkClientBuilder,
};
pub use codec::{BytesSerializer, CodecError, FrameError, QueueSerializer, StringSerializer};
pub use error::{Error, Result};
pub use queue::{
    ConsumeError, DelayQueue, DeliverAt, Delivery, DistributedQueue, ErrorMode, IdQueue, ItemReceiver, PriorityQueue,
    PutListener, QueueBuilder, QueueConsumer,
};
pub use recipes::{SimpleQueue, SimpleQueueBuilder};
