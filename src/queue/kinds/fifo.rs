//! The put family of Curator's `DistributedQueue` (the kind [`Fifo`]; its marker is in `markers`).

use std::time::Duration;

use crate::error::{Error, PutError, Result};
use crate::naming::QUEUE_PREFIX;
use crate::queue::handle::{deadline_in, Queue};
use crate::queue::markers::Fifo;

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
    /// `Ok` means stored. With no server reachable, `put` fails by the
    /// client's request timeout with [`Error::Unreachable`], storing nothing.
    /// With [background puts](crate::QueueBuilder::put_in_background), `put`
    /// returns once the item is accepted by the put thread; its outcome
    /// reaches the put listeners.
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
    /// unbounded queue, the same as [`put`](Self::put), but waiting at most a
    /// second for a server: while none can be reached, it fails with
    /// [`Error::Unreachable`] then.
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
    /// also ends the retries of storing (at least a second after room was
    /// found): then it fails with [`Error::Unreachable`] while no server can
    /// be reached, or with [`Error::Timeout`] (a second later at most) while
    /// a connected server is still answering, and then the item may or may
    /// not have been stored.
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
