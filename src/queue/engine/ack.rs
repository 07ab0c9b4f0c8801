//! The acknowledger of a lock-safe queue: settles consumed items in batches
//! of pipelined multis, each fenced like a single acknowledge, so a worker
//! moves on to its next item without waiting for a disk sync.
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
use crate::client::{Opts, Session};
use crate::error::{Error, Result};
use crate::queue::core::Core;
use crate::queue::stats::QueueCounters;
use crate::sync::Joiner;

/// Acknowledges sent in one pipelined batch at most.
const BATCH: usize = 128;

/// How soon an acknowledgement whose outcome is unknown is sent again.
const RETRY: Duration = Duration::from_millis(200);

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
/// of their stats), then every item's fenced multi is sent at once. Returns the names
/// of the items settled (acknowledged, or lost to another holder) and the
/// acknowledgements whose outcome is still unknown.
fn settle<T: Send + 'static>(core: &Core<T>, control: &Control, batch: Vec<Ack>) -> (Vec<String>, Vec<Ack>) {
    let mut done = Vec::with_capacity(batch.len());
    let mut unknown = Vec::new();
    let lock_paths: Vec<String> = batch.iter().map(|a| a.lease.path().to_owned()).collect();
    let stats = match core.client.stats_many(&lock_paths) {
        Ok(stats) => stats,
        Err(e) => {
            // The client is closed: the locks go with its session.
            report(core, &e);
            return (batch.into_iter().map(|a| a.name).collect(), unknown);
        }
    };
    let mut by_session: HashMap<Session, Vec<Ack>> = HashMap::new();
    for (ack, stat) in batch.into_iter().zip(stats) {
        match stat {
            Ok(found) if ack.lease.lost(found.as_ref(), ack.sent_before) => {
                report(core, &lease_lost(core, &ack.item_path));
                done.push(ack.name);
            }
            Ok(_) => by_session.entry(ack.lease.session()).or_default().push(ack),
            Err(e) if e.is_retryable() => unknown.push(ack),
            Err(e) => {
                control.leases.let_go(core, &ack.name, &ack.lease);
                report(core, &e);
                done.push(ack.name);
            }
        }
    }
    for (session, acks) in by_session {
        let multis: Vec<_> = acks
            .iter()
            .map(|a| a.lease.acknowledge_ops(&a.item_path, a.item_version))
            .collect();
        let results = match core.client.multi_many_with(&multis, Opts::new().fenced(session)) {
            Ok(results) => results,
            Err(e) => {
                report(core, &e);
                done.extend(acks.into_iter().map(|a| a.name));
                continue;
            }
        };
        for (ack, result) in acks.into_iter().zip(results) {
            match Fenced::of(result, &ack.item_path) {
                Fenced::Applied => {
                    log::debug!("acknowledged {}", ack.item_path);
                    done.push(ack.name);
                }
                // Sent once (a batch is never retried): the lock changed or
                // its session expired since it was checked.
                Fenced::ItemDecides if !ack.sent_before => {
                    report(core, &lease_lost(core, &ack.item_path));
                    done.push(ack.name);
                }
                Fenced::ItemDecides => match core.client.exists(&ack.item_path) {
                    Ok(item) => {
                        if let Err(e) = item_decides(core, &ack.item_path, item) {
                            report(core, &e);
                        }
                        done.push(ack.name);
                    }
                    Err(e) if e.is_retryable() => unknown.push(ack),
                    Err(e) => {
                        report(core, &e);
                        done.push(ack.name);
                    }
                },
                Fenced::ItemRemoved => {
                    control.leases.let_go(core, &ack.name, &ack.lease);
                    report(core, &item_removed(core, &ack.item_path));
                    done.push(ack.name);
                }
                // The reply was lost: the multi may or may not have been
                // applied. Sent again, it settles either way.
                Fenced::Failed(e) if e.is_retryable() => {
                    log::debug!("{}: acknowledge outcome unknown ({e}); trying again", ack.item_path);
                    unknown.push(Ack {
                        sent_before: true,
                        ..ack
                    });
                }
                Fenced::Failed(e) => {
                    control.leases.let_go(core, &ack.name, &ack.lease);
                    report(core, &e);
                    done.push(ack.name);
                }
            }
        }
    }
    (done, unknown)
}
