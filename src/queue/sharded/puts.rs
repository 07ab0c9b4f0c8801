//! The put family of a [`ShardedQueue`]: each finds its shard with
//! `Shards::room` and puts there with the shard queue's own put.

use std::time::{Duration, Instant};

use super::ShardedQueue;
use crate::error::{Error, PutError, Result};
use crate::queue::handle::deadline_in;

impl<T: Send + 'static> ShardedQueue<T> {
    /// Puts one item into a shard with room, as the type's doc says: when
    /// every shard is full, waits for a new shard or for room as long as it
    /// takes; at the maximum number of shards, fails with [`Error::Full`]
    /// (or waits, with [`WhenFull::Wait`](crate::WhenFull::Wait)). Then returns as the shard
    /// queue's [`put`](crate::Queue::put) does (with background puts, once
    /// the item is accepted by the shard's put thread).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, ShardPolicy, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// # let queue = QueueBuilder::new(&client, "/jobs", StringSerializer).build_sharded_queue("/jobs-leader", ShardPolicy::new())?;
    /// match queue.put("job".to_string()) {
    ///     Err(zk_queue::Error::Full) => eprintln!("every shard is full"),
    ///     other => other?,
    /// }
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// [`Error::Full`] as said; [`Error::QueueClosed`] once closed;
    /// ZooKeeper errors counting or adding shards; as the shard queue's
    /// `put`.
    pub fn put(&self, item: T) -> Result<()> {
        match self.shards.room(None)? {
            Some(shard) => shard.queue.put(item),
            None => Err(Error::Full),
        }
    }

    /// Puts one item unless it would have to wait for room: a leader may
    /// still add a shard, a follower asks the leader for one and returns.
    /// If no shard has room now (counted afresh), or this handle's earlier
    /// background puts to the shards with room are still in flight past
    /// `puts_per_count`, the item comes back in [`PutError::Full`].
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, ShardPolicy, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// # let queue = QueueBuilder::new(&client, "/jobs", StringSerializer).build_sharded_queue("/jobs-leader", ShardPolicy::new())?;
    /// if let Err(zk_queue::PutError::Full(job)) = queue.try_put("job".to_string()) {
    ///     println!("full, {job} waits");
    /// }
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// As [`put_timeout`](Self::put_timeout).
    pub fn try_put(&self, item: T) -> std::result::Result<(), PutError<T>> {
        self.put_timeout(item, Duration::ZERO)
    }

    /// Like [`put`](Self::put), waiting at most `timeout` for room (a new
    /// shard, or a consumer's); if there is none by then, or at once at the
    /// maximum with [`WhenFull::Refuse`](crate::WhenFull::Refuse), the item comes back in
    /// [`PutError::Full`]. What is left of `timeout` bounds the shard
    /// queue's [`put_timeout`](crate::Queue::put_timeout).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, ShardPolicy, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// # let queue = QueueBuilder::new(&client, "/jobs", StringSerializer).build_sharded_queue("/jobs-leader", ShardPolicy::new())?;
    /// use std::time::Duration;
    /// queue.put_timeout("job".to_string(), Duration::from_secs(5))?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// [`PutError::Full`] as said; [`PutError::Failed`] as [`put`](Self::put)
    /// fails otherwise.
    pub fn put_timeout(&self, item: T, timeout: Duration) -> std::result::Result<(), PutError<T>> {
        let deadline = deadline_in(timeout);
        match self.shards.room(deadline) {
            Ok(Some(shard)) => shard.queue.put_timeout(item, left(deadline)),
            Ok(None) => Err(PutError::Full(item)),
            Err(error) => Err(PutError::Failed(error)),
        }
    }

    /// Puts several items in one node of one shard, as the shard queue's
    /// [`put_multi`](crate::Queue::put_multi); they count as one put, and
    /// wait for room as [`put`](Self::put) does.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, ShardPolicy, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// # let queue = QueueBuilder::new(&client, "/jobs", StringSerializer).build_sharded_queue("/jobs-leader", ShardPolicy::new())?;
    /// queue.put_multi(vec!["a".to_string(), "b".to_string()])?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// As [`put`](Self::put).
    pub fn put_multi(&self, items: Vec<T>) -> Result<()> {
        match self.shards.room(None)? {
            Some(shard) => shard.queue.put_multi(items),
            None => Err(Error::Full),
        }
    }

    /// [`put_multi`](Self::put_multi) waiting at most `timeout` for room,
    /// as [`put_timeout`](Self::put_timeout): a queue that stayed full gives
    /// the items back.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, ShardPolicy, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// # let queue = QueueBuilder::new(&client, "/jobs", StringSerializer).build_sharded_queue("/jobs-leader", ShardPolicy::new())?;
    /// use std::time::Duration;
    /// queue.put_multi_timeout(vec!["a".to_string(), "b".to_string()], Duration::from_secs(5))?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// As [`put_timeout`](Self::put_timeout).
    pub fn put_multi_timeout(&self, items: Vec<T>, timeout: Duration) -> std::result::Result<(), PutError<Vec<T>>> {
        let deadline = deadline_in(timeout);
        match self.shards.room(deadline) {
            Ok(Some(shard)) => shard.queue.put_multi_timeout(items, left(deadline)),
            Ok(None) => Err(PutError::Full(items)),
            Err(error) => Err(PutError::Failed(error)),
        }
    }

    /// Waits until every shard's background puts have finished; `false` if
    /// some are still pending after `timeout` (for all shards together), or
    /// if a shard reports a background put's failure, as
    /// [`Queue::flush_timeout`](crate::Queue::flush_timeout). Every shard is
    /// asked, so each reports its failure here.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, ShardPolicy, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// # let queue = QueueBuilder::new(&client, "/jobs", StringSerializer).build_sharded_queue("/jobs-leader", ShardPolicy::new())?;
    /// use std::time::Duration;
    /// assert!(queue.flush_timeout(Duration::from_secs(10)));
    /// # Ok(())
    /// # }
    /// ```
    pub fn flush_timeout(&self, timeout: Duration) -> bool {
        let deadline = deadline_in(timeout);
        // Not `all`: it would stop at the first shard that reports.
        let unflushed = self
            .shards
            .all()
            .iter()
            .filter(|shard| !shard.queue.flush_timeout(left(deadline)))
            .count();
        unflushed == 0
    }
}

/// What is left until `deadline` (without end if `None`).
fn left(deadline: Option<Instant>) -> Duration {
    deadline.map_or(Duration::MAX, |deadline| {
        deadline.saturating_duration_since(Instant::now())
    })
}
