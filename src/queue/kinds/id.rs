//! The put family of Curator's `DistributedIdQueue` and its removal by id (the kind [`Id`]; its marker is in `markers`).

use std::time::Duration;

use crate::error::{Error, PutError, Result};
use crate::inspect::Layout;
use crate::naming::{fix_id, id_prefix};
use crate::queue::handle::{deadline_in, Queue};
use crate::queue::markers::Id;
use crate::queue::RawQueue;

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
        if !self.producer.settle(deadline_in(core.options.final_flush)) {
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
