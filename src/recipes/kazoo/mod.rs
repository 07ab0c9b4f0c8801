//! Queues shared with Python services using kazoo's `Queue` and
//! `LockingQueue` (`kazoo.recipe.queue`): [`KazooQueue`] and
//! [`KazooLockingQueue`].
//!
//! Both use kazoo's own layout and order, so a kazoo producer and a consumer
//! here (or the other way round) share one queue:
//!
//! | | kazoo `Queue` / [`KazooQueue`] | kazoo `LockingQueue` / [`KazooLockingQueue`] |
//! | --- | --- | --- |
//! | entry | `<path>/entry-<ppp>-<seq>` | `<path>/entries/entry-<ppp>-<seq>` |
//! | data | the item's raw bytes | the item's raw bytes |
//! | put | `put(value, priority)` / [`KazooQueue::put`] | `put(value, priority)` / [`KazooLockingQueue::put`]; `put_all` / [`KazooLockingQueue::put_all`] in one transaction |
//! | take | `get()` / [`KazooQueue::take`]: read, then delete | `get(timeout)` / [`KazooLockingQueue::take`]: create the ephemeral lock `<path>/taken/<entry name>`, then read |
//! | done | | `consume()` / [`KazooEntry::consume`]: check the lock is still this holder's, then delete entry and lock in one multi |
//! | give back | | `release()` / [`KazooEntry::release`] (or drop the entry): check the lock, then delete it |
//!
//! `<ppp>` is the priority, 0 to 999, in three digits (kazoo's default is
//! 100, [`DEFAULT_PRIORITY`] here). Entries are taken in the order of their
//! names as strings, as kazoo sorts them: lower priority numbers first, equal
//! priorities in put order. A `LockingQueue` consumer on either side skips the
//! entries whose lock exists, so neither side takes an entry the other holds;
//! a lock vanishes with its holder's session, and the entry is taken again.
//!
//! Kazoo's entries are raw bytes without Curator's item frame, so these are
//! handles of their own, as [`SimpleQueue`](super::SimpleQueue) is, rather
//! than kinds of [`QueueBuilder`](crate::QueueBuilder) (whose consumers
//! read, requeue and dead-letter framed `queue-` items); their names live
//! with every recipe's in the crate's naming module.
//!
//! Kazoo's locks hold its handle's id, which only kazoo's `holds_lock` reads;
//! the locks here hold a random token per take (32 hex digits), which
//! `consume` and `release` read back as kazoo's do its id. Children of
//! the entries' node that are not `entry-<ppp>-<seq>` names are left alone
//! here (kazoo would take them too).
//!
//! ```no_run
//! # fn main() -> Result<(), zk_queue::Error> {
//! use zk_queue::recipes::{KazooLockingQueue, KazooQueue};
//! let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
//! // Python: Queue(client, "/py/jobs").put(b"resize", priority=5)
//! let jobs = KazooQueue::new(&client, "/py/jobs")?;
//! jobs.put(b"resize", 5)?;
//! assert_eq!(jobs.take()?, b"resize");
//!
//! let work = KazooLockingQueue::new(&client, "/py/work")?;
//! work.put(b"render", 100)?;
//! let entry = work.take()?; // locked: no kazoo consumer gets it now
//! assert_eq!(entry.data(), b"render");
//! entry.consume()?; // deleted, with its lock
//! # Ok(())
//! # }
//! ```

mod entry;
mod locking;
mod queue;

use std::time::{Duration, Instant};

pub use entry::KazooEntry;
pub use locking::KazooLockingQueue;
pub use queue::KazooQueue;

use super::deadline::call_error;
use crate::client::{CreateMode, Op, OpResult, Opts, ZkClient};
use crate::error::{Error, Result};
use crate::naming::{entry_prefix, MAX_PRIORITY};
use crate::path;
use crate::sync::{earliest, Backoff, Latch};

/// Kazoo's default priority (`put(value)` without one).
///
/// ```
/// assert_eq!(zk_queue::recipes::kazoo::DEFAULT_PRIORITY, 100);
/// ```
pub const DEFAULT_PRIORITY: u16 = 100;

/// How often a waiting take lists again though no watch fired (the server
/// may drop events the client did not read in time).
const RESCAN_INTERVAL: Duration = Duration::from_secs(30);

/// The first and the longest pause between attempts of a waiting take
/// while errors persist.
const FIRST_WAIT_BACKOFF: Duration = Duration::from_millis(50);
const MAX_WAIT_BACKOFF: Duration = Duration::from_secs(1);

/// How long a call waits for an entry.
#[derive(Clone, Copy)]
enum Wait {
    /// Not at all (`try_take`).
    No,
    /// Until the deadline, or for ever (`None`).
    Until(Option<Instant>),
}

impl Wait {
    /// The options of each request of the call: its deadline, or for a call
    /// that never waits, [`TRY_WAIT`](crate::client::TRY_WAIT) for a server.
    fn opts(self) -> Opts<'static> {
        match self {
            Wait::Until(deadline) => Opts::new().until(deadline),
            Wait::No => Opts::new().until(Instant::now().checked_add(crate::client::TRY_WAIT)),
        }
    }
}

/// Creates an entry of `priority` under `dir` holding `data`, creating `dir`
/// if it is missing; returns the entry's path.
fn put_entry(client: &ZkClient, dir: &str, data: &[u8], priority: u16, deadline: Option<Instant>) -> Result<String> {
    let started = Instant::now();
    create_entry(client, dir, data, priority, deadline).map_err(|e| call_error(client, e, started, "put"))
}

/// Creates entries of `priority` under `dir` holding `items`, in one multi,
/// creating `dir` if it is missing; returns their paths.
fn put_all_entries<D: AsRef<[u8]>>(client: &ZkClient, dir: &str, items: &[D], priority: u16) -> Result<Vec<String>> {
    check_priority(priority)?;
    if items.is_empty() {
        return Err(Error::InvalidArgument("put_all needs at least one item".to_owned()));
    }
    let prefix = path::join(dir, &entry_prefix(priority));
    let ops: Vec<Op> = items
        .iter()
        .map(|item| {
            Op::create(
                prefix.as_str(),
                item.as_ref().to_vec(),
                CreateMode::PersistentSequential,
            )
        })
        .collect();
    let results = match client.multi(&ops) {
        Err(Error::MultiFailed { source, .. }) if source.is_no_node() => {
            client.ensure_path(dir)?;
            client.multi(&ops)?
        }
        other => other?,
    };
    Ok(results
        .into_iter()
        .filter_map(|result| match result {
            OpResult::Create { path } => Some(path),
            _ => None,
        })
        .collect())
}

/// Refuses a priority kazoo would refuse.
/// The entries under `dir`, none if it does not exist (kazoo's `len`).
fn entry_count(client: &ZkClient, dir: &str) -> Result<usize> {
    match client.get_children(dir) {
        Ok((names, _)) => Ok(crate::naming::entries_in_order(names).len()),
        Err(Error::NoNode { .. }) => Ok(0),
        Err(e) => Err(e),
    }
}

fn check_priority(priority: u16) -> Result<()> {
    if priority > MAX_PRIORITY {
        return Err(Error::InvalidArgument(format!(
            "priority must be between 0 and {MAX_PRIORITY}, not {priority}"
        )));
    }
    Ok(())
}

fn create_entry(client: &ZkClient, dir: &str, data: &[u8], priority: u16, deadline: Option<Instant>) -> Result<String> {
    check_priority(priority)?;
    let prefix = path::join(dir, &entry_prefix(priority));
    let opts = Opts::new().mode(CreateMode::PersistentSequential).until(deadline);
    match client.create_with(&prefix, data, opts) {
        Err(Error::NoNode { .. }) => {
            client.ensure_path_with(dir, Opts::new().until(deadline))?;
            client.create_with(&prefix, data, opts).map(|(created, _)| created)
        }
        other => other.map(|(created, _)| created),
    }
}

/// Runs `take`, the take family's one implementation, for a call that waits
/// as `wait` says. A waiting call rides out retryable errors (the ensemble
/// away, a session expiry) until its deadline, then reports the last one in
/// the recipes' vocabulary ([`call_error`]); a server that answered too
/// late gives nothing, as a wait that found nothing.
fn taking<T>(
    client: &ZkClient,
    path: &str,
    wait: Wait,
    mut take: impl FnMut() -> Result<Option<T>>,
) -> Result<Option<T>> {
    let started = Instant::now();
    let ended = |e| call_error(client, e, started, "take");
    let Wait::Until(deadline) = wait else {
        return take().map_err(ended);
    };
    let mut backoff = Backoff::new(FIRST_WAIT_BACKOFF, MAX_WAIT_BACKOFF);
    loop {
        match take() {
            Err(e) if e.is_retryable() && !client.is_closed() => {
                let now = Instant::now();
                if deadline.is_some_and(|d| now >= d) {
                    return if client.answered_too_late(&e) {
                        Ok(None)
                    } else {
                        Err(ended(e))
                    };
                }
                let pause = backoff.pause();
                let pause = deadline.map_or(pause, |d| pause.min(d - now));
                log::debug!("{path}: {e}; still waiting for an entry");
                std::thread::sleep(pause);
            }
            other => return other.map_err(ended),
        }
    }
}

/// Waits until `latch` opens (a watch fired, the connection changed, the
/// client closed), the rescan interval passed or `deadline` passed; whether
/// to look again (false: the deadline passed).
fn wait_for_change(client: &ZkClient, latch: &Latch, deadline: Option<Instant>) -> Result<bool> {
    let _guard = client.wake_on_state_change(latch);
    if client.is_closed() {
        return Err(Error::Closed);
    }
    let rescan_at = Instant::now().checked_add(RESCAN_INTERVAL);
    let opened = latch.wait_until(earliest(deadline, rescan_at));
    if client.is_closed() {
        return Err(Error::Closed);
    }
    Ok(opened || deadline.is_none_or(|d| Instant::now() < d))
}
