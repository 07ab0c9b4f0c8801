//! [`SubtreeWatch`]: a persistent recursive watch (ZooKeeper 3.6 and
//! later) whose owner hears of every node created, changed or deleted at or
//! below a path, set in the round trip of the request it is written with
//! (see [`ZkClient::create_and_list_with`]).
//!
//! Its owner is a [`Sink`] called on the reader thread, so it only records
//! and signals. It is told when the connection drops (the events of a lost
//! connection are not sent again, ZOOKEEPER-4698) and when the session ends
//! (the watch is then gone: set a new one). A reattached session sets it on
//! the server again.

use std::sync::atomic::Ordering;

use super::session::{Registration, Sink, WatchReg};
use super::wire::Request;
use super::ZkClient;

/// A persistent recursive watch, removed when dropped (from the server once
/// no other watch of the client is left on its path).
pub(crate) struct SubtreeWatch {
    _registration: Registration,
}

impl ZkClient {
    /// Whether this client sends a persistent watch with a lock's create:
    /// not if it was built [without
    /// them](super::ZkClientBuilder::without_persistent_watches), nor once
    /// the server refused one (older than 3.6: it also drops the
    /// connection, so the create beside it is answered as lost).
    pub(crate) fn sets_subtree_watches(&self) -> bool {
        !self.shared.no_subtree_watch.load(Ordering::Relaxed)
    }

    /// Notes the answer to a subtree watch's request: a refusal means
    /// sending no other.
    pub(super) fn note_subtree_answer(&self, answer: &crate::error::Result<super::wire::Reply>) {
        if matches!(answer, Err(e) if e.is_unimplemented()) {
            log::info!("the server does not support persistent watches; locks watch their nodes one request each");
            self.shared.no_subtree_watch.store(true, Ordering::Relaxed);
        }
    }

    /// The request that sets a persistent recursive watch on `path`
    /// reporting to `sink`, and its id.
    pub(super) fn subtree_request<'p>(&self, path: &'p str, sink: &Sink) -> (Request<'p>, WatchReg, u64) {
        let id = self.shared.link().watches().next_id();
        let watch = WatchReg::Persistent {
            path: path.to_owned(),
            recursive: true,
            id,
            sink: std::sync::Arc::clone(sink),
        };
        (Request::AddWatch { path, recursive: true }, watch, id)
    }

    /// The watch `id` on `path`, set by an answer.
    pub(super) fn subtree_watch(&self, path: &str, id: u64) -> SubtreeWatch {
        SubtreeWatch {
            _registration: Registration::new(self.shared.link_weak(), path, id, true),
        }
    }
}
