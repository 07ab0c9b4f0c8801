//! The put thread of a queue whose puts run in the background, or are
//! coalesced.
//!
//! Everything waiting for the thread is sent at once, as pipelined multis
//! of up to 64 creates, one node per put, in order. With coalescing, the single-item puts of a batch that go to the
//! same node prefix (the same kind, priority or due time) are written as one
//! node in Curator's multi-item frame, as `put_multi` writes them: while one
//! batch is in flight the next gathers, so an idle queue adds no wait (or
//! waits the linger set, for more to gather).

use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use parking_lot::{Condvar, Mutex};

use super::core::Core;
use super::store::Put;
use crate::codec::encode_frame;
use crate::error::{Error, Result};
use crate::sync::Joiner;

/// How many background puts may wait for the put thread before `put` blocks.
const WINDOW: usize = 1024;

/// The most puts sent in one pipelined batch.
const BATCH: usize = 256;

/// The most records in one coalesced node.
const MAX_RECORDS: usize = 1024;

/// The most bytes of records in one coalesced node, well below the 1 MB a
/// Java client reads by default.
const MAX_BYTES: usize = 256 * 1024;

/// What a job stores.
pub(crate) enum Payload {
    /// A node, encoded.
    Node(Put),
    /// One item's record, to go into a node with others of the same prefix.
    Record { node_prefix: String, record: Vec<u8> },
}

struct Job<T> {
    payload: Payload,
    items: Vec<T>,
    /// Where a caller waiting for its put hears the result.
    done: Option<Sender<Result<()>>>,
}

/// Stores submitted items and reports each result to the queue's put
/// listeners (and to a caller that waits). Submitting blocks while the
/// window is full.
pub(crate) struct Putter<T> {
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
    /// Starts the thread; `linger`, with coalescing, is how long it waits
    /// for more puts to gather after the first of a batch.
    pub(crate) fn start(core: Arc<Core<T>>, linger: Duration) -> Result<Putter<T>> {
        let (jobs, rx) = crossbeam_channel::unbounded();
        let window = Arc::new(Window::default());
        let taking = Arc::clone(&window);
        let thread = Joiner::spawn("zk-queue-put", move || run(&core, &rx, &taking, linger))
            .map_err(|e| Error::spawn("put", e))?;
        Ok(Putter { jobs, window, thread })
    }

    /// Submits a put; with `done`, its result is sent there too.
    pub(crate) fn submit(&self, payload: Payload, items: Vec<T>, done: Option<Sender<Result<()>>>) {
        self.window.enter();
        // The thread lives as long as the sender; a send cannot fail before `stop`.
        let _ = self.jobs.send(Job { payload, items, done });
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

fn run<T: Send + 'static>(core: &Core<T>, jobs: &Receiver<Job<T>>, window: &Window, linger: Duration) {
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
        store(core, batch);
    }
}

/// The puts a node's items came from: their items, and callers waiting.
struct Waiting<T> {
    items: Vec<T>,
    done: Vec<Sender<Result<()>>>,
    jobs: usize,
}

impl<T> Waiting<T> {
    fn of(job: Job<T>) -> (Payload, Waiting<T>) {
        let Job { payload, items, done } = job;
        let waiting = Waiting {
            items,
            done: done.into_iter().collect(),
            jobs: 1,
        };
        (payload, waiting)
    }

    fn join(&mut self, other: Waiting<T>) {
        self.items.extend(other.items);
        self.done.extend(other.done);
        self.jobs += other.jobs;
    }
}

/// Creates the batch's nodes with pipelined multis and reports each result.
fn store<T: Send + 'static>(core: &Core<T>, batch: Vec<Job<T>>) {
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
    for (slot, stored) in slots.into_iter().zip(core.store(&puts, None)) {
        results[slot] = stored.map(|_| ());
    }
    for (result, waiting) in results.into_iter().zip(waiting) {
        if let Err(e) = &result {
            log::warn!("background put under {} failed: {e}", core.path);
        }
        core.report(&waiting.items, result.as_ref().map(|_| ()));
        for done in waiting.done {
            let _ = done.send(result.clone());
        }
        for _ in 0..waiting.jobs {
            core.put_finished();
        }
    }
}

/// A node gathering records of one prefix.
struct Gathering<T> {
    prefix: String,
    records: Vec<Vec<u8>>,
    bytes: usize,
    waiting: Waiting<T>,
}

/// The nodes of a batch, in the order their first puts came: each encoded
/// node as it is, and the records of one prefix gathered into nodes of at
/// most [`MAX_RECORDS`] records and [`MAX_BYTES`] bytes.
fn nodes<T>(batch: Vec<Job<T>>) -> Vec<(Result<Put>, Waiting<T>)> {
    enum Slot<T> {
        Encoded(Put, Waiting<T>),
        Gathered(usize),
    }
    let mut slots: Vec<Slot<T>> = Vec::new();
    let mut open: Vec<Gathering<T>> = Vec::new();
    for job in batch {
        match Waiting::of(job) {
            (Payload::Node(put), waiting) => slots.push(Slot::Encoded(put, waiting)),
            (Payload::Record { node_prefix, record }, waiting) => {
                let size = record.len();
                let fits = |g: &Gathering<T>| {
                    g.prefix == node_prefix && g.records.len() < MAX_RECORDS && g.bytes + size <= MAX_BYTES
                };
                match open.iter().rposition(fits) {
                    Some(at) => {
                        let gathering = &mut open[at];
                        gathering.bytes += size;
                        gathering.records.push(record);
                        gathering.waiting.join(waiting);
                    }
                    None => {
                        slots.push(Slot::Gathered(open.len()));
                        open.push(Gathering {
                            prefix: node_prefix,
                            records: vec![record],
                            bytes: size,
                            waiting,
                        });
                    }
                }
            }
        }
    }
    let mut gathered: Vec<Option<Gathering<T>>> = open.into_iter().map(Some).collect();
    slots
        .into_iter()
        .filter_map(|slot| match slot {
            Slot::Encoded(put, waiting) => Some((Ok(put), waiting)),
            Slot::Gathered(at) => gathered[at].take().map(|g| {
                let frame = encode_frame(g.records.iter().map(Vec::as_slice)).map_err(Error::encoding);
                (frame.map(|frame| Put::new(g.prefix, frame)), g.waiting)
            }),
        })
        .collect()
}
