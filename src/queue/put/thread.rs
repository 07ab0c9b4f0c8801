//! The put thread of a queue whose puts run in the background, or are
//! coalesced.
//!
//! Everything waiting for the thread is sent at once, as pipelined multis
//! of up to 64 creates, one node per put, in order. With coalescing, the
//! single-item puts of a batch that go to the same node prefix (the same
//! kind, priority or due time) are written as one node (see `coalesce`):
//! while one batch is in flight the next gathers, so an idle queue adds no
//! wait (or waits the linger set, for more to gather).
//!
//! Each put comes with its deadline, and a batch gives up at the earliest of
//! its puts' deadlines: so a put is stored by its deadline (a second later
//! while a connected server is answering), or fails. A background put's
//! failure goes to the put listeners and waits for the next put or flush
//! to report it (see `outcomes`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use parking_lot::{Condvar, Mutex};

use super::coalesce::{nodes, Job, Payload, Waiting};
use super::outcomes::Outcomes;
use crate::error::{Error, Result};
use crate::queue::store::{Put, Store};
use crate::sync::{earliest, Joiner};

/// How many background puts may wait for the put thread before `put` blocks.
const WINDOW: usize = 1024;

/// The most puts sent in one pipelined batch.
const BATCH: usize = 256;

/// Stores submitted items and reports each result to the queue's put
/// listeners (and to a caller that waits). Submitting blocks while the
/// window is full.
pub(super) struct Putter<T> {
    jobs: Sender<Job<T>>,
    window: Arc<Window>,
    thread: Joiner,
}

/// Jobs submitted and not yet taken by the thread, at most [`WINDOW`]. (A
/// bounded channel would set aside room for them all up front, in every
/// queue, even one that never puts.)
#[derive(Default)]
struct Window {
    queued: Mutex<usize>,
    taken: Condvar,
}

impl Window {
    fn enter(&self) {
        let mut queued = self.queued.lock();
        while *queued >= WINDOW {
            self.taken.wait(&mut queued);
        }
        *queued += 1;
    }

    fn leave(&self, jobs: usize) {
        let mut queued = self.queued.lock();
        *queued = queued.saturating_sub(jobs);
        self.taken.notify_all();
    }
}

impl<T: Send + 'static> Putter<T> {
    /// Starts the thread, which stores into `store` and reports to
    /// `outcomes`; `linger`, with coalescing, is how long it waits for more
    /// puts to gather after the first of a batch.
    pub(super) fn start(store: Arc<Store>, outcomes: Arc<Outcomes<T>>, linger: Duration) -> Result<Putter<T>> {
        let (jobs, rx) = crossbeam_channel::unbounded();
        let window = Arc::new(Window::default());
        let taking = Arc::clone(&window);
        let thread = Joiner::spawn("zk-queue-put", move || run(&store, &outcomes, &rx, &taking, linger))
            .map_err(|e| Error::spawn("put", e))?;
        Ok(Putter { jobs, window, thread })
    }

    /// Submits a put to be stored by `deadline` (`None`: no deadline); with
    /// `done`, its result is sent there too.
    pub(super) fn submit(
        &self,
        payload: Payload,
        items: Vec<T>,
        deadline: Option<Instant>,
        done: Option<Sender<Result<()>>>,
    ) {
        self.window.enter();
        // The thread lives as long as the sender; a send cannot fail before `stop`.
        let _ = self.jobs.send(Job {
            payload,
            items,
            deadline,
            done,
        });
    }
}

impl<T> Putter<T> {
    /// Lets the thread finish what was submitted, and joins it if it ends
    /// by `deadline`; otherwise it finishes on its own.
    pub(super) fn stop(self, deadline: Instant) {
        drop(self.jobs);
        self.thread.join_until(Some(deadline), "put");
    }
}

fn run<T: Send + 'static>(
    store: &Store,
    outcomes: &Outcomes<T>,
    jobs: &Receiver<Job<T>>,
    window: &Window,
    linger: Duration,
) {
    while let Ok(first) = jobs.recv() {
        let mut batch = vec![first];
        if !linger.is_zero() {
            let until = Instant::now() + linger;
            while batch.len() < BATCH {
                match jobs.recv_deadline(until) {
                    Ok(job) => batch.push(job),
                    Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => break,
                }
            }
        }
        batch.extend(jobs.try_iter().take(BATCH.saturating_sub(batch.len())));
        window.leave(batch.len());
        store_batch(store, outcomes, batch);
    }
}

/// Creates the batch's nodes with pipelined multis, by the earliest
/// deadline of its puts, and reports each result.
fn store_batch<T: Send + 'static>(store: &Store, outcomes: &Outcomes<T>, batch: Vec<Job<T>>) {
    let deadline = batch.iter().map(|job| job.deadline).reduce(earliest).flatten();
    let (nodes, waiting): (Vec<Result<Put>>, Vec<Waiting<T>>) = nodes(batch).into_iter().unzip();
    let mut puts = Vec::with_capacity(nodes.len());
    let mut slots = Vec::with_capacity(nodes.len());
    let mut results: Vec<Result<()>> = Vec::with_capacity(nodes.len());
    for (slot, node) in nodes.into_iter().enumerate() {
        match node {
            Ok(put) => {
                puts.push(put);
                slots.push(slot);
                results.push(Ok(()));
            }
            Err(e) => results.push(Err(e)),
        }
    }
    for (slot, stored) in slots.into_iter().zip(store.store(&puts, deadline)) {
        results[slot] = stored.map(|_| ());
    }
    for (result, waiting) in results.into_iter().zip(waiting) {
        if let Err(e) = &result {
            // A foreground put's caller hears of its failure; a background
            // put's only through the listeners and the next put or flush.
            if waiting.done.is_empty() {
                log::warn!("background put under {} failed: {e}", store.path());
                outcomes.failed_unheard(e);
            }
        }
        outcomes.report(&waiting.items, result.as_ref().map(|_| ()));
        for done in waiting.done {
            let _ = done.send(result.clone());
        }
        for _ in 0..waiting.jobs {
            outcomes.finished();
        }
    }
}
