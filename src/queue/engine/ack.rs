//! The acknowledger of a lock-safe queue: settles consumed items in batches
//! of pipelined multis, each fenced like a single acknowledge, so a worker
//! moves on to its next item without waiting for a disk sync.

use std::collections::HashMap;
use std::sync::Arc;
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender};

use super::finish::Lock;
use super::Control;
use crate::error::{Error, Result};
use crate::queue::core::Core;
use crate::queue::stats::QueueCounters;

/// Acknowledges sent in one pipelined batch at most.
const BATCH: usize = 128;

/// An item consumed and waiting to be acknowledged.
pub(super) struct Ack {
    pub(super) name: String,
    pub(super) item_path: String,
    pub(super) item_version: i32,
    pub(super) lock: Lock,
}

/// The acknowledger thread and its queue of work.
pub(super) struct Acker {
    acks: Sender<Ack>,
    thread: JoinHandle<()>,
}

impl Acker {
    pub(super) fn start<T: Send + 'static>(core: Arc<Core<T>>, control: Arc<Control>) -> Result<Acker> {
        let (acks, rx) = crossbeam_channel::unbounded();
        let thread = std::thread::Builder::new()
            .name("zk-queue-ack".into())
            .spawn(move || run(&core, &control, &rx))
            .map_err(|e| Error::InvalidArgument(format!("cannot start a queue thread: {e}")))?;
        Ok(Acker { acks, thread })
    }

    pub(super) fn sender(&self) -> Sender<Ack> {
        self.acks.clone()
    }

    /// Settles what is queued, then ends the thread (once every sender is gone).
    pub(super) fn stop(self) {
        drop(self.acks);
        if self.thread.join().is_err() {
            log::error!("the queue's acknowledger thread panicked");
        }
    }
}

fn run<T: Send + 'static>(core: &Core<T>, control: &Control, acks: &Receiver<Ack>) {
    while let Ok(first) = acks.recv() {
        let mut batch = vec![first];
        batch.extend(acks.try_iter().take(BATCH - 1));
        let names: Vec<String> = batch.iter().map(|a| a.name.clone()).collect();
        if let Err(e) = settle(core, batch) {
            log::error!("queue {}: acknowledging failed: {e}", core.path);
            core.tell_error(&e);
        }
        let mut in_flight = control.in_flight.lock();
        for name in &names {
            in_flight.remove(name);
        }
        QueueCounters::add(&core.counters.settled, names.len());
    }
}

/// Acknowledges a batch: the locks are checked to still be ours (pipelined
/// reads), then every item's fenced multi is sent at once.
fn settle<T: Send + 'static>(core: &Core<T>, batch: Vec<Ack>) -> Result<()> {
    let lock_paths: Vec<String> = batch.iter().map(|a| a.lock.path().to_owned()).collect();
    let stats = core.client.exists_many(&lock_paths)?;
    let mut by_session: HashMap<u64, Vec<Ack>> = HashMap::new();
    for (ack, stat) in batch.into_iter().zip(stats) {
        match stat {
            Ok(Some(stat)) if stat.czxid != ack.lock.czxid() => {
                report(core, Error::LeaseLost { path: ack.item_path });
            }
            Ok(_) => by_session.entry(ack.lock.generation()).or_default().push(ack),
            Err(e) => {
                ack.lock.release(core);
                report(core, e);
            }
        }
    }
    for (generation, acks) in by_session {
        let multis: Vec<_> = acks
            .iter()
            .map(|a| a.lock.acknowledge_ops(&a.item_path, a.item_version))
            .collect();
        let results = core.client.multi_many_fenced(&multis, generation)?;
        for (ack, result) in acks.into_iter().zip(results) {
            match result {
                Ok(()) => log::debug!("acknowledged {}", ack.item_path),
                Err(Error::MultiFailed { index: 0, .. } | Error::SessionExpired) => {
                    // Unless an earlier attempt went through, the lease was lost.
                    if core.client.exists(&ack.item_path)?.is_some() {
                        report(core, Error::LeaseLost { path: ack.item_path });
                    }
                }
                Err(e) => {
                    ack.lock.release(core);
                    report(core, e);
                }
            }
        }
    }
    Ok(())
}

fn report<T: Send + 'static>(core: &Core<T>, error: Error) {
    if matches!(error, Error::LeaseLost { .. }) {
        QueueCounters::bump(&core.counters.lease_lost);
    }
    log::warn!("queue {}: {error}", core.path);
    core.tell_error(&error);
}
