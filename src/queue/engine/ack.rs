//! The acknowledger of a lock-safe queue: ends leases in batches. Consumed
//! items' acknowledgements, failed items' requeues, released records given
//! back and moves to the dead-letter path ([`End`]) all go out the same way:
//! many items' fenced operations in one multi (each item's lock deleted at
//! its version in it, as in a single multi ending one lease), pipelined, so a worker moves
//! on to its next item without waiting for a disk sync and a server commits
//! a batch in a transaction or two.
//!
//! A multi whose reply was lost is neither forgotten nor released (either
//! would deliver the item again, or requeue it twice): it is sent again in
//! the same session until it settles. A retry that finds the lock gone and
//! the item gone knows the first attempt went through (for a requeue, the
//! new node is in the queue once); a first attempt that finds the lock gone
//! knows the lease was lost, whatever became of the item.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};

use super::lease::{item_removed, lease_lost, report, Fenced, Lease};
use super::outcome::{dead_path_missing, End};
use super::Control;
use crate::client::{Op, Opts, Session, MULTI_OPS};
use crate::error::{Error, Result};
use crate::queue::core::Core;
use crate::queue::stats::QueueCounters;
use crate::sync::Joiner;

mod group;

use group::grouped;

/// Lease ends sent in one pipelined batch at most.
const BATCH: usize = 128;

/// How soon a lease end whose outcome is unknown is sent again.
const RETRY: Duration = Duration::from_millis(200);

/// Rounds in which a multi failed for one item before the rest are sent in
/// a multi each: under heavy loss of leases, every multi of a round could
/// fail for one item.
const CONTESTED_ROUNDS: usize = 2;

/// A claim waiting to end: its item, its lease, and how it ends.
pub(super) struct Ending {
    pub(super) name: String,
    pub(super) item_path: String,
    pub(super) item_version: i32,
    pub(super) lease: Lease,
    pub(super) end: End,
    /// Whether an earlier multi of this end was sent and its reply lost, so
    /// it may have been applied.
    pub(super) sent_before: bool,
    /// Whether the dead-letter path was created again for it (once at most).
    pub(super) recreated: bool,
}

impl Ending {
    /// The claim on `name` (at `item_path`, `item_version`) held by `lease`,
    /// to end as `end`.
    pub(super) fn new(name: String, item_path: String, item_version: i32, lease: Lease, end: End) -> Ending {
        Ending {
            name,
            item_path,
            item_version,
            lease,
            end,
            sent_before: false,
            recreated: false,
        }
    }

    /// Its fenced operations: the lock's versioned delete, then the end's.
    fn ops<T>(&self, core: &Core<T>) -> Vec<Op> {
        self.lease.fence(self.end.ops(core, &self.name, self.item_version))
    }
}

/// The acknowledger thread and its queue of work.
pub(super) struct Acker {
    endings: Sender<Ending>,
    thread: Joiner,
}

impl Acker {
    pub(super) fn start<T: Send + 'static>(core: Arc<Core<T>>, control: Arc<Control>) -> Result<Acker> {
        let (endings, rx) = crossbeam_channel::unbounded();
        let thread = Joiner::spawn("zk-queue-ack", move || run(&core, &control, &rx))
            .map_err(|e| Error::spawn("acknowledge", e))?;
        Ok(Acker { endings, thread })
    }

    pub(super) fn sender(&self) -> Sender<Ending> {
        self.endings.clone()
    }

    /// Settles what is queued, then ends the thread (once every sender is
    /// gone); joins it if it ends by `deadline`, else it finishes on its own.
    pub(super) fn stop(self, deadline: Instant) {
        drop(self.endings);
        self.thread.join_until(Some(deadline), "acknowledger");
    }
}

fn run<T: Send + 'static>(core: &Core<T>, control: &Control, endings: &Receiver<Ending>) {
    // Ends whose outcome a lost reply left unknown: kept, with their leases,
    // and sent again (in the same session only) until settled.
    let mut unknown: Vec<Ending> = Vec::new();
    let mut closed_at: Option<Instant> = None;
    loop {
        let mut batch = std::mem::take(&mut unknown);
        if batch.is_empty() {
            match endings.recv() {
                Ok(ending) => batch.push(ending),
                Err(_) => return,
            }
        } else {
            match endings.recv_timeout(RETRY) {
                Ok(ending) => batch.push(ending),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    // Closing: keep trying for the final flush, then leave the
                    // locks to the session.
                    let since = *closed_at.get_or_insert_with(Instant::now);
                    if since.elapsed() >= core.options.final_flush {
                        for ending in &batch {
                            log::error!(
                                "queue {}: whether {} was {} stays unknown at close; its lock goes with the session",
                                core.path,
                                ending.item_path,
                                ending.end.done()
                            );
                        }
                        let names = batch.iter().map(|e| e.name.as_str());
                        control.leases.finished(names);
                        QueueCounters::add(&core.counters.settled, batch.len());
                        return;
                    }
                    std::thread::sleep(RETRY);
                }
            }
        }
        let room = BATCH.saturating_sub(batch.len());
        batch.extend(endings.try_iter().take(room));
        let settling = settle(core, control, batch);
        control.leases.finished(settling.done.iter().map(String::as_str));
        QueueCounters::add(&core.counters.settled, settling.done.len() + settling.released);
        unknown = settling.unknown;
    }
}

/// Where the ends of a batch went.
struct Settling {
    /// The items settled: gone, or another holder's.
    done: Vec<String>,
    /// How many were let go instead (their leases released, so the items
    /// may be taken again).
    released: usize,
    /// The ends whose outcome is unknown.
    unknown: Vec<Ending>,
}

/// Ends the claims of a batch: the locks are checked to still be ours
/// (multi-reads of their stats), then the items' fenced operations go out
/// together, as few multis as fit (see [`send`]).
fn settle<T: Send + 'static>(core: &Core<T>, control: &Control, batch: Vec<Ending>) -> Settling {
    let mut settling = Settling {
        done: Vec::with_capacity(batch.len()),
        released: 0,
        unknown: Vec::new(),
    };
    let lock_paths: Vec<String> = batch.iter().map(|e| e.lease.path().to_owned()).collect();
    let stats = match core.client.stats_many(&lock_paths) {
        Ok(stats) => stats,
        Err(e) => {
            // The client is closed: the locks go with its session.
            report(core, &e);
            settling.done.extend(batch.into_iter().map(|e| e.name));
            return settling;
        }
    };
    let mut by_session: HashMap<Session, Vec<Ending>> = HashMap::new();
    for (ending, stat) in batch.into_iter().zip(stats) {
        match stat {
            Ok(found) if ending.lease.lost(found.as_ref(), ending.sent_before) => {
                report(core, &lease_lost(core, &ending.item_path));
                settling.done.push(ending.name);
            }
            // Our earlier multi may have deleted the lock: the item tells
            // whether it did, without a multi that would fail on the lock's
            // delete and take the others of its multi with it.
            Ok(None) if ending.sent_before => one(core, control, ending, Fenced::ItemDecides, &mut settling),
            Ok(_) => by_session.entry(ending.lease.session()).or_default().push(ending),
            Err(e) if e.is_retryable() => settling.unknown.push(ending),
            Err(e) => given_up(core, control, ending, &e, &mut settling),
        }
    }
    for (session, endings) in by_session {
        send(core, control, session, endings, &mut settling);
    }
    settling
}

/// Sends the ends of `endings` (leases of `session`): each item's fenced
/// operations (its lock's versioned delete, then the end's operations)
/// side by side in multis of as many items as fit [`MULTI_OPS`] operations
/// and a packet, pipelined, so a server commits a window in a transaction or
/// two. A multi is all or nothing: when one item's operations fail, the
/// failing operation (named in the reply) tells which item and how, as if its
/// own multi had failed ([`Fenced::of`]); it is settled alone and the others
/// are sent again without it. After [`CONTESTED_ROUNDS`] rounds that met such
/// a failure, the rest go out in a multi each.
fn send<T: Send + 'static>(
    core: &Core<T>,
    control: &Control,
    session: Session,
    endings: Vec<Ending>,
    settling: &mut Settling,
) {
    let mut pending = endings;
    let mut rounds = 0;
    while !pending.is_empty() {
        let per_multi = if rounds < CONTESTED_ROUNDS { MULTI_OPS } else { 1 };
        let (groups, multis) = grouped(core, pending, per_multi);
        let results = match core.client.multi_many_with(&multis, Opts::new().fenced(session)) {
            Ok(results) => results,
            Err(e) => {
                report(core, &e);
                settling
                    .done
                    .extend(groups.into_iter().flat_map(|g| g.endings).map(|e| e.name));
                return;
            }
        };
        let mut again = Vec::new();
        for (group, result) in groups.into_iter().zip(results) {
            match result {
                Ok(()) => group
                    .endings
                    .into_iter()
                    .for_each(|ending| one(core, control, ending, Fenced::Applied, settling)),
                Err(Error::MultiFailed { index, source }) => {
                    let (failing, own_index) = group.locate(index);
                    for (k, ending) in group.endings.into_iter().enumerate() {
                        if k == failing {
                            failed_at(core, control, ending, own_index, *source.clone(), settling, &mut again);
                        } else {
                            again.push(ending);
                        }
                    }
                }
                // Not applied (its session expired, say), or its outcome
                // unknown: the same for every item of it.
                Err(e) => {
                    for ending in group.endings {
                        let fenced = Fenced::of::<()>(Err(e.clone()), &ending.item_path);
                        one(core, control, ending, fenced, settling);
                    }
                }
            }
        }
        rounds += usize::from(!again.is_empty());
        pending = again;
    }
}

/// Settles the end whose multi failed at its own operation `index` with
/// `source`. A dead letter whose create found no dead-letter path (deleted
/// under the consumer) is sent again, once, after the path is created again.
fn failed_at<T: Send + 'static>(
    core: &Core<T>,
    control: &Control,
    mut ending: Ending,
    index: usize,
    source: Error,
    settling: &mut Settling,
    again: &mut Vec<Ending>,
) {
    // After the lock's delete.
    let create = ending.end.dead_letter_create().map(|i| i + 1);
    if create == Some(index) && source.is_no_node() && !ending.recreated {
        dead_path_missing(&ending.end);
        match core.ensure_nodes() {
            Ok(()) => {
                ending.recreated = true;
                again.push(ending);
            }
            Err(e) => given_up(core, control, ending, &e, settling),
        }
        return;
    }
    let own = Error::MultiFailed {
        index,
        source: Box::new(source),
    };
    let fenced = Fenced::of::<()>(Err(own), &ending.item_path);
    one(core, control, ending, fenced, settling);
}

/// Settles one end as its fenced operations' result says.
fn one<T: Send + 'static>(core: &Core<T>, control: &Control, ending: Ending, fenced: Fenced, settling: &mut Settling) {
    match fenced {
        Fenced::Applied => {
            ending.end.applied(core, &ending.name);
            settling.done.push(ending.name);
        }
        // Sent once (a batch is never retried): the lock changed or its
        // session expired since it was checked.
        Fenced::ItemDecides if !ending.sent_before => {
            report(core, &lease_lost(core, &ending.item_path));
            settling.done.push(ending.name);
        }
        // An earlier attempt went through if the item is gone.
        Fenced::ItemDecides => match core.client.exists(&ending.item_path) {
            Ok(None) => {
                ending.end.applied(core, &ending.name);
                settling.done.push(ending.name);
            }
            Ok(Some(_)) => {
                report(core, &lease_lost(core, &ending.item_path));
                settling.done.push(ending.name);
            }
            Err(e) if e.is_retryable() => settling.unknown.push(ending),
            Err(e) => {
                report(core, &e);
                settling.done.push(ending.name);
            }
        },
        Fenced::ItemRemoved => {
            let removed = item_removed(core, &ending.item_path);
            given_up(core, control, ending, &removed, settling);
        }
        // The reply was lost: the multi may or may not have been applied.
        // Sent again, it settles either way.
        Fenced::Failed(e) if e.is_retryable() => {
            log::debug!("{}: lease end outcome unknown ({e}); trying again", ending.item_path);
            settling.unknown.push(Ending {
                sent_before: true,
                ..ending
            });
        }
        Fenced::Failed(e) => given_up(core, control, ending, &e, settling),
    }
}

/// Lets the lease of an end that failed with `error` go (the lock is still
/// ours: deleted, or kept for a later pass), so the item is delivered again,
/// and reports the error.
fn given_up<T: Send + 'static>(
    core: &Core<T>,
    control: &Control,
    ending: Ending,
    error: &Error,
    settling: &mut Settling,
) {
    report(core, error);
    control.let_go(core, &ending.name, &ending.lease);
    settling.released += 1;
}
