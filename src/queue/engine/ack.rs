//! The acknowledger of a lock-safe queue: settles consumed items in batches,
//! many items' fenced operations in one multi (each item's lock checked in
//! it, as in a single acknowledge), so a worker moves on to its next item
//! without waiting for a disk sync and a server commits a batch in a
//! transaction or two.
//!
//! A multi whose reply was lost is neither forgotten nor released (either
//! would deliver the item again): it is sent again in the same session until
//! it settles. A retry that finds the lock gone and the item gone knows the
//! first attempt went through; a first attempt that finds the lock gone knows
//! the lease was lost, whatever became of the item.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};

use super::lease::{item_decides, item_removed, lease_lost, report, Fenced, Lease};
use super::Control;
use crate::client::{Op, Opts, Session, MULTI_OPS};
use crate::error::{Error, Result};
use crate::queue::core::Core;
use crate::queue::stats::QueueCounters;
use crate::sync::Joiner;

/// Acknowledges sent in one pipelined batch at most.
const BATCH: usize = 128;

/// How soon an acknowledgement whose outcome is unknown is sent again.
const RETRY: Duration = Duration::from_millis(200);

/// The operations of one item's acknowledgement: its lock's check, its
/// delete, its lock's delete ([`Lease::acknowledge_ops`]).
const ACK_OPS: usize = 3;

/// Items acknowledged in one multi at most: as many as fit the most writes a
/// server commits faster in one multi.
const ACKS_PER_MULTI: usize = MULTI_OPS / ACK_OPS;

/// Rounds in which a multi failed for one item before the rest are sent in
/// a multi each: under heavy loss of leases, every multi of a round could
/// fail for one item.
const CONTESTED_ROUNDS: usize = 2;

/// An item consumed and waiting to be acknowledged.
pub(super) struct Ack {
    pub(super) name: String,
    pub(super) item_path: String,
    pub(super) item_version: i32,
    pub(super) lease: Lease,
    /// Whether an earlier multi of this acknowledge was sent and its reply
    /// lost, so it may have been applied.
    pub(super) sent_before: bool,
}

/// The acknowledger thread and its queue of work.
pub(super) struct Acker {
    acks: Sender<Ack>,
    thread: Joiner,
}

impl Acker {
    pub(super) fn start<T: Send + 'static>(core: Arc<Core<T>>, control: Arc<Control>) -> Result<Acker> {
        let (acks, rx) = crossbeam_channel::unbounded();
        let thread = Joiner::spawn("zk-queue-ack", move || run(&core, &control, &rx))
            .map_err(|e| Error::spawn("acknowledge", e))?;
        Ok(Acker { acks, thread })
    }

    pub(super) fn sender(&self) -> Sender<Ack> {
        self.acks.clone()
    }

    /// Settles what is queued, then ends the thread (once every sender is
    /// gone); joins it if it ends by `deadline`, else it finishes on its own.
    pub(super) fn stop(self, deadline: Instant) {
        drop(self.acks);
        self.thread.join_until(Some(deadline), "acknowledger");
    }
}

fn run<T: Send + 'static>(core: &Core<T>, control: &Control, acks: &Receiver<Ack>) {
    // Acknowledgements whose outcome a lost reply left unknown: kept, with
    // their leases, and sent again (in the same session only) until settled.
    let mut unknown: Vec<Ack> = Vec::new();
    let mut closed_at: Option<Instant> = None;
    loop {
        let mut batch = std::mem::take(&mut unknown);
        if batch.is_empty() {
            match acks.recv() {
                Ok(ack) => batch.push(ack),
                Err(_) => return,
            }
        } else {
            match acks.recv_timeout(RETRY) {
                Ok(ack) => batch.push(ack),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    // Closing: keep trying for the final flush, then leave the
                    // locks to the session.
                    let since = *closed_at.get_or_insert_with(Instant::now);
                    if since.elapsed() >= core.options.final_flush {
                        for ack in &batch {
                            log::error!(
                                "queue {}: the acknowledgement of {} stays unknown at close; its lock goes with the session",
                                core.path,
                                ack.item_path
                            );
                        }
                        finish(core, control, batch.iter().map(|a| a.name.as_str()));
                        return;
                    }
                    std::thread::sleep(RETRY);
                }
            }
        }
        let room = BATCH.saturating_sub(batch.len());
        batch.extend(acks.try_iter().take(room));
        let (done, left) = settle(core, control, batch);
        finish(core, control, done.iter().map(String::as_str));
        unknown = left;
    }
}

/// The items named are settled: their leases are free.
fn finish<'a, T: Send + 'static>(core: &Core<T>, control: &Control, names: impl Iterator<Item = &'a str>) {
    let mut count = 0;
    control.leases.finished(names.inspect(|_| count += 1));
    QueueCounters::add(&core.counters.settled, count);
}

/// Acknowledges a batch: the locks are checked to still be ours (multi-reads
/// of their stats), then the items' fenced operations go out together, as
/// few multis as fit (see [`send`]). Returns the names of the items settled
/// (acknowledged, or lost to another holder) and the acknowledgements whose
/// outcome is still unknown.
fn settle<T: Send + 'static>(core: &Core<T>, control: &Control, batch: Vec<Ack>) -> (Vec<String>, Vec<Ack>) {
    let mut settling = Settling {
        done: Vec::with_capacity(batch.len()),
        unknown: Vec::new(),
    };
    let lock_paths: Vec<String> = batch.iter().map(|a| a.lease.path().to_owned()).collect();
    let stats = match core.client.stats_many(&lock_paths) {
        Ok(stats) => stats,
        Err(e) => {
            // The client is closed: the locks go with its session.
            report(core, &e);
            return (batch.into_iter().map(|a| a.name).collect(), settling.unknown);
        }
    };
    let mut by_session: HashMap<Session, Vec<Ack>> = HashMap::new();
    for (ack, stat) in batch.into_iter().zip(stats) {
        match stat {
            Ok(found) if ack.lease.lost(found.as_ref(), ack.sent_before) => {
                report(core, &lease_lost(core, &ack.item_path));
                settling.done.push(ack.name);
            }
            Ok(_) => by_session.entry(ack.lease.session()).or_default().push(ack),
            Err(e) if e.is_retryable() => settling.unknown.push(ack),
            Err(e) => {
                control.leases.let_go(core, &ack.name, &ack.lease);
                report(core, &e);
                settling.done.push(ack.name);
            }
        }
    }
    for (session, acks) in by_session {
        send(core, control, session, acks, &mut settling);
    }
    (settling.done, settling.unknown)
}

/// Where the acknowledgements of a batch went.
struct Settling {
    /// The items settled.
    done: Vec<String>,
    /// The acknowledgements whose outcome is unknown.
    unknown: Vec<Ack>,
}

/// Sends the acknowledgements of `acks` (leases of `session`): each item's
/// fenced operations (its lock's check, its delete, its lock's delete) side
/// by side in multis of [`ACKS_PER_MULTI`] items, pipelined, so a server
/// commits a window in a transaction or two. A multi is all or nothing: when
/// one item's operations fail, the failing operation (named in the reply)
/// tells which item and how, as if its own multi had failed ([`Fenced::of`]);
/// it is settled alone and the others are sent again without it. After
/// [`CONTESTED_ROUNDS`] rounds that met such a failure, the rest go out in a
/// multi each.
fn send<T: Send + 'static>(
    core: &Core<T>,
    control: &Control,
    session: Session,
    acks: Vec<Ack>,
    settling: &mut Settling,
) {
    let mut pending = acks;
    let mut rounds = 0;
    while !pending.is_empty() {
        let per_multi = if rounds < CONTESTED_ROUNDS { ACKS_PER_MULTI } else { 1 };
        let groups: Vec<Vec<Ack>> = chunked(pending, per_multi);
        let multis: Vec<Vec<Op>> = groups
            .iter()
            .map(|group| {
                group
                    .iter()
                    .flat_map(|a| a.lease.acknowledge_ops(&a.item_path, a.item_version))
                    .collect()
            })
            .collect();
        let results = match core.client.multi_many_with(&multis, Opts::new().fenced(session)) {
            Ok(results) => results,
            Err(e) => {
                report(core, &e);
                settling.done.extend(groups.into_iter().flatten().map(|a| a.name));
                return;
            }
        };
        let mut again = Vec::new();
        for (group, result) in groups.into_iter().zip(results) {
            match result {
                Ok(()) => group
                    .into_iter()
                    .for_each(|ack| one(core, control, ack, Fenced::Applied, settling)),
                Err(Error::MultiFailed { index, source }) => {
                    let failing = index / ACK_OPS;
                    for (k, ack) in group.into_iter().enumerate() {
                        if k != failing {
                            again.push(ack);
                            continue;
                        }
                        // As if its own multi had failed at that operation.
                        let own = Error::MultiFailed {
                            index: index % ACK_OPS,
                            source: source.clone(),
                        };
                        let fenced = Fenced::of::<()>(Err(own), &ack.item_path);
                        one(core, control, ack, fenced, settling);
                    }
                }
                // Not applied (its session expired, say), or its outcome
                // unknown: the same for every item of it.
                Err(e) => {
                    for ack in group {
                        let fenced = Fenced::of::<()>(Err(e.clone()), &ack.item_path);
                        one(core, control, ack, fenced, settling);
                    }
                }
            }
        }
        rounds += usize::from(!again.is_empty());
        pending = again;
    }
}

/// `acks` in groups of `size` at most, in order.
fn chunked(acks: Vec<Ack>, size: usize) -> Vec<Vec<Ack>> {
    let mut groups: Vec<Vec<Ack>> = Vec::new();
    for ack in acks {
        match groups.last_mut() {
            Some(group) if group.len() < size => group.push(ack),
            _ => groups.push(vec![ack]),
        }
    }
    groups
}

/// Settles one acknowledgement as its fenced operations' result says.
fn one<T: Send + 'static>(core: &Core<T>, control: &Control, ack: Ack, fenced: Fenced, settling: &mut Settling) {
    match fenced {
        Fenced::Applied => {
            log::debug!("acknowledged {}", ack.item_path);
            settling.done.push(ack.name);
        }
        // Sent once (a batch is never retried): the lock changed or its
        // session expired since it was checked.
        Fenced::ItemDecides if !ack.sent_before => {
            report(core, &lease_lost(core, &ack.item_path));
            settling.done.push(ack.name);
        }
        Fenced::ItemDecides => match core.client.exists(&ack.item_path) {
            Ok(item) => {
                if let Err(e) = item_decides(core, &ack.item_path, item) {
                    report(core, &e);
                }
                settling.done.push(ack.name);
            }
            Err(e) if e.is_retryable() => settling.unknown.push(ack),
            Err(e) => {
                report(core, &e);
                settling.done.push(ack.name);
            }
        },
        Fenced::ItemRemoved => {
            control.leases.let_go(core, &ack.name, &ack.lease);
            report(core, &item_removed(core, &ack.item_path));
            settling.done.push(ack.name);
        }
        // The reply was lost: the multi may or may not have been applied.
        // Sent again, it settles either way.
        Fenced::Failed(e) if e.is_retryable() => {
            log::debug!("{}: acknowledge outcome unknown ({e}); trying again", ack.item_path);
            settling.unknown.push(Ack {
                sent_before: true,
                ..ack
            });
        }
        Fenced::Failed(e) => {
            control.leases.let_go(core, &ack.name, &ack.lease);
            report(core, &e);
            settling.done.push(ack.name);
        }
    }
}
