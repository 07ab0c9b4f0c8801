//! [`ShardedQueue`]: one logical FIFO queue spread over shard queues, laid
//! out as Curator's `QueueSharder` lays it out, so that Java sharders and
//! this crate's share it.
//!
//! - `policy`: when a shard is added, and which shard a put goes to.
//! - `shards`: the shards known, their counts, adopting and adding shards.
//! - `checker`: the thread that finds new shards, counts, and (as the
//!   leader) adds shards.

mod checker;
mod policy;
mod shards;

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

pub use policy::{ShardChoice, ShardPolicy};
use shards::Shards;

use super::{CloseReport, QueueBuilder, QueueStats};
use crate::error::{Error, PutError, Result};
use crate::path;
use crate::recipes::LeaderLatch;
use crate::sync::Joiner;

/// A queue spread over shards: the children `queue-<UUID>` of its path,
/// each a plain FIFO queue of Curator's format, as Curator's `QueueSharder`
/// makes them. Made by [`QueueBuilder::build_sharded_queue`].
///
/// - **Puts** go to one shard each, as the [`ShardPolicy`]'s
///   [`ShardChoice`] picks it from the counts of the latest check plus this
///   handle's own puts since, skipping shards that are full while another
///   is not. Order holds within a shard, not across shards.
/// - **Consumers** (a callback consumer set on the builder) consume every
///   shard, also shards other sharders add later: the queue watches its
///   path and starts a shard queue the moment a shard appears.
/// - **Shards** are added by the leader only, elected among all sharders of
///   the queue (Java ones too) with a [`LeaderLatch`] at the leader path:
///   as Curator's leader does, when a check finds a shard at or past the
///   threshold; and also, unlike Curator, as soon as this handle's own puts
///   find every shard full, so that a leader's puts never overfill a shard
///   while the maximum allows another. Shards are never deleted.
///
/// ```no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// use zk_queue::{ConsumeError, QueueBuilder, ShardPolicy, StringSerializer, ZkClient};
/// let client = ZkClient::connect("127.0.0.1:2181")?;
/// let queue = QueueBuilder::new(&client, "/jobs", StringSerializer)
///     .consumer(|job: String| -> Result<(), ConsumeError> {
///         println!("{job}");
///         Ok(())
///     })
///     .build_sharded_queue("/jobs-leader", ShardPolicy::new())?;
/// queue.put("job".to_string())?;
/// println!("{} shards", queue.shard_count());
/// # Ok(())
/// # }
/// ```
pub struct ShardedQueue<T: Send + 'static> {
    shards: Arc<Shards<T>>,
    checker: Mutex<Option<Joiner>>,
}

impl<T: Send + 'static> ShardedQueue<T> {
    pub(super) fn start(template: QueueBuilder<T>, leader_path: &str, policy: ShardPolicy) -> Result<ShardedQueue<T>> {
        policy.validate()?;
        if template.pulls() {
            return Err(Error::InvalidArgument(
                "a sharded queue takes a callback consumer, not a pull consumer".to_owned(),
            ));
        }
        let (client, queue_path, acl) = template.sharding_parts();
        path::validate_queue_path(queue_path)?;
        path::validate_queue_path(leader_path)?;
        if path::is_at_or_under(leader_path, queue_path) || path::is_at_or_under(queue_path, leader_path) {
            return Err(Error::InvalidArgument(
                "the leader path must be neither the queue path, nor inside it, nor hold it".to_owned(),
            ));
        }
        client.ensure_path_with(queue_path, crate::client::Opts::new().acl(acl))?;
        let (existing, _) = client.get_children(queue_path)?;
        let latch = LeaderLatch::builder(client, leader_path).build()?;
        let shards = Arc::new(Shards::new(template, policy, latch));
        shards.adopt(&existing)?;
        if shards.count() == 0 {
            // As Curator's sharder does when it finds none.
            shards.add(0)?;
        }
        let running = Arc::clone(&shards);
        let checker = Joiner::spawn("zk-queue-shards", move || checker::run(&running))
            .map_err(|e| Error::spawn("sharded queue checker", e))?;
        Ok(ShardedQueue {
            shards,
            checker: Mutex::new(Some(checker)),
        })
    }

    /// Puts one item into the shard the policy picks. Returns as the shard
    /// queue's [`put`](super::Queue::put) does.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, ShardPolicy, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// # let queue = QueueBuilder::new(&client, "/jobs", StringSerializer).build_sharded_queue("/jobs-leader", ShardPolicy::new())?;
    /// queue.put("job".to_string())?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// As the shard queue's `put`. (A shard that cannot be added when this
    /// handle leads and every shard is full is logged, and the put goes to
    /// the least full shard.)
    pub fn put(&self, item: T) -> Result<()> {
        self.shards.pick()?.queue.put(item)
    }

    /// Like [`put`](Self::put), within `timeout`, as the shard queue's
    /// [`put_timeout`](super::Queue::put_timeout).
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
    /// As the shard queue's `put_timeout`.
    pub fn put_timeout(&self, item: T, timeout: Duration) -> std::result::Result<(), PutError<T>> {
        match self.shards.pick() {
            Ok(shard) => shard.queue.put_timeout(item, timeout),
            // Only when there is no shard and none could be added.
            Err(error) => Err(PutError::Failed(error)),
        }
    }

    /// Puts several items in one node of one shard, as the shard queue's
    /// [`put_multi`](super::Queue::put_multi); they count as one put.
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
    /// As the shard queue's `put_multi`.
    pub fn put_multi(&self, items: Vec<T>) -> Result<()> {
        self.shards.pick()?.queue.put_multi(items)
    }

    /// Waits until every shard's background puts have finished; `false` if
    /// some are still pending after `timeout` (for all shards together).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, ShardPolicy, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// # let queue = QueueBuilder::new(&client, "/jobs", StringSerializer).build_sharded_queue("/jobs-leader", ShardPolicy::new())?;
    /// use std::time::Duration;
    /// assert!(queue.flush_puts_timeout(Duration::from_secs(10)));
    /// # Ok(())
    /// # }
    /// ```
    pub fn flush_puts_timeout(&self, timeout: Duration) -> bool {
        let deadline = std::time::Instant::now() + timeout;
        self.shards.all().iter().all(|shard| {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            shard.queue.flush_timeout(left)
        })
    }

    /// The number of shards this handle knows of.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, ShardPolicy, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// # let queue = QueueBuilder::new(&client, "/jobs", StringSerializer).build_sharded_queue("/jobs-leader", ShardPolicy::new())?;
    /// assert!(queue.shard_count() >= 1);
    /// # Ok(())
    /// # }
    /// ```
    pub fn shard_count(&self) -> usize {
        self.shards.count()
    }

    /// The paths of the shards this handle knows of, in the order it found
    /// them.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, ShardPolicy, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// # let queue = QueueBuilder::new(&client, "/jobs", StringSerializer).build_sharded_queue("/jobs-leader", ShardPolicy::new())?;
    /// for shard in queue.shard_paths() {
    ///     println!("{shard}");
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn shard_paths(&self) -> Vec<String> {
        self.shards
            .all()
            .iter()
            .map(|shard| self.shards.shard_path(&shard.name))
            .collect()
    }

    /// Whether this handle is the sharders' leader now (the one that adds
    /// shards).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, ShardPolicy, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// # let queue = QueueBuilder::new(&client, "/jobs", StringSerializer).build_sharded_queue("/jobs-leader", ShardPolicy::new())?;
    /// println!("leading: {}", queue.is_leader());
    /// # Ok(())
    /// # }
    /// ```
    pub fn is_leader(&self) -> bool {
        self.shards.latch.has_leadership()
    }

    /// The items of every shard, counted now (one listing per shard).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, ShardPolicy, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// # let queue = QueueBuilder::new(&client, "/jobs", StringSerializer).build_sharded_queue("/jobs-leader", ShardPolicy::new())?;
    /// println!("{} items", queue.len()?);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// The first shard's error, as [`Queue::len`](super::Queue::len).
    pub fn len(&self) -> Result<usize> {
        self.shards.all().iter().map(|shard| shard.queue.len()).sum()
    }

    /// Whether every shard is empty now.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, ShardPolicy, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// # let queue = QueueBuilder::new(&client, "/jobs", StringSerializer).build_sharded_queue("/jobs-leader", ShardPolicy::new())?;
    /// println!("empty: {}", queue.is_empty()?);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// As [`len`](Self::len).
    pub fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }

    /// Each shard's path and its handle's statistics.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, ShardPolicy, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// # let queue = QueueBuilder::new(&client, "/jobs", StringSerializer).build_sharded_queue("/jobs-leader", ShardPolicy::new())?;
    /// for (shard, stats) in queue.shard_stats() {
    ///     println!("{shard}: {} put", stats.puts);
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn shard_stats(&self) -> Vec<(String, QueueStats)> {
        self.shards
            .all()
            .iter()
            .map(|shard| (self.shards.shard_path(&shard.name), shard.queue.stats()))
            .collect()
    }

    /// Stops finding and adding shards, gives leadership up, and closes
    /// every shard queue, each as [`Queue::close`](super::Queue::close)
    /// does; the report adds theirs up. Closing again does nothing.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, ShardPolicy, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// # let queue = QueueBuilder::new(&client, "/jobs", StringSerializer).build_sharded_queue("/jobs-leader", ShardPolicy::new())?;
    /// let report = queue.close();
    /// println!("{} finished while closing", report.finished);
    /// # Ok(())
    /// # }
    /// ```
    pub fn close(&self) -> CloseReport {
        self.shards.stop();
        if let Some(checker) = self.checker.lock().take() {
            checker.join_until(None, "sharded queue checker");
        }
        if let Err(e) = self.shards.latch.close() {
            log::warn!("sharded queue {}: closing its leader latch: {e}", self.shards.path);
        }
        let mut report = CloseReport::default();
        for shard in self.shards.all() {
            let closed = shard.queue.close();
            report.puts_pending += closed.puts_pending;
            report.finished += closed.finished;
            report.released += closed.released;
            report.still_running += closed.still_running;
        }
        report
    }
}

impl<T: Send + 'static> Drop for ShardedQueue<T> {
    fn drop(&mut self) {
        self.close();
    }
}

impl<T: Send + 'static> std::fmt::Debug for ShardedQueue<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShardedQueue")
            .field("path", &self.shards.path)
            .field("shards", &self.shard_count())
            .field("policy", &self.shards.policy)
            .finish()
    }
}
