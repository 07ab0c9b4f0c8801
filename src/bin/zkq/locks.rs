//! Which locks `zkq take` and `zkq purge` respect: the lock path given, or
//! else the one the queue's lock-safe consumers recorded, unless forced.

use clap::Args;
use zk_queue::admin::RawQueue;

#[derive(Debug, Args)]
pub struct LockArgs {
    /// The lock path of the queue's lock-safe consumers: items they hold are
    /// left alone, and the items taken or deleted are locked first as they
    /// lock them. Default: the lock path the queue's consumers recorded on
    /// the queue node, if any (Curator's consumers record none).
    #[arg(long)]
    pub lock_path: Option<String>,
    /// Take or delete items whatever their locks: even an item a live
    /// consumer holds.
    #[arg(long, conflicts_with = "lock_path")]
    pub force: bool,
}

impl LockArgs {
    /// `queue`, respecting the locks these arguments say.
    pub fn apply(&self, queue: RawQueue) -> anyhow::Result<RawQueue> {
        if self.force {
            return Ok(queue);
        }
        if let Some(lock_path) = &self.lock_path {
            return Ok(queue.lock_path(lock_path)?);
        }
        match queue.recorded_lock_path() {
            Ok(Some(lock_path)) => {
                eprintln!(
                    "zkq: leaving alone items held under {lock_path}, the lock path the queue's consumers recorded (--force to ignore)"
                );
                Ok(queue.lock_path(&lock_path)?)
            }
            Ok(None) | Err(zk_queue::Error::NoNode { .. }) => Ok(queue),
            Err(e) => Err(e.into()),
        }
    }
}
