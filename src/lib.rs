//! Distributed queues on Apache ZooKeeper for plain-thread Rust.
//!
//! Calls block the calling thread; there is no async runtime to adopt. Queues
//! use the wire formats of the Java world, so Rust and Java processes share
//! them:
//! - [`SimpleQueue`]: the classic ZooKeeper queue recipe
//!   (`org.apache.zookeeper.recipes.queue.DistributedQueue`, and Curator's
//!   `SimpleDistributedQueue`): `qn-` nodes of raw bytes.
//! - [`QueueBuilder`] and the queues of Apache Curator's family, byte- and
//!   name-compatible with Curator 5.x: one handle type, [`Queue`], whose
//!   [`kinds`] are [`DistributedQueue`] (FIFO), [`PriorityQueue`],
//!   [`DelayQueue`] and [`IdQueue`], with consumers that are called back
//!   ([`QueueConsumer`]) or pulled from ([`ItemReceiver`]), and lock-safe
//!   consumption.
//!
//! # Quick start
//! ```no_run
//! # fn main() -> Result<(), zk_queue::Error> {
//! use std::time::Duration;
//! use zk_queue::{SimpleQueue, ZkClient};
//!
//! let client = ZkClient::connect("127.0.0.1:2181")?;
//! let queue = SimpleQueue::new(&client, "/jobs")?;
//! queue.put(b"resize image 42")?;
//! let job = queue.take()?; // blocks until an item is there
//! assert_eq!(job, b"resize image 42");
//! assert_eq!(queue.take_timeout(Duration::from_millis(100))?, None);
//! # Ok(())
//! # }
//! ```
//!
//! A work queue that Java services using Curator can share, where a job is
//! deleted only after it was processed:
//! ```no_run
//! # fn main() -> Result<(), zk_queue::Error> {
//! use zk_queue::{ConsumeError, QueueBuilder, StringSerializer, ZkClient};
//!
//! let client = ZkClient::connect("127.0.0.1:2181")?;
//! let workers = QueueBuilder::new(&client, "/jobs", StringSerializer)
//!     .consumer(|job: String| -> Result<(), ConsumeError> {
//!         println!("processing {job}");
//!         Ok(()) // an Err requeues the job; after 5 failures it is set aside
//!     })
//!     .lock_path("/jobs-locks")
//!     .max_attempts(5)
//!     .dead_letter_path("/jobs-dead")
//!     .build_queue()?; // started: consuming from now on
//! # Ok(())
//! # }
//! ```
//!
//! # Queue kinds
//! | kind | built by | put | order |
//! | --- | --- | --- | --- |
//! | [`DistributedQueue`] | [`QueueBuilder::build_queue`] | `put(item)` | put order |
//! | [`PriorityQueue`] | [`QueueBuilder::build_priority_queue`] | `put(item, priority)` | lower priority first, then put order |
//! | [`DelayQueue`] | [`QueueBuilder::build_delay_queue`] | `put(item, deliver_at)` | due time (items wait until due), then put order |
//! | [`IdQueue`] | [`QueueBuilder::build_id_queue`] | `put(item, id)`, `remove(id)` | put order |
//!
//! Each also has `try_put` and `put_timeout` (for bounded queues: a full
//! queue gives the item back in [`PutError::Full`]), `put_multi` (many items
//! in one node, delivered one by one) and `put_multi_timeout`. Everything
//! else (`len`, `is_empty`, `oldest_age`, `stats`, `flush_timeout`, put
//! listeners, `close`) is shared by every kind on [`Queue`]. A handle is
//! ready when built: there is nothing to start. FIFO order holds for one consumer with one consumer
//! thread; several consumers share the work in roughly that order.
//!
//! # Which queue do I want?
//! | you need | use |
//! | --- | --- |
//! | raw byte items shared with Java's classic recipe or Curator's `SimpleDistributedQueue`; a blocking `take` on plain threads | [`SimpleQueue`] |
//! | typed items shared with Curator's `DistributedQueue`; a callback consumer or a pull [`ItemReceiver`] | [`QueueBuilder::build_queue`] |
//! | nothing lost when a consumer crashes (at least once) | any Curator kind with [`QueueBuilder::lock_path`] |
//! | urgent items first | [`QueueBuilder::build_priority_queue`] |
//! | items delivered at a time (retries later, reminders) | [`QueueBuilder::build_delay_queue`] |
//! | cancel queued items by id | [`QueueBuilder::build_id_queue`] |
//! | many small items at high rate | `put_multi` (one node per batch) on any Curator kind, or [`QueueBuilder::coalesce_puts`] for single puts from many threads |
//! | backlogs past ten thousand items (a ZooKeeper listing stays small) | [`QueueBuilder::build_sharded_queue`] ([`ShardedQueue`], Curator's `QueueSharder` layout) |
//! | one process of many doing something alone | [`LeaderLatch`](recipes::LeaderLatch) (Curator's `LeaderLatch` names) |
//! | one process of many (or N) in a critical section at a time, with fencing tokens | [`Mutex`](recipes::Mutex) (Curator's `InterProcessMutex` names) |
//! | many readers at once or one writer alone, fairly, with fencing tokens and a downgrade that keeps waiting writers out | [`RwLock`](recipes::RwLock) (Curator's `InterProcessReadWriteLock` names) |
//! | at most N processes at once holding a lease (a pool of licences, crawlers, connections), or a lock that is not reentrant | [`Semaphore`](recipes::Semaphore) and [`SemaphoreMutex`](recipes::SemaphoreMutex) (Curator's `InterProcessSemaphoreV2` and `InterProcessSemaphoreMutex` nodes) |
//! | processes held until an operator lets them go | [`Barrier`](recipes::Barrier) (Curator's `DistributedBarrier` node) |
//! | N processes starting a step together and finishing it together | [`DoubleBarrier`](recipes::DoubleBarrier) (Curator's `DistributedDoubleBarrier` names) |
//! | processes taking turns at leading, each running a closure for its term, told when it must stop | [`LeaderSelector`](recipes::LeaderSelector) (Curator's `LeaderSelector` names) |
//! | a bounded queue whose producers wait | [`QueueBuilder::max_items`] with `put`, `try_put` or `put_timeout` |
//! | a queue shared with Python services using kazoo's `Queue` or `LockingQueue` (priorities 0 to 999, locks in `taken/`) | [`KazooQueue`](recipes::KazooQueue), [`KazooLockingQueue`](recipes::KazooLockingQueue) |
//!
//! # Sharing queues with Java
//! Java and Rust processes share a queue when both use the same format:
//! - Classic: Java's `org.apache.zookeeper.recipes.queue.DistributedQueue` or
//!   Curator's `SimpleDistributedQueue`, and [`SimpleQueue`] here. Items are
//!   `qn-<sequence>` nodes of raw bytes.
//! - Curator: Curator's `QueueBuilder` queues (`DistributedQueue`,
//!   `DistributedPriorityQueue`, `DistributedDelayQueue`,
//!   `DistributedIdQueue`) and the same kind built by [`QueueBuilder`] here,
//!   with a serializer that writes the bytes the Java serializer reads
//!   ([`StringSerializer`] for a Java UTF-8 `String` serializer). A lock-safe
//!   queue uses the same lock path on both sides; the locks are
//!   `<lock_path>/<item name>` ephemeral nodes, which Curator only checks for
//!   existence, so either side's consumers can take either side's items.
//! - Sharded: Curator's `QueueSharder` over `DistributedQueue` shards and a
//!   [`ShardedQueue`] here, with the same queue and leader paths; the leader
//!   election is Curator's `LeaderLatch`'s, as [`LeaderLatch`](recipes::LeaderLatch) here.
//!
//! What this crate does that Curator does not (requeue keeping priority, a
//! failed-delivery count, dead letters) stays readable by Curator: requeued
//! items keep Curator's names, and the delivery count rides after the item
//! frame's end marker, where Curator's reader stops. The test suite runs
//! Curator 5.4 producers and consumers against this crate's, in both
//! directions, for every kind.
//!
//! # Layers
//! Each layer is built only on those listed before it:
//! - Codec and names: the item frame of Curator's `ItemSerializer`, a
//!   [`QueueSerializer`] per item type, and Curator's node names.
//! - [`Error`]: one error type for the whole crate, and the causes it carries.
//! - [`ZkClient`]: the crate's own blocking ZooKeeper client (no async
//!   runtime), with a deadline on every request, Curator-style
//!   [`RetryPolicy`](client::RetryPolicy)s, [`ConnectionState`] listeners, sessions kept through
//!   outages shorter than their timeout, and a new session after an expiry.
//! - Recipes: [`SimpleQueue`] and the coordination [`recipes`].
//! - [`inspect`]: item names, consumption order and item data, parsed
//!   without a server (what the `zkq` tool shows).
//! - The Curator family of queues, on a consumer engine that lists the queue
//!   with one watch and works through each listing.
//! - [`admin`]: [`RawQueue`](admin::RawQueue) and
//!   [`DeadLetters`](admin::DeadLetters) take, purge and requeue items of either layout as
//!   stored bytes (what the `zkq` tool changes).
//!
//! Beside them, `testing` (feature `testing`): real ZooKeeper servers and
//! ensembles, and a fault-injecting proxy, for tests.
//!
//! # Features
//! - `serde`: `JsonSerializer` and `CompactSerializer` for any serde type.
//! - `cli`: the `zkq` command-line tool for operators.
//! - `testing`: `TestingServer`, `TestingCluster` and `FaultProxy`.
//! - `metrics`: counters, gauges and histograms of queues and clients
//!   through the `metrics` facade (the `metrics` module).
//! - `tls`: TLS to the servers' secure client port
//!   (`ZkClientBuilder::tls`, rustls).
//!
//! None is on by default. On docs.rs every item that needs a feature says
//! which.
//!
//! # Threads and blocking
//! [`ZkClient`] is cheap to clone and may be used from any number of threads;
//! clones share one session. Each call blocks until ZooKeeper answers, the
//! retry policy gives up, or its deadline passes: its own (`take_timeout`,
//! `put_timeout`, ...), or else the request timeout
//! ([`ZkClientBuilder::request_timeout`], which bounds the whole call,
//! retries included), so nothing waits forever on a hung server. Blocking
//! calls come in families named like std and crossbeam, the same on every
//! handle: `take` (waits), `try_take` (never waits for an item), `take_timeout`
//! (waits up to a bound), and `put` / `try_put` / `put_timeout` likewise; a
//! `try_` call waits for a server at most one second. Whatever the handle, a
//! call whose deadline passes while no server can be reached fails with the
//! same error, [`Error::Unreachable`], naming each server and why; an empty
//! queue is `None`, never that error;
//! [`SimpleQueue`] also answers to the Java recipe's names (`offer`, `poll`,
//! `peek`, `element`, `remove`).
//! One background thread per client follows the session; watcher callbacks
//! only open a latch, and user code never runs on a ZooKeeper thread: a
//! queue's consumer runs on the queue's own worker threads.
//!
//! # Delivery guarantees
//! | mode | guarantee |
//! | --- | --- |
//! | [`SimpleQueue`] `take`, and a queue without a lock path | at most once; a crash loses the items in hand and up to [`claim_window`](QueueBuilder::claim_window) claimed ahead |
//! | lock-safe consumer ([`QueueBuilder::lock_path`]) | at least once, nothing lost; at most `claim_window` nodes delivered twice per crash or lost session |
//! | pull consumer ([`QueueBuilder::pull_consumer`]) | its mode's guarantee; at most `claim_window` deliveries outstanding |
//! | consumer error, [`ErrorMode::Requeue`] | requeued atomically after a back-off; a dead letter after `max_attempts` |
//! | [`SimpleQueue::put`]; a [`Queue`] `put` (the default: in the foreground) | stored once `Ok`; with no server reachable, [`Error::Unreachable`] by its deadline (the request timeout), storing nothing; a lost reply adds at most one copy per attempt |
//! | a [`Queue`] `put` in the background ([`QueueBuilder::put_in_background`]) | `Ok` means accepted by the put thread; refused while no server has been reachable for a request timeout; a put not stored by a request timeout after it was accepted reaches the put listeners and the next `put` or [`Queue::flush_timeout`]; pending at close: logged at WARN and in the close report |
//! | corrupt or foreign item | never deleted |
//!
//! `GUARANTEES.md` (in the repository and the package) gives each bound,
//! what each fault costs, and the tests that prove them.
//!
//! # Errors
//! Every fallible call returns [`Error`], a non-exhaustive enum whose messages
//! are short lowercase sentences; causes are reachable through
//! [`std::error::Error::source`]. Invalid paths and oversized items are
//! refused before any request is sent.
//!
//! # Logging
//! The crate logs through [`log`]: one line per connection-state change
//! (`Suspended` and `Lost` at WARN), nothing above INFO for a clean close.
#![deny(missing_docs)]
#![forbid(unsafe_code)]
// docs.rs (Cargo.toml) marks each item with the features it needs.
#![cfg_attr(docsrs, feature(doc_cfg))]

// Layers, lowest first: a module names only modules of the layers before its
// own, and none of its own layer (scripts/check-layers.py checks it, reading
// this list).
// - sync, codec, naming, metrics, testing: what stands alone: waiting and
//   back-off, the item frame and serializers, node names, metric handles fed
//   plain numbers, test servers.
// - error: the crate's `Error`, with the causes it carries (the server's
//   error codes, why a server could not be used, TLS errors).
// - path: path checks and joins.
// - client: the ZooKeeper client.
// - recipes: the classic queue and the coordination recipes.
// - inspect: item names, order and data parsed without a server.
// - queue: Curator's queues and their consumer engine.
// - admin: the operator tools on stored items.
pub mod admin;
pub mod client;
mod codec;
mod error;
pub mod inspect;
#[cfg(feature = "metrics")]
#[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
pub mod metrics;
#[cfg(not(feature = "metrics"))]
mod metrics;
mod naming;
pub mod path;
mod queue;
pub mod recipes;
mod sync;

#[cfg(feature = "testing")]
pub mod testing;

/// The README's Rust examples, compiled (not run) with the doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeExamples;

/// Entry points for the fuzz targets in `fuzz/`; not part of the API.
#[doc(hidden)]
pub mod fuzzing {
    pub use crate::client::wire::decode_any_reply;
}

/// The channels this crate hands out signals on (a lost lock or leadership,
/// a lost lease, connection states), re-exported so that selecting on them
/// with a timer or another channel needs no dependency of its own:
/// `zk_queue::channel::select!`, `zk_queue::channel::tick`.
///
/// ```no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// use std::time::Duration;
/// use zk_queue::{channel, recipes::Mutex, ZkClient};
/// let client = ZkClient::connect("127.0.0.1:2181")?;
/// let mutex = Mutex::builder(&client, "/locks/report").build()?;
/// let guard = mutex.lock()?;
/// let lost = guard.lost();
/// let ticks = channel::tick(Duration::from_millis(100));
/// for _ in 0..50 {
///     channel::select! {
///         recv(lost) -> _ => break, // the lock is lost or in doubt: stop
///         recv(ticks) -> _ => println!("working under token {}", guard.token()),
///     }
/// }
/// # Ok(())
/// # }
/// ```
pub use crossbeam_channel as channel;

pub use client::{ConnectionState, ZkClient, ZkClientBuilder};
pub use codec::{BytesSerializer, CodecError, QueueSerializer, StringSerializer};
#[cfg(feature = "serde")]
pub use codec::{CompactSerializer, JsonSerializer};
pub use error::{Error, PutError, Result};
pub use queue::kinds;
pub use queue::{
    CloseReport, ConsumeError, DelayQueue, DeliverAt, Delivery, DistributedQueue, ErrorMode, IdQueue, ItemMeta,
    ItemReceiver, PriorityQueue, PutListener, Queue, QueueBuilder, QueueConsumer, QueueStats, ShardChoice, ShardPolicy,
    ShardedQueue, WhenFull,
};
pub use recipes::{SimpleQueue, SimpleQueueBuilder};
