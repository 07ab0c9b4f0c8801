//! [`ItemMeta`]: what a consumer may know about the item it is processing.

use std::time::SystemTime;

use crate::codec::trailer;
use crate::inspect::{ItemName, Layout};
use crate::queue::DeliverAt;

/// What the queue knows about the item being delivered: the attempt, the
/// node it came from, what its name says (priority, due time, id), and when
/// it was first put. A callback consumer reads it in
/// [`QueueConsumer::consume_with_meta`](crate::QueueConsumer::consume_with_meta)
/// (or a closure given to
/// [`QueueBuilder::consumer_with_meta`](crate::QueueBuilder::consumer_with_meta)),
/// a pull consumer with [`Delivery::meta`](crate::Delivery::meta). The records
/// of an item put with `put_multi` share its node, so they share its
/// metadata.
///
/// ```no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// use zk_queue::{ConsumeError, ItemMeta, QueueBuilder, StringSerializer, ZkClient};
/// let client = ZkClient::connect("127.0.0.1:2181")?;
/// let queue = QueueBuilder::new(&client, "/tasks", StringSerializer)
///     .lock_path("/tasks-locks")
///     .consumer_with_meta(|task: String, meta: &ItemMeta| -> Result<(), ConsumeError> {
///         println!("{task}: attempt {}, priority {:?}, node {}", meta.attempt(), meta.priority(), meta.name());
///         Ok(())
///     })
///     .build_priority_queue(0)?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ItemMeta {
    name: String,
    attempt: u32,
    priority: Option<i32>,
    due: Option<DeliverAt>,
    id: Option<String>,
    put_at: SystemTime,
}

impl ItemMeta {
    /// The metadata of item node `name`, which failed `failed` deliveries so
    /// far and was first put at `put_at` (epoch milliseconds).
    pub(crate) fn new(name: &str, failed: u32, put_at: i64) -> ItemMeta {
        let parsed = ItemName::parse(name, Some(Layout::Curator));
        let parsed = parsed.as_ref();
        ItemMeta {
            name: name.to_owned(),
            attempt: crate::inspect::attempt_number(failed),
            priority: parsed.and_then(|n| n.priority),
            due: parsed
                .and_then(|n| n.due)
                .and_then(|due| DeliverAt::from_epoch_millis(due).ok()),
            id: parsed.and_then(|n| n.id.clone()),
            put_at: trailer::from_epoch_millis(put_at),
        }
    }

    /// The item's node name in the queue (a requeued item has a new one).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// # let (builder, receiver) = QueueBuilder::new(&client, "/jobs", StringSerializer).pull_consumer();
    /// # let queue = builder.build_queue()?;
    /// let job = receiver.take()?;
    /// println!("{} from node {}", *job, job.meta().name());
    /// # Ok(())
    /// # }
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Which delivery of the item this is: 1 for the first, 2 after one
    /// failed delivery, and so on. Failures are counted by this crate's
    /// consumers (a Curator consumer's are not), across requeues and crashes.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// # let (builder, receiver) = QueueBuilder::new(&client, "/jobs", StringSerializer).lock_path("/jobs-locks").pull_consumer();
    /// # let queue = builder.build_queue()?;
    /// let job = receiver.take()?;
    /// if job.meta().attempt() > 3 {
    ///     eprintln!("{} keeps failing", *job);
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// The priority of an item of a priority queue; `None` for other kinds
    /// (and for an item a Curator consumer requeued, which drops it).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// # let (builder, receiver) = QueueBuilder::new(&client, "/tasks", StringSerializer).pull_consumer();
    /// # let queue = builder.build_priority_queue(0)?;
    /// let task = receiver.take()?;
    /// println!("priority {:?}", task.meta().priority());
    /// # Ok(())
    /// # }
    /// ```
    pub fn priority(&self) -> Option<i32> {
        self.priority
    }

    /// When an item of a delay queue was due; `None` for other kinds.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// # let (builder, receiver) = QueueBuilder::new(&client, "/reminders", StringSerializer).pull_consumer();
    /// # let queue = builder.build_delay_queue()?;
    /// let reminder = receiver.take()?;
    /// if let Some(due) = reminder.meta().due() {
    ///     println!("due at {} ms", due.epoch_millis());
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn due(&self) -> Option<DeliverAt> {
        self.due
    }

    /// The id of an item of an id queue, as Curator stores it in the node
    /// name (`/` and `|` replaced by `_`); `None` for other kinds.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// # let (builder, receiver) = QueueBuilder::new(&client, "/orders", StringSerializer).pull_consumer();
    /// # let queue = builder.build_id_queue()?;
    /// let order = receiver.take()?;
    /// println!("order id {:?}", order.meta().id());
    /// # Ok(())
    /// # }
    /// ```
    pub fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    /// When the item was first put, kept across requeues (millisecond
    /// precision). An item put by Curator or never requeued by this crate
    /// has its node's creation time, by the server's clock.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// # let (builder, receiver) = QueueBuilder::new(&client, "/jobs", StringSerializer).pull_consumer();
    /// # let queue = builder.build_queue()?;
    /// let job = receiver.take()?;
    /// let waited = job.meta().put_time().elapsed().unwrap_or_default();
    /// println!("{} waited {waited:?}", *job);
    /// # Ok(())
    /// # }
    /// ```
    pub fn put_time(&self) -> SystemTime {
        self.put_at
    }
}
