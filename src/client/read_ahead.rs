//! [`PendingReads`]: multi-reads written now and answered later, so a caller
//! can read the next nodes it needs while its own writes commit.
//!
//! ZooKeeper serves a session's read at once unless a write of the same
//! session is ahead of it; a read written before a write is answered
//! without waiting for the write's disk sync. A consumer that reads its
//! next window before deleting the last one's items gets both answers in
//! the time of the delete alone.

use std::sync::atomic::Ordering;
use std::time::Instant;

use super::batch::{node_reads, MULTI_READ};
use super::session::Pending;
use super::wire::Request;
use super::{BatchResults, Stat, ZkClient};
use crate::path;

/// Multi-reads in flight: their answers are read by [`PendingReads::wait`].
pub(crate) struct PendingReads {
    /// The paths of each multi-read, with its answer to come.
    chunks: Vec<(Vec<String>, Pending)>,
    started: Instant,
    deadline: Instant,
}

impl ZkClient {
    /// Writes multi-reads of `paths` (up to [`MULTI_READ`] a request) and
    /// returns without waiting for their answers; `None` when there is
    /// nothing to read, the client is closed, a path is not valid, or the
    /// server has no multi-reads (the caller reads later, as it would have).
    pub(crate) fn read_ahead(&self, paths: Vec<String>) -> Option<PendingReads> {
        if paths.is_empty() || self.is_closed() || self.shared.no_multi_read.load(Ordering::Relaxed) {
            return None;
        }
        if paths.iter().any(|p| path::validate(p).is_err()) {
            return None;
        }
        let started = Instant::now();
        let deadline = self.sent_once_deadline(super::Opts::new(), started);
        let chunks: Vec<Vec<String>> = paths.chunks(MULTI_READ).map(<[String]>::to_vec).collect();
        let requests = chunks
            .iter()
            .map(|chunk| {
                self.shared.counters.count("get_data");
                (Request::MultiRead { paths: chunk }, None)
            })
            .collect();
        let pending = self.shared.link().send(requests, None, deadline);
        if pending.len() != chunks.len() {
            return None;
        }
        Some(PendingReads {
            chunks: chunks.into_iter().zip(pending).collect(),
            started,
            deadline,
        })
    }
}

impl PendingReads {
    /// The answers, per path in the order given: a node's data and stat,
    /// or why it could not be read (it is gone, or the request failed).
    pub(crate) fn wait(self, client: &ZkClient) -> BatchResults<(Vec<u8>, Stat)> {
        let mut results = Vec::new();
        for (paths, pending) in self.chunks {
            let first = paths.first().map_or("/", String::as_str);
            let answer = client.reply("get_data", first, &pending, self.deadline, self.started);
            node_reads(&paths, answer, &mut results);
        }
        results
    }
}
