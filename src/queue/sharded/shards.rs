//! The shards a sharded queue knows of: each one's queue, its item count at
//! the latest check and this handle's puts since, and how new shards are
//! adopted and added.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex, RwLock};

use super::policy::ShardPolicy;
use crate::client::{Opts, ZkClient};
use crate::error::{Error, Result};
use crate::naming::{random_uuid, QUEUE_PREFIX};
use crate::path;
use crate::queue::{DistributedQueue, QueueBuilder};
use crate::recipes::LeaderLatch;
use crate::sync::{Gate, Latch};

/// How many shard scanners of one sharded queue may hold a whole listing
/// at once.
const LISTINGS_AT_ONCE: usize = 2;

/// One shard: a queue at `<queue path>/<name>`.
///
/// What it holds is reckoned as its latest count of item nodes plus this
/// handle's puts to it that had not ended when the count began (some of
/// those may be in the count already, and coalesced puts share nodes: the
/// reckoning errs high, never low).
pub(super) struct Shard<T: Send + 'static> {
    pub(super) name: String,
    pub(super) queue: DistributedQueue<T>,
    /// Its latest count, taken as one so that its two halves agree.
    count: Mutex<Count>,
    /// Puts this handle picked it for, ever.
    picked: AtomicU64,
}

/// A count of a shard.
#[derive(Clone, Copy, Default)]
struct Count {
    /// Its item nodes.
    nodes: u64,
    /// This handle's puts to it that had ended when the count began.
    ended_before: u64,
    /// When it began; `None` before the first.
    at: Option<Instant>,
}

impl<T: Send + 'static> Shard<T> {
    fn new(name: String, queue: DistributedQueue<T>) -> Shard<T> {
        Shard {
            name,
            queue,
            count: Mutex::new(Count::default()),
            picked: AtomicU64::new(0),
        }
    }

    /// This handle's puts to it that its latest count may have missed.
    pub(super) fn uncounted(&self) -> usize {
        let ended_before = self.count.lock().ended_before;
        to_usize(self.picked.load(Ordering::SeqCst).saturating_sub(ended_before))
    }

    /// Its item nodes as this handle reckons them.
    pub(super) fn load(&self) -> usize {
        let count = *self.count.lock();
        let uncounted = self.picked.load(Ordering::SeqCst).saturating_sub(count.ended_before);
        to_usize(count.nodes.saturating_add(uncounted))
    }

    /// Whether its latest count began less than `life` ago.
    pub(super) fn counted_within(&self, life: Duration) -> bool {
        self.count.lock().at.is_some_and(|at| at.elapsed() < life)
    }

    /// Whether its latest count began at or after `since`.
    pub(super) fn counted_since(&self, since: Instant) -> bool {
        self.count.lock().at.is_some_and(|at| at >= since)
    }

    /// Its item nodes at the latest count.
    pub(super) fn counted(&self) -> usize {
        to_usize(self.count.lock().nodes)
    }

    /// Counts a put to it (made while the caller holds `Shards::picking`).
    pub(super) fn picked(&self) {
        self.picked.fetch_add(1, Ordering::SeqCst);
    }

    /// Notes the start of a count: the puts that ended by now are in it.
    fn count_begins(&self) -> u64 {
        self.queue.puts_ended()
    }

    /// Records a count of `nodes` that began at `at`, when `ended` puts
    /// had ended; an older count than the one recorded is dropped.
    fn counted_at(&self, nodes: i32, ended: u64, at: Instant) {
        let mut count = self.count.lock();
        if count.at.is_some_and(|latest| latest > at) {
            return;
        }
        *count = Count {
            nodes: u64::try_from(nodes).unwrap_or(0),
            ended_before: ended,
            at: Some(at),
        };
    }
}

fn to_usize(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

/// What the handle, its puts and its checker share.
pub(super) struct Shards<T: Send + 'static> {
    pub(super) client: ZkClient,
    pub(super) path: String,
    pub(super) policy: ShardPolicy,
    template: QueueBuilder<T>,
    /// `None` if this handle does not run for leader.
    pub(super) latch: Option<LeaderLatch>,
    /// The leader path; a change of its data asks the leader for a shard.
    pub(super) leader_path: String,
    list: RwLock<Vec<Arc<Shard<T>>>>,
    /// Held while a put picks its shard.
    pub(super) picking: Mutex<()>,
    /// Bumped when shards are adopted or counted, for puts waiting for room.
    changes: Mutex<u64>,
    changed: Condvar,
    /// Held while a shard is added, so two puts add one; when this handle
    /// last added one.
    adding: Mutex<Option<Instant>>,
    /// How many shards may hold a whole listing at once: a sharded
    /// consumer's shards all list together at first.
    listing_gate: Arc<Gate>,
    /// Opened to wake the checker (a new latch each round).
    pub(super) wake: Mutex<Latch>,
    stopping: AtomicBool,
}

impl<T: Send + 'static> Shards<T> {
    pub(super) fn new(
        template: QueueBuilder<T>,
        policy: ShardPolicy,
        latch: Option<LeaderLatch>,
        leader_path: &str,
    ) -> Shards<T> {
        let (client, path, _) = template.sharding_parts();
        Shards {
            client: client.clone(),
            path: path.to_owned(),
            policy,
            template,
            latch,
            leader_path: leader_path.to_owned(),
            list: RwLock::new(Vec::new()),
            picking: Mutex::new(()),
            changes: Mutex::new(0),
            changed: Condvar::new(),
            adding: Mutex::new(None),
            listing_gate: Arc::new(Gate::new(LISTINGS_AT_ONCE)),
            wake: Mutex::new(Latch::new()),
            stopping: AtomicBool::new(false),
        }
    }

    /// The shards known, in the order they were adopted.
    pub(super) fn all(&self) -> Vec<Arc<Shard<T>>> {
        self.list.read().clone()
    }

    pub(super) fn count(&self) -> usize {
        self.list.read().len()
    }

    /// Starts a queue for each of `names` not known yet (shards another
    /// sharder added, or that existed before); a shard whose queue cannot
    /// start is left for the next check.
    pub(super) fn adopt(&self, names: &[String]) -> Result<()> {
        let mut first_error = None;
        for name in names {
            if self.list.read().iter().any(|shard| shard.name == *name) {
                continue;
            }
            match self.template.for_shard(name, &self.listing_gate).build_queue() {
                Ok(queue) => {
                    log::info!("sharded queue {}: shard {name} adopted", self.path);
                    let mut list = self.list.write();
                    if !list.iter().any(|shard| shard.name == *name) {
                        list.push(Arc::new(Shard::new(name.clone(), queue)));
                        drop(list);
                        self.bump();
                    }
                }
                Err(e) => {
                    log::warn!("sharded queue {}: cannot start shard {name}: {e}", self.path);
                    first_error.get_or_insert(e);
                }
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// Adds a new shard, `queue-<UUID>`, unless one was added since the
    /// caller saw `seen` shards or the maximum is reached; returns whether
    /// the shards grew.
    pub(super) fn add(&self, seen: usize) -> Result<bool> {
        let mut adding = self.adding.lock();
        let count = self.count();
        if count != seen {
            return Ok(true);
        }
        if count >= self.policy.max_shards_value() {
            return Ok(false);
        }
        let name = format!("{QUEUE_PREFIX}{}", random_uuid());
        self.adopt(std::slice::from_ref(&name))?;
        *adding = Some(Instant::now());
        log::info!(
            "sharded queue {}: added shard {name} ({} of at most {})",
            self.path,
            count + 1,
            self.policy.max_shards_value()
        );
        Ok(true)
    }

    /// Whether this handle added a shard within `interval`.
    pub(super) fn added_within(&self, interval: Duration) -> bool {
        self.adding.lock().is_some_and(|at| at.elapsed() < interval)
    }

    /// Whether this handle leads now.
    pub(super) fn leads(&self) -> bool {
        self.latch.as_ref().is_some_and(LeaderLatch::has_leadership)
    }

    /// Counts `shards` afresh: one pipelined `exists` each, reading its
    /// number of children, given up at `deadline`. A shard deleted by an
    /// operator keeps its count (its queue makes it again when it puts).
    pub(super) fn recount(&self, shards: &[Arc<Shard<T>>], deadline: Option<Instant>) -> Result<()> {
        let paths: Vec<String> = shards.iter().map(|shard| self.shard_path(&shard.name)).collect();
        let at = Instant::now();
        let began: Vec<u64> = shards.iter().map(|shard| shard.count_begins()).collect();
        for ((shard, stat), ended) in shards
            .iter()
            .zip(self.client.exists_many_with(&paths, Opts::new().until(deadline))?)
            .zip(began)
        {
            match stat {
                Ok(Some(stat)) => shard.counted_at(stat.num_children, ended, at),
                Ok(None) | Err(Error::NoNode { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        self.bump();
        Ok(())
    }

    /// Asks the leader for a shard, telling it of the `seen` shards this
    /// handle found full: it sets the leader path's data, which the leader
    /// watches and Curator's sharders never read.
    pub(super) fn request(&self, seen: usize, deadline: Option<Instant>) {
        let data = format!("wanted: shard {}", seen + 1);
        let opts = Opts::new().until(deadline);
        match self
            .client
            .set_data_with(&self.leader_path, data.as_bytes(), None, opts)
        {
            Ok(_) => log::debug!("sharded queue {}: asked the leader for a shard", self.path),
            Err(e) => log::debug!("sharded queue {}: asking the leader for a shard: {e}", self.path),
        }
    }

    /// The number of changes (shards adopted, counts taken) so far.
    pub(super) fn changes(&self) -> u64 {
        *self.changes.lock()
    }

    /// Waits until a change after the first `seen`, or `until`, or the
    /// queue closes.
    pub(super) fn wait_for_change(&self, seen: u64, until: Instant) {
        let mut changes = self.changes.lock();
        while *changes == seen && !self.stopping() {
            if self.changed.wait_until(&mut changes, until).timed_out() {
                return;
            }
        }
    }

    fn bump(&self) {
        *self.changes.lock() += 1;
        self.changed.notify_all();
    }

    /// Closes a pull consumer's receiver, once every shard is closed.
    pub(super) fn close_pull(&self) {
        self.template.close_pull();
    }

    pub(super) fn stopping(&self) -> bool {
        self.stopping.load(Ordering::Acquire)
    }

    pub(super) fn stop(&self) {
        self.stopping.store(true, Ordering::Release);
        self.wake_checker();
        self.bump();
    }

    /// Makes the checker thread check now.
    pub(super) fn wake_checker(&self) {
        self.wake.lock().open();
    }

    /// The full path of a shard.
    pub(super) fn shard_path(&self, name: &str) -> String {
        path::join(&self.path, name)
    }
}
