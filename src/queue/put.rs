//! The put thread of a queue whose puts run in the background.

use std::sync::Arc;
use std::time::Instant;

use crossbeam_channel::{Receiver, Sender};

use super::core::Core;
use super::store::Put;
use crate::error::{Error, Result};
use crate::sync::Joiner;

/// How many background puts may wait for the put thread before `put` blocks.
const WINDOW: usize = 1024;

/// The most puts sent in one pipelined batch.
const BATCH: usize = 256;

struct Job<T> {
    put: Put,
    items: Vec<T>,
}

/// Stores submitted items one after another and reports each result to the
/// queue's put listeners. Submitting blocks while the window is full.
pub(crate) struct Putter<T> {
    jobs: Sender<Job<T>>,
    thread: Joiner,
}

impl<T: Send + 'static> Putter<T> {
    pub(crate) fn start(core: Arc<Core<T>>) -> Result<Putter<T>> {
        let (jobs, rx) = crossbeam_channel::bounded(WINDOW);
        let thread = Joiner::spawn("zk-queue-put", move || run(&core, &rx)).map_err(|e| Error::spawn("put", e))?;
        Ok(Putter { jobs, thread })
    }

    pub(crate) fn submit(&self, put: Put, items: Vec<T>) {
        // The thread lives as long as the sender; a send cannot fail before `stop`.
        let _ = self.jobs.send(Job { put, items });
    }
}

impl<T> Putter<T> {
    /// Lets the thread finish what was submitted, and joins it if it ends
    /// by `deadline`; otherwise it finishes on its own.
    pub(crate) fn stop(self, deadline: Instant) {
        drop(self.jobs);
        self.thread.join_until(Some(deadline), "put");
    }
}

fn run<T: Send + 'static>(core: &Core<T>, jobs: &Receiver<Job<T>>) {
    // Everything waiting is sent at once, pipelined, as one batch.
    while let Ok(first) = jobs.recv() {
        let mut batch = vec![first];
        batch.extend(jobs.try_iter().take(BATCH - 1));
        store(core, batch);
    }
}

/// Creates the batch's nodes with pipelined requests and reports each result.
fn store<T: Send + 'static>(core: &Core<T>, batch: Vec<Job<T>>) {
    let (puts, items): (Vec<Put>, Vec<Vec<T>>) = batch.into_iter().map(|job| (job.put, job.items)).unzip();
    let results = core.store(&puts, None);
    for (items, result) in items.into_iter().zip(results) {
        if let Err(e) = &result {
            log::warn!("background put under {} failed: {e}", core.path);
        }
        core.report(&items, result.as_ref().map(|_| ()));
        core.put_finished();
    }
}
