//! Curator-compatible distributed queues: [`QueueBuilder`] builds a
//! [`Queue`] of one of the four [`kinds`].
//!
//! Nodes, data and locks are byte-compatible with Apache Curator 5.x:
//! items are `PERSISTENT_SEQUENTIAL` children named `queue-…` holding
//! Curator's item frame, and lock-safe consumers lock `<lock_path>/<item>`.
//!
//! # Consumers of one queue
//!
//! This crate's consumers of a queue (plain and lock-safe alike) register
//! beside it, so that they claim disjoint items instead of all reading and
//! deleting (or locking) its head. The queue `/a/jobs` has the registry
//! `/a/jobs.consumers`
//! ([`inspect::consumer_registry`](crate::inspect::consumer_registry)), a
//! container node holding `zk-queue consumers of /a/jobs`, whose
//! ephemeral children `_c_<UUID>-consumer-<sequence>` are the consumers,
//! ranked by sequence. With N registered, the consumer ranked r claims the
//! items whose sequence number, hashed, is r modulo N; it takes another
//! consumer's items only when none of its own is among those it may take
//! (the most urgent priority of a priority queue, the due items of a delay
//! queue), and only once they waited a quarter of a second (their owner is
//! behind, or stopped), taking its share of them from the tail. A consumer
//! that closes, crashes or loses its session leaves the registry, and the
//! others divide its stripe at once. Nothing is added under the queue
//! itself, where Curator's consumers (which warn of every child not named
//! `queue-…`) and the classic recipe (`qn-…`) look. A queue named like a
//! shard (`queue-…`, whose parent Curator's `QueueSharder` takes every child
//! of for a shard) and the shards of a [`ShardedQueue`] have no registry:
//! their consumers spread their claims over the queue instead, as they do
//! against Curator's consumers, which do not register and compete as before.

mod builder;
mod consumer;
mod core;
mod dead_letter;
mod deliver_at;
mod engine;
mod handle;
pub mod kinds;
mod lock_record;
mod markers;
mod meta;
mod poll;
mod pull;
mod put;
mod raw;
mod sharded;
mod stats;
mod store;

pub use builder::QueueBuilder;
pub use consumer::{ConsumeError, ErrorMode, PutListener, QueueConsumer};
pub use dead_letter::{DeadLetter, DeadLetters, Requeued};
pub use deliver_at::DeliverAt;
pub use handle::Queue;
pub use lock_record::RecordedPaths;
pub use meta::ItemMeta;
pub use pull::{Delivery, ItemReceiver};
pub use raw::{Purged, RawItem, RawQueue, RawTaken, Undecodable};
pub use sharded::{ShardChoice, ShardPolicy, ShardedQueue, WhenFull};
pub use stats::{CloseReport, QueueStats};

/// A FIFO queue of Curator's `DistributedQueue` format, made by
/// [`QueueBuilder::build_queue`].
///
/// ```no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// use zk_queue::{DistributedQueue, QueueBuilder, StringSerializer, ZkClient};
/// let client = ZkClient::connect("127.0.0.1:2181")?;
/// let queue: DistributedQueue<String> = QueueBuilder::new(&client, "/jobs", StringSerializer).build_queue()?;
/// queue.put("one".to_string())?;
/// # Ok(())
/// # }
/// ```
pub type DistributedQueue<T> = Queue<T, kinds::Fifo>;

/// A priority queue of Curator's `DistributedPriorityQueue` format, made by
/// [`QueueBuilder::build_priority_queue`].
///
/// ```no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// use zk_queue::{PriorityQueue, QueueBuilder, StringSerializer, ZkClient};
/// let client = ZkClient::connect("127.0.0.1:2181")?;
/// let queue: PriorityQueue<String> = QueueBuilder::new(&client, "/tasks", StringSerializer).build_priority_queue(0)?;
/// queue.put("later".to_string(), 10)?;
/// queue.put("urgent".to_string(), -5)?;
/// # Ok(())
/// # }
/// ```
pub type PriorityQueue<T> = Queue<T, kinds::Priority>;

/// A delay queue of Curator's `DistributedDelayQueue` format, made by
/// [`QueueBuilder::build_delay_queue`].
///
/// ```no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// use std::time::{Duration, SystemTime};
/// use zk_queue::{DeliverAt, DelayQueue, QueueBuilder, StringSerializer, ZkClient};
/// let client = ZkClient::connect("127.0.0.1:2181")?;
/// let queue: DelayQueue<String> = QueueBuilder::new(&client, "/reminders", StringSerializer).build_delay_queue()?;
/// queue.put("in a minute".to_string(), DeliverAt::from(SystemTime::now() + Duration::from_secs(60)))?;
/// queue.put("at an epoch".to_string(), DeliverAt::from_epoch_millis(1_900_000_000_000)?)?;
/// # Ok(())
/// # }
/// ```
pub type DelayQueue<T> = Queue<T, kinds::Delay>;

/// A queue of items with ids, of Curator's `DistributedIdQueue` format, made
/// by [`QueueBuilder::build_id_queue`].
///
/// ```no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// use zk_queue::{IdQueue, QueueBuilder, StringSerializer, ZkClient};
/// let client = ZkClient::connect("127.0.0.1:2181")?;
/// let queue: IdQueue<String> = QueueBuilder::new(&client, "/orders", StringSerializer).build_id_queue()?;
/// queue.put("ship it".to_string(), "order/42")?;
/// queue.flush_timeout(std::time::Duration::from_secs(5));
/// assert_eq!(queue.remove("order/42")?, 1);
/// # Ok(())
/// # }
/// ```
pub type IdQueue<T> = Queue<T, kinds::Id>;
