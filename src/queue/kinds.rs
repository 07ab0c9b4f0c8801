//! The four kinds of Curator's queue family: each is a marker type for
//! [`Queue`] that adds the kind's put family, which names the items.
//!
//! Every put family has the same five verbs, each kind's naming argument
//! after the items: `put` (waits for room in a bounded queue), `try_put`
//! (never waits for room), `put_timeout` (waits up to a bound), and
//! `put_multi` / `put_multi_timeout` (many items in one node).

use std::time::Duration;

use super::handle::{deadline_in, Queue};
use super::DeliverAt;
use super::RawQueue;
use crate::error::{Error, PutError, Result};
use crate::inspect::Layout;
use crate::naming::{delay_prefix, fix_id, id_prefix, priority_prefix, QUEUE_PREFIX};

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

/// The kind of Curator's `DistributedIdQueue`: see [`IdQueue`](crate::IdQueue). Items are `queue-|<id>|<seq>` nodes, taken in put order, and can be removed by id. Ids are stored with `/` and `|` replaced by `_`, as Curator does; unlike Curator, [`remove`](Queue::remove) applies the same replacement, so any id that was put can be removed.
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

impl<T: Send + 'static> Queue<T, Fifo> {
    /// Puts one item; on a full bounded queue, waits for room.
    ///
    /// The item's node carries a random token after its frame, which Curator
    /// peers ignore. If a dropped connection loses the reply to the create,
    /// the queue's newest items are read back: a put found there is reported
    /// stored, one not found is sent again. So a lost reply neither stores
    /// the item twice nor reports it failed, unless a consumer took it before
    /// the read-back (then it is stored again: a duplicate, never a loss).
    ///
    /// With background puts (the default unless the queue is bounded), `put`
    /// returns once the item is handed to the put thread; its outcome reaches
    /// the put listeners.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = QueueBuilder::new(&client, "/jobs", StringSerializer).build_queue()?;
    /// queue.put("job".to_string())?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn put(&self, item: T) -> Result<()> {
        self.put_one(QUEUE_PREFIX, item, None).map_err(Error::from)
    }

    /// Puts one item unless a bounded queue is full now (counted with one
    /// listing); then the item comes back in [`PutError::Full`]. On an
    /// unbounded queue, the same as [`put`](Self::put).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = QueueBuilder::new(&client, "/jobs", StringSerializer).build_queue()?;
    /// if let Err(zk_queue::PutError::Full(job)) = queue.try_put("job".to_string()) {
    ///     println!("full, {job} waits");
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn try_put(&self, item: T) -> std::result::Result<(), PutError<T>> {
        self.put_one(QUEUE_PREFIX, item, Some(std::time::Instant::now()))
    }

    /// Puts one item, waiting at most `timeout` for room in a bounded queue
    /// (a true deadline: unrelated changes do not restart it); if the queue
    /// stayed full, the item comes back in [`PutError::Full`]. The deadline
    /// also ends the retries of a put sent while the connection is down: then
    /// it fails with [`Error::Timeout`], at most one request timeout after
    /// `timeout`, and the item may or may not have been stored.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = QueueBuilder::new(&client, "/jobs", StringSerializer).build_queue()?;
    /// use std::time::Duration;
    /// queue.put_timeout("job".to_string(), Duration::from_secs(5))?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn put_timeout(&self, item: T, timeout: Duration) -> std::result::Result<(), PutError<T>> {
        self.put_one(QUEUE_PREFIX, item, deadline_in(timeout))
    }

    /// Puts several items in one node; consumers get them one by one, in
    /// order. They count as one item toward `max_items`. An empty list is
    /// refused with [`Error::InvalidArgument`] before anything is sent.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = QueueBuilder::new(&client, "/jobs", StringSerializer).build_queue()?;
    /// queue.put_multi(vec!["a".to_string(), "b".to_string()])?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn put_multi(&self, items: Vec<T>) -> Result<()> {
        self.put_many(QUEUE_PREFIX, items, None).map_err(Error::from)
    }

    /// [`put_multi`](Self::put_multi) with a deadline, as
    /// [`put_timeout`](Self::put_timeout): a queue that stayed full gives the
    /// items back.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = QueueBuilder::new(&client, "/jobs", StringSerializer).build_queue()?;
    /// use std::time::Duration;
    /// let jobs = vec!["a".to_string(), "b".to_string()];
    /// queue.put_multi_timeout(jobs, Duration::from_secs(5))?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn put_multi_timeout(&self, items: Vec<T>, timeout: Duration) -> std::result::Result<(), PutError<Vec<T>>> {
        self.put_many(QUEUE_PREFIX, items, deadline_in(timeout))
    }
}

impl<T: Send + 'static> Queue<T, Priority> {
    /// Puts one item with its priority; otherwise as
    /// [`DistributedQueue::put`](crate::DistributedQueue::put).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = QueueBuilder::new(&client, "/tasks", StringSerializer).build_priority_queue(10)?;
    /// queue.put("job".to_string(), 5)?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn put(&self, item: T, priority: i32) -> Result<()> {
        self.put_one(&priority_prefix(priority), item, None)
            .map_err(Error::from)
    }

    /// Puts one item with its priority unless a bounded queue is full now; as
    /// [`DistributedQueue::try_put`](crate::DistributedQueue::try_put).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = QueueBuilder::new(&client, "/tasks", StringSerializer).build_priority_queue(10)?;
    /// if let Err(zk_queue::PutError::Full(job)) = queue.try_put("job".to_string(), 5) {
    ///     println!("full, {job} waits");
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn try_put(&self, item: T, priority: i32) -> std::result::Result<(), PutError<T>> {
        self.put_one(&priority_prefix(priority), item, Some(std::time::Instant::now()))
    }

    /// Puts one item with its priority, waiting at most `timeout`; as
    /// [`DistributedQueue::put_timeout`](crate::DistributedQueue::put_timeout).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = QueueBuilder::new(&client, "/tasks", StringSerializer).build_priority_queue(10)?;
    /// use std::time::Duration;
    /// queue.put_timeout("job".to_string(), 5, Duration::from_secs(5))?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn put_timeout(&self, item: T, priority: i32, timeout: Duration) -> std::result::Result<(), PutError<T>> {
        self.put_one(&priority_prefix(priority), item, deadline_in(timeout))
    }

    /// Puts several items in one node, with one priority; as
    /// [`DistributedQueue::put_multi`](crate::DistributedQueue::put_multi).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = QueueBuilder::new(&client, "/tasks", StringSerializer).build_priority_queue(10)?;
    /// queue.put_multi(vec!["a".to_string(), "b".to_string()], 5)?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn put_multi(&self, items: Vec<T>, priority: i32) -> Result<()> {
        self.put_many(&priority_prefix(priority), items, None)
            .map_err(Error::from)
    }

    /// [`put_multi`](Self::put_multi) with a deadline; as
    /// [`DistributedQueue::put_multi_timeout`](crate::DistributedQueue::put_multi_timeout).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = QueueBuilder::new(&client, "/tasks", StringSerializer).build_priority_queue(10)?;
    /// use std::time::Duration;
    /// let jobs = vec!["a".to_string(), "b".to_string()];
    /// queue.put_multi_timeout(jobs, 5, Duration::from_secs(5))?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn put_multi_timeout(
        &self,
        items: Vec<T>,
        priority: i32,
        timeout: Duration,
    ) -> std::result::Result<(), PutError<Vec<T>>> {
        self.put_many(&priority_prefix(priority), items, deadline_in(timeout))
    }
}

impl<T: Send + 'static> Queue<T, Delay> {
    /// Puts one item with its deliver at; otherwise as
    /// [`DistributedQueue::put`](crate::DistributedQueue::put).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use std::time::{Duration, SystemTime};
    /// # use zk_queue::{DeliverAt, QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = QueueBuilder::new(&client, "/reminders", StringSerializer).build_delay_queue()?;
    /// let soon = DeliverAt::from(SystemTime::now() + Duration::from_secs(60));
    /// queue.put("job".to_string(), soon)?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn put(&self, item: T, deliver_at: DeliverAt) -> Result<()> {
        self.put_one(&delay_prefix(deliver_at.epoch_millis()), item, None)
            .map_err(Error::from)
    }

    /// Puts one item with its deliver at unless a bounded queue is full now; as
    /// [`DistributedQueue::try_put`](crate::DistributedQueue::try_put).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use std::time::{Duration, SystemTime};
    /// # use zk_queue::{DeliverAt, QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = QueueBuilder::new(&client, "/reminders", StringSerializer).build_delay_queue()?;
    /// let soon = DeliverAt::from(SystemTime::now() + Duration::from_secs(60));
    /// if let Err(zk_queue::PutError::Full(job)) = queue.try_put("job".to_string(), soon) {
    ///     println!("full, {job} waits");
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn try_put(&self, item: T, deliver_at: DeliverAt) -> std::result::Result<(), PutError<T>> {
        self.put_one(
            &delay_prefix(deliver_at.epoch_millis()),
            item,
            Some(std::time::Instant::now()),
        )
    }

    /// Puts one item with its deliver at, waiting at most `timeout`; as
    /// [`DistributedQueue::put_timeout`](crate::DistributedQueue::put_timeout).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use std::time::{Duration, SystemTime};
    /// # use zk_queue::{DeliverAt, QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = QueueBuilder::new(&client, "/reminders", StringSerializer).build_delay_queue()?;
    /// let soon = DeliverAt::from(SystemTime::now() + Duration::from_secs(60));
    /// queue.put_timeout("job".to_string(), soon, Duration::from_secs(5))?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn put_timeout(
        &self,
        item: T,
        deliver_at: DeliverAt,
        timeout: Duration,
    ) -> std::result::Result<(), PutError<T>> {
        self.put_one(&delay_prefix(deliver_at.epoch_millis()), item, deadline_in(timeout))
    }

    /// Puts several items in one node, with one deliver at; as
    /// [`DistributedQueue::put_multi`](crate::DistributedQueue::put_multi).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use std::time::{Duration, SystemTime};
    /// # use zk_queue::{DeliverAt, QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = QueueBuilder::new(&client, "/reminders", StringSerializer).build_delay_queue()?;
    /// let soon = DeliverAt::from(SystemTime::now() + Duration::from_secs(60));
    /// queue.put_multi(vec!["a".to_string(), "b".to_string()], soon)?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn put_multi(&self, items: Vec<T>, deliver_at: DeliverAt) -> Result<()> {
        self.put_many(&delay_prefix(deliver_at.epoch_millis()), items, None)
            .map_err(Error::from)
    }

    /// [`put_multi`](Self::put_multi) with a deadline; as
    /// [`DistributedQueue::put_multi_timeout`](crate::DistributedQueue::put_multi_timeout).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use std::time::{Duration, SystemTime};
    /// # use zk_queue::{DeliverAt, QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = QueueBuilder::new(&client, "/reminders", StringSerializer).build_delay_queue()?;
    /// let soon = DeliverAt::from(SystemTime::now() + Duration::from_secs(60));
    /// let jobs = vec!["a".to_string(), "b".to_string()];
    /// queue.put_multi_timeout(jobs, soon, Duration::from_secs(5))?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn put_multi_timeout(
        &self,
        items: Vec<T>,
        deliver_at: DeliverAt,
        timeout: Duration,
    ) -> std::result::Result<(), PutError<Vec<T>>> {
        self.put_many(&delay_prefix(deliver_at.epoch_millis()), items, deadline_in(timeout))
    }
}

impl<T: Send + 'static> Queue<T, Id> {
    /// Puts one item with its id; otherwise as
    /// [`DistributedQueue::put`](crate::DistributedQueue::put).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = QueueBuilder::new(&client, "/orders", StringSerializer).build_id_queue()?;
    /// queue.put("job".to_string(), "order-7")?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn put(&self, item: T, id: &str) -> Result<()> {
        let prefix = checked_id_prefix(id)?;
        self.put_one(&prefix, item, None).map_err(Error::from)
    }

    /// Puts one item with its id unless a bounded queue is full now; as
    /// [`DistributedQueue::try_put`](crate::DistributedQueue::try_put).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = QueueBuilder::new(&client, "/orders", StringSerializer).build_id_queue()?;
    /// if let Err(zk_queue::PutError::Full(job)) = queue.try_put("job".to_string(), "order-7") {
    ///     println!("full, {job} waits");
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn try_put(&self, item: T, id: &str) -> std::result::Result<(), PutError<T>> {
        let prefix = checked_id_prefix(id)?;
        self.put_one(&prefix, item, Some(std::time::Instant::now()))
    }

    /// Puts one item with its id, waiting at most `timeout`; as
    /// [`DistributedQueue::put_timeout`](crate::DistributedQueue::put_timeout).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = QueueBuilder::new(&client, "/orders", StringSerializer).build_id_queue()?;
    /// use std::time::Duration;
    /// queue.put_timeout("job".to_string(), "order-7", Duration::from_secs(5))?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn put_timeout(&self, item: T, id: &str, timeout: Duration) -> std::result::Result<(), PutError<T>> {
        let prefix = checked_id_prefix(id)?;
        self.put_one(&prefix, item, deadline_in(timeout))
    }

    /// Puts several items in one node, with one id; as
    /// [`DistributedQueue::put_multi`](crate::DistributedQueue::put_multi).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = QueueBuilder::new(&client, "/orders", StringSerializer).build_id_queue()?;
    /// queue.put_multi(vec!["a".to_string(), "b".to_string()], "order-7")?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn put_multi(&self, items: Vec<T>, id: &str) -> Result<()> {
        let prefix = checked_id_prefix(id)?;
        self.put_many(&prefix, items, None).map_err(Error::from)
    }

    /// [`put_multi`](Self::put_multi) with a deadline; as
    /// [`DistributedQueue::put_multi_timeout`](crate::DistributedQueue::put_multi_timeout).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = QueueBuilder::new(&client, "/orders", StringSerializer).build_id_queue()?;
    /// use std::time::Duration;
    /// let jobs = vec!["a".to_string(), "b".to_string()];
    /// queue.put_multi_timeout(jobs, "order-7", Duration::from_secs(5))?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn put_multi_timeout(
        &self,
        items: Vec<T>,
        id: &str,
        timeout: Duration,
    ) -> std::result::Result<(), PutError<Vec<T>>> {
        let prefix = checked_id_prefix(id)?;
        self.put_many(&prefix, items, deadline_in(timeout))
    }

    /// Removes every item with this id and returns how many were removed.
    /// It first waits (up to the final-flush time) for this handle's
    /// background puts, so an item put just before is removed too.
    ///
    /// Items a lock-safe consumer holds are told apart by their locks, so
    /// only when this handle has the consumers'
    /// [`lock_path`](crate::QueueBuilder::lock_path):
    /// - with it, held items are skipped (and logged): not removed, not
    ///   counted, and their holders settle them as usual;
    /// - without it, held items are removed like any. The holder's
    ///   acknowledge (or requeue, or dead-letter move) then has nothing to
    ///   act on: it only releases its lock, logs at info, counts the item in
    ///   [`QueueStats::removed_while_held`](crate::QueueStats::removed_while_held),
    ///   and tells its consumer [`Error::ItemRemoved`] (through
    ///   [`QueueConsumer::error`](crate::QueueConsumer::error), or an
    ///   [`ItemReceiver`](crate::ItemReceiver)'s errors). A requeued item is
    ///   not put back.
    ///
    /// ``` no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = QueueBuilder::new(&client, "/orders", StringSerializer).build_id_queue()?;
    /// queue.put("ship".to_string(), "order-7")?;
    /// queue.flush_timeout(std::time::Duration::from_secs(5));
    /// assert_eq!(queue.remove("order-7")?, 1);
    /// # Ok(())
    /// # }
    /// ```
    pub fn remove(&self, id: &str) -> Result<usize> {
        let wanted = fix_id(id);
        let core = &self.core;
        if !self.producer.flush(deadline_in(core.options.final_flush)) {
            log::info!(
                "{}: background puts still pending; remove({id:?}) may miss their items",
                core.path
            );
        }
        // Held items are those locked under the consumers' lock path: this
        // handle's (without one, locks are not seen). The locks it takes get
        // the queue's ACL, as the consumers' do.
        let mut items = RawQueue::new(&core.client, &core.path)?
            .layout(Layout::Curator)
            .lock_acl(core.options.acl.clone());
        if let Some(lock_dir) = &core.options.lock_path {
            items = items.lock_path(lock_dir)?;
        }
        let purged = match items.purge_where(|item| item.id.as_deref() == Some(wanted.as_str())) {
            Err(Error::NoNode { .. }) => return Ok(0),
            purged => purged?,
        };
        if purged.held > 0 {
            log::info!(
                "{}: {} item(s) with id {id:?} are being consumed and were not removed",
                core.path,
                purged.held
            );
        }
        Ok(purged.deleted)
    }
}

fn checked_id_prefix(id: &str) -> Result<String> {
    if id.is_empty() {
        return Err(Error::InvalidArgument("an item id must not be empty".into()));
    }
    Ok(id_prefix(id))
}
