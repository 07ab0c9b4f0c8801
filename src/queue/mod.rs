//! Curator-compatible distributed queues: [`QueueBuilder`] builds a
//! [`Queue`] of one of the four [`kinds`].
//!
//! Nodes, data and locks are byte-compatible with Apache Curator 5.x:
//! items are `PERSISTENT_SEQUENTIAL` children named `queue-…` holding
//! Curator's item frame, and lock-safe consumers lock `<lock_path>/<item>`.

mod builder;
mod consumer;
mod core;
mod dead_letter;
mod deliver_at;
mod engine;
mod handle;
pub mod kinds;
mod lock_record;
mod meta;
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
