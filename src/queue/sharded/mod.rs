//! [`ShardedQueue`]: one logical FIFO queue spread over shard queues, laid
//! out as Curator's `QueueSharder` lays it out, so that Java sharders and
//! this crate's share it. Built by
//! [`QueueBuilder::build_sharded_queue`], whose method lives here, beside
//! what it starts: the builder does not name the sharded queue.
//!
//! - `policy`: when a shard is added, and which shard a put goes to.
//! - `shards`: the shards known, their counts, adopting and adding shards,
//!   asking the leader for one.
//! - `room`: the shard of a put, never one without room (the bound below).
//! - `puts`: the put family, over `room` and the shard queues.
//! - `checker`: the thread that finds new shards, counts, and (as the
//!   leader) adds shards.
//!
//! The bound: a shard holds at most `threshold` item nodes from the puts
//! of any one handle, leader or follower, whatever its puts (foreground,
//! background, coalesced, multi-item); with `n` handles putting into the
//! same shard at once, at most `threshold + (n - 1) * puts_per_count`
//! (see `room` for why). Items put by Curator's producers, or by handles
//! whose policy has another threshold, are not held to it.

mod checker;
mod policy;
mod puts;
mod room;
mod shards;

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

pub use policy::{ShardChoice, ShardPolicy, WhenFull};
use shards::Shards;

use super::{CloseReport, QueueBuilder, QueueStats};
use crate::error::{Error, Result};
use crate::path;
use crate::recipes::LeaderLatch;
use crate::sync::Joiner;

/// A queue spread over shards: the children `queue-<UUID>` of its path,
/// each a plain FIFO queue of Curator's format, as Curator's `QueueSharder`
/// makes them. Made by [`QueueBuilder::build_sharded_queue`].
///
/// - **Puts** go to one shard each, as the [`ShardPolicy`]'s
///   [`ShardChoice`] picks it among the shards with room, and never to a
///   shard without: a handle reckons each shard as its latest count (one
///   `exists`, reading the number of children) plus its own puts since,
///   and counts a shard again after [`puts_per_count`](ShardPolicy::puts_per_count)
///   puts to it. So the puts of one handle, leader or not, foreground,
///   background or coalesced, never take a shard past the threshold; with
///   `n` handles putting into one shard at once, it holds at most
///   `threshold + (n - 1) * puts_per_count` item nodes. (Curator's
///   producers keep to no such bound.) Order holds within a shard, not
///   across shards.
/// - **When every shard is full** (by a fresh count), a leader adds a
///   shard at once; a follower asks the leader for one (it sets the leader
///   path's data, which the leader watches and Curator ignores) and waits
///   for it, or for consumers to make room: `put` without end, `put_timeout`
///   until its deadline, `try_put` not at all. A Curator leader does not
///   hear the request: it adds a shard at its next check. At the maximum
///   number of shards, a put is refused with [`Error::Full`] (or
///   [`PutError::Full`](crate::PutError::Full), giving the item back), or waits for room, as
///   [`ShardPolicy::when_full`] says.
/// - **Consumers** (a callback consumer set on the builder, or a
///   [`pull_consumer`](QueueBuilder::pull_consumer)'s one receiver) consume
///   every shard, also shards other sharders add later: the queue watches
///   its path and starts a shard queue the moment a shard appears. A pull
///   receiver's `claim_window` holds per shard.
/// - **Shards** are added by the leader only, elected among all sharders of
///   the queue (Java ones too) that run for it (see
///   [`ShardPolicy::run_for_leader`]) with a [`LeaderLatch`] at the leader
///   path: as Curator's leader does, when a check finds a shard at or past
///   the threshold; and also, unlike Curator, as soon as puts (its own, or
///   a follower's request) find every shard full. Shards are never deleted.
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

impl<T: Send + 'static> QueueBuilder<T> {
    /// A sharded queue (Curator's `QueueSharder` layout): plain FIFO shards
    /// `queue-<UUID>` under this builder's path, each a queue built with
    /// this builder's settings, and a leader, elected at `leader_path` with
    /// Curator's `LeaderLatch` names, that adds a shard as `policy` says.
    /// Java `QueueSharder`s with the same paths share it. A lock path or a
    /// dead-letter path set here is the parent of each shard's own (a child
    /// named after the shard). See [`ShardedQueue`] for what puts and
    /// consumers do.
    ///
    /// ``` no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// use zk_queue::{QueueBuilder, ShardPolicy, StringSerializer, ZkClient};
    /// let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = QueueBuilder::new(&client, "/jobs", StringSerializer)
    ///     .build_sharded_queue("/jobs-leader", ShardPolicy::new().threshold(10_000))?;
    /// queue.put("job".to_string())?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// As [`build_queue`](Self::build_queue); also [`Error::InvalidArgument`](crate::Error::InvalidArgument)
    /// for a policy without room or time, or a leader path that is the
    /// queue path, inside it, or holds it. A [`pull_consumer`](Self::pull_consumer)'s
    /// receiver takes the items of every shard.
    pub fn build_sharded_queue(self, leader_path: &str, policy: ShardPolicy) -> Result<ShardedQueue<T>> {
        ShardedQueue::start(self, leader_path, policy)
    }
}

impl<T: Send + 'static> ShardedQueue<T> {
    fn start(template: QueueBuilder<T>, leader_path: &str, policy: ShardPolicy) -> Result<ShardedQueue<T>> {
        policy.validate()?;
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
        let latch = match policy.run_for_leader_value() {
            true => Some(LeaderLatch::builder(client, leader_path).build()?),
            false => None,
        };
        let shards = Arc::new(Shards::new(template, policy, latch, leader_path));
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

    /// What this handle has done since it was built, all shards together:
    /// the sum of [`shard_stats`](Self::shard_stats), as
    /// [`Queue::stats`](super::Queue::stats).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, ShardPolicy, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// # let queue = QueueBuilder::new(&client, "/jobs", StringSerializer).build_sharded_queue("/jobs-leader", ShardPolicy::new())?;
    /// println!("{} put", queue.stats().puts);
    /// # Ok(())
    /// # }
    /// ```
    pub fn stats(&self) -> QueueStats {
        self.shards
            .all()
            .iter()
            .fold(QueueStats::default(), |total, shard| total.plus(&shard.queue.stats()))
    }

    /// Waits at most `timeout` for this handle to lead; whether it does.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, ShardPolicy, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// # let queue = QueueBuilder::new(&client, "/jobs", StringSerializer).build_sharded_queue("/jobs-leader", ShardPolicy::new())?;
    /// use std::time::Duration;
    /// if !queue.await_leadership_timeout(Duration::from_secs(5))? {
    ///     println!("another sharder leads");
    /// }
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if this handle does not run for leader
    /// ([`ShardPolicy::run_for_leader`]); as
    /// [`LeaderLatch::await_leadership_timeout`].
    pub fn await_leadership_timeout(&self, timeout: Duration) -> Result<bool> {
        match &self.shards.latch {
            Some(latch) => latch.await_leadership_timeout(timeout),
            None => Err(Error::InvalidArgument(
                "this sharded queue does not run for leader".to_owned(),
            )),
        }
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
    /// shards); never, if it does not run for leader.
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
        self.shards.leads()
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
        if let Some(Err(e)) = self.shards.latch.as_ref().map(LeaderLatch::close) {
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
        self.shards.close_pull();
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
