//! The four kinds of Curator's queue family as marker types: what a
//! [`Queue`](crate::Queue) is of. Each kind's put family (`kinds`) adds its
//! puts to the queue of its marker; the queue names the FIFO marker as its
//! default kind, so the markers live below both.

/// The kind of Curator's `DistributedQueue`: see [`DistributedQueue`](crate::DistributedQueue). Items are `queue-<seq>` nodes, taken in put order.
///
/// ```no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// use zk_queue::{DistributedQueue, QueueBuilder, StringSerializer, ZkClient};
/// let client = ZkClient::connect("127.0.0.1:2181")?;
/// let queue: DistributedQueue<String> = QueueBuilder::new(&client, "/jobs", StringSerializer).build_queue()?;
/// queue.put("job".to_string())?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub enum Fifo {}

/// The kind of Curator's `DistributedPriorityQueue`: see [`PriorityQueue`](crate::PriorityQueue). Items are `queue-<priority><seq>` nodes: lower priorities first, equal priorities in put order.
///
/// ```no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// use zk_queue::{PriorityQueue, QueueBuilder, StringSerializer, ZkClient};
/// let client = ZkClient::connect("127.0.0.1:2181")?;
/// let queue: PriorityQueue<String> = QueueBuilder::new(&client, "/tasks", StringSerializer).build_priority_queue(10)?;
/// queue.put("job".to_string(), 5)?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub enum Priority {}

/// The kind of Curator's `DistributedDelayQueue`: see [`DelayQueue`](crate::DelayQueue). Items are `queue-|<due time>|<seq>` nodes, delivered once due (by the consumer's clock), earliest first, equal times in put order.
///
/// ```no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// use std::time::{Duration, SystemTime};
/// use zk_queue::{DeliverAt, DelayQueue, QueueBuilder, StringSerializer, ZkClient};
/// let client = ZkClient::connect("127.0.0.1:2181")?;
/// let queue: DelayQueue<String> = QueueBuilder::new(&client, "/reminders", StringSerializer).build_delay_queue()?;
/// queue.put("in a minute".to_string(), DeliverAt::from(SystemTime::now() + Duration::from_secs(60)))?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub enum Delay {}

/// The kind of Curator's `DistributedIdQueue`: see [`IdQueue`](crate::IdQueue). Items are `queue-|<id>|<seq>` nodes, taken in put order, and can be removed by id. Ids are stored with `/` and `|` replaced by `_`, as Curator does; unlike Curator, [`remove`](crate::Queue::remove) applies the same replacement, so any id that was put can be removed.
///
/// ```no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// use zk_queue::{IdQueue, QueueBuilder, StringSerializer, ZkClient};
/// let client = ZkClient::connect("127.0.0.1:2181")?;
/// let queue: IdQueue<String> = QueueBuilder::new(&client, "/orders", StringSerializer).build_id_queue()?;
/// queue.put("job".to_string(), "order-7")?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub enum Id {}
