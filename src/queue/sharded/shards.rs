//! The shards a sharded queue knows of: each one's queue, its item count at
//! the latest check and this handle's puts since, and how new shards are
//! adopted and added.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Mutex, RwLock};

use super::policy::ShardPolicy;
use crate::client::ZkClient;
use crate::error::Result;
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
/// What it holds is reckoned as its latest count of item nodes plus the
/// puts this handle picked it for that had not ended when the count began
/// (some of those may be in the count already, and coalesced puts share
/// nodes: the reckoning errs high, never low).
pub(super) struct Shard<T: Send + 'static> {
    pub(super) name: String,
    pub(super) queue: DistributedQueue<T>,
    /// Its item nodes at the latest count.
    counted: AtomicU64,
    /// Puts this handle picked it for, ever.
    picked: AtomicU64,
    /// This handle's puts to it that had ended when the latest count began.
    ended_before_count: AtomicU64,
}

impl<T: Send + 'static> Shard<T> {
    fn new(name: String, queue: DistributedQueue<T>) -> Shard<T> {
        Shard {
            name,
            queue,
            counted: AtomicU64::new(0),
            picked: AtomicU64::new(0),
            ended_before_count: AtomicU64::new(0),
        }
    }

    /// Its item nodes as this handle reckons them.
    pub(super) fn load(&self) -> usize {
        let pending = self
            .picked
            .load(Ordering::SeqCst)
            .saturating_sub(self.ended_before_count.load(Ordering::SeqCst));
        usize::try_from(self.counted.load(Ordering::SeqCst).saturating_add(pending)).unwrap_or(usize::MAX)
    }

    pub(super) fn counted(&self) -> usize {
        usize::try_from(self.counted.load(Ordering::SeqCst)).unwrap_or(usize::MAX)
    }

    /// Notes the start of a count: the puts that ended by now are in it.
    pub(super) fn count_begins(&self) -> u64 {
        self.queue.puts_ended()
    }

    /// Records a count of `items` that began when `ended` puts had ended.
    pub(super) fn counted_at(&self, items: usize, ended: u64) {
        self.counted
            .store(u64::try_from(items).unwrap_or(u64::MAX), Ordering::SeqCst);
        self.ended_before_count.store(ended, Ordering::SeqCst);
    }
}

/// What the handle, its puts and its checker share.
pub(super) struct Shards<T: Send + 'static> {
    pub(super) client: ZkClient,
    pub(super) path: String,
    pub(super) policy: ShardPolicy,
    template: QueueBuilder<T>,
    pub(super) latch: LeaderLatch,
    list: RwLock<Vec<Arc<Shard<T>>>>,
    /// Held while a put picks its shard.
    picking: Mutex<()>,
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
    pub(super) fn new(template: QueueBuilder<T>, policy: ShardPolicy, latch: LeaderLatch) -> Shards<T> {
        let (client, path, _) = template.sharding_parts();
        Shards {
            client: client.clone(),
            path: path.to_owned(),
            policy,
            template,
            latch,
            list: RwLock::new(Vec::new()),
            picking: Mutex::new(()),
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

    /// The shard for a put as the policy picks it, counting the put in it.
    /// A leader whose every shard is full adds one first (up to the
    /// maximum); otherwise a full pick wakes the checker. Fails only if
    /// there is no shard and none can be added.
    pub(super) fn pick(&self) -> Result<Arc<Shard<T>>> {
        loop {
            let (shard, seen) = {
                // Deciding and counting the put are one step, so two puts
                // cannot both take a shard's last place.
                let _picking = self.picking.lock();
                let shards = self.list.read();
                let loads: Vec<usize> = shards.iter().map(|shard| shard.load()).collect();
                match shards.get(self.policy.pick(&loads, fastrand::usize(..))) {
                    Some(shard) if !self.policy.full(shard.load()) => {
                        shard.picked.fetch_add(1, Ordering::SeqCst);
                        return Ok(Arc::clone(shard));
                    }
                    Some(shard) => (Some(Arc::clone(shard)), shards.len()),
                    None => (None, 0),
                }
            };
            let Some(shard) = shard else {
                // None yet: the first one is made at start; a failure there
                // is retried by the checker.
                self.add(0)?;
                continue;
            };
            // Every shard is full.
            if seen < self.policy.max_shards_value() && self.latch.has_leadership() {
                match self.add(seen) {
                    Ok(true) => continue,
                    Ok(false) => {}
                    Err(e) => log::warn!("sharded queue {}: cannot add a shard: {e}", self.path),
                }
            }
            self.wake.lock().open();
            shard.picked.fetch_add(1, Ordering::SeqCst);
            return Ok(shard);
        }
    }

    pub(super) fn stopping(&self) -> bool {
        self.stopping.load(Ordering::Acquire)
    }

    pub(super) fn stop(&self) {
        self.stopping.store(true, Ordering::Release);
        self.wake.lock().open();
    }

    /// The full path of a shard.
    pub(super) fn shard_path(&self, name: &str) -> String {
        path::join(&self.path, name)
    }
}
