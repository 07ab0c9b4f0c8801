//! Coalescing: the jobs of one batch of the put thread become nodes in the
//! order their first puts came, each encoded node as it is, and the single
//! records of one node prefix gathered into nodes in Curator's multi-item
//! frame, as `put_multi` writes them.

use std::time::Instant;

use crossbeam_channel::Sender;

use crate::codec::encode_frame;
use crate::error::{Error, Result};
use crate::queue::store::Put;

/// The most records in one coalesced node.
const MAX_RECORDS: usize = 1024;

/// The most bytes of records in one coalesced node, well below the 1 MB a
/// Java client reads by default.
const MAX_BYTES: usize = 256 * 1024;

/// What a job stores.
pub(super) enum Payload {
    /// A node, encoded.
    Node(Put),
    /// One item's record, to go into a node with others of the same prefix.
    Record { node_prefix: String, record: Vec<u8> },
}

/// One put handed to the put thread.
pub(super) struct Job<T> {
    pub(super) payload: Payload,
    pub(super) items: Vec<T>,
    /// When storing it gives up (`None`: never).
    pub(super) deadline: Option<Instant>,
    /// Where a caller waiting for its put hears the result.
    pub(super) done: Option<Sender<Result<()>>>,
}

/// The puts a node's items came from: their items, and callers waiting.
pub(super) struct Waiting<T> {
    pub(super) items: Vec<T>,
    pub(super) done: Vec<Sender<Result<()>>>,
    pub(super) jobs: usize,
}

impl<T> Waiting<T> {
    fn of(job: Job<T>) -> (Payload, Waiting<T>) {
        let Job {
            payload, items, done, ..
        } = job;
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
pub(super) fn nodes<T>(batch: Vec<Job<T>>) -> Vec<(Result<Put>, Waiting<T>)> {
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
