//! [`OwnNodes`]: how a participant hears of the deletion of its own nodes
//! without a request per node: one persistent recursive watch on the lock
//! path (ZooKeeper 3.6 and later), written with the participant's first
//! create and answered ahead of it, whose events open the [`Mark`] of the
//! attempt whose node they concern.
//!
//! A mark is registered under the attempt's protected prefix
//! (`_c_<UUID>-`, which no other participant's names start with) before its
//! create is sent, so no event of its node can come before it; once the
//! create's answer names the node, only that node's events count (a stray
//! node of a create whose reply was lost is deleted without opening it).
//! The mark opens when its node is deleted or its data changed, when the
//! connection drops (the events of a lost connection are not sent again,
//! ZOOKEEPER-4698) and when the session ends (the watch is then gone; the
//! next create sends a new one). While a mark is closed, then, its node has
//! been there since the mark was armed: at the create, or before a listing
//! that showed the node (a waiter arms it again before it lists after a
//! disconnection).
//!
//! The reader thread only looks the prefix up and opens a latch. The cost is
//! in events, not requests: the watch hears of every node created, changed
//! or deleted under the lock path (two events per participant's node, to
//! each participant with a watch there), so a lock path should hold only the
//! lock's nodes, as Curator's do. Under contention those events cost more
//! than they save (every participant hears of every node; measured, a
//! hand-off between 8 contenders slowed), so a participant that has had to
//! wait makes no new marks (its attempts watch their nodes with a request
//! each, as below) and drops its watch once its last mark is gone: the
//! watch stays while any mark relies on it, and a mark is in the map from
//! before its create, so no mark is left uncovered. A client without persistent watches
//! (built without them, or refused by an older server) marks nothing: its
//! holders watch their nodes with a request each, as before.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::client::wire::EventType;
use crate::client::{Notice, Session, Sink, SubtreeWatch};
use crate::sync::Latch;

/// The length of a protected prefix, `_c_` + a UUID + `-`.
const PREFIX_LEN: usize = 3 + 36 + 1;

/// The marks of one participant, and its watch on the lock path.
pub(super) struct OwnNodes {
    shared: Arc<Shared>,
}

struct Shared {
    lock_path: String,
    /// The open marks, by protected prefix (locked before `watch`).
    marks: Mutex<HashMap<String, Entry>>,
    /// The watch, and the session it was set in.
    watch: Mutex<Option<(Session, SubtreeWatch)>>,
    /// The watch's session ended: it is gone.
    ended: AtomicBool,
    /// The participant has had to wait: it makes no new marks, and its
    /// watch goes with the last mark.
    contended: AtomicBool,
}

struct Entry {
    /// Its node's name, once known.
    node: Option<String>,
    latch: Latch,
}

/// An attempt's watch on its own node, while the participant's watch on the
/// lock path reports to it.
pub(super) struct Mark {
    shared: Arc<Shared>,
    prefix: String,
    latch: Latch,
}

impl OwnNodes {
    pub(super) fn new(lock_path: &str) -> OwnNodes {
        OwnNodes {
            shared: Arc::new(Shared {
                lock_path: lock_path.to_owned(),
                marks: Mutex::new(HashMap::new()),
                watch: Mutex::new(None),
                ended: AtomicBool::new(false),
                contended: AtomicBool::new(false),
            }),
        }
    }

    /// Whether the watch is set in `session`.
    fn is_set_in(&self, session: Session) -> bool {
        let watch = self.shared.watch.lock();
        watch.as_ref().is_some_and(|(s, _)| *s == session) && !self.shared.ended.load(Ordering::SeqCst)
    }

    /// A mark for the attempt whose names start with `prefix`, about to
    /// create a node in `session`, and the sink of a watch to send with the
    /// create if none is set in that session yet.
    pub(super) fn mark(&self, prefix: &str, session: Session) -> (Mark, Option<Sink>) {
        let latch = Latch::new();
        let entry = Entry {
            node: None,
            latch: latch.clone(),
        };
        self.shared.marks.lock().insert(prefix.to_owned(), entry);
        let mark = Mark {
            shared: Arc::clone(&self.shared),
            prefix: prefix.to_owned(),
            latch,
        };
        let wanted = !self.is_set_in(session) && !self.shared.contended.load(Ordering::SeqCst);
        let sink = wanted.then(|| self.sink());
        (mark, sink)
    }

    /// Keeps the watch the create's answer set in `session`.
    pub(super) fn set(&self, session: Session, watch: SubtreeWatch) {
        self.shared.ended.store(false, Ordering::SeqCst);
        *self.shared.watch.lock() = Some((session, watch));
    }

    /// Whether a mark made in `session` (before its create) is kept by the
    /// watch: it is set in that session (and stays while a mark is left),
    /// and the participant still makes marks.
    pub(super) fn covers(&self, session: Session) -> bool {
        self.is_set_in(session) && !self.shared.contended.load(Ordering::SeqCst)
    }

    /// The participant had to wait: from now on its attempts watch nodes
    /// with requests, and the watch goes once no mark is left.
    pub(super) fn contended(&self) {
        if !self.shared.contended.swap(true, Ordering::SeqCst) {
            log::debug!(
                "lock {}: contended; its watch on the lock path goes",
                self.shared.lock_path
            );
            self.shared.release_if_idle();
        }
    }

    /// The watch's owner; on the reader thread it only opens latches.
    fn sink(&self) -> Sink {
        let shared = Arc::downgrade(&self.shared);
        Arc::new(move |notice| {
            let Some(shared) = shared.upgrade() else { return };
            match notice {
                Notice::Event(event) => {
                    if matches!(event.kind, EventType::NodeDeleted | EventType::NodeDataChanged) {
                        shared.changed(&event.path);
                    }
                }
                Notice::Disconnected => shared.open_all(),
                Notice::Ended => {
                    shared.ended.store(true, Ordering::SeqCst);
                    shared.open_all();
                }
            }
        })
    }
}

impl Shared {
    /// Opens the mark of the node at `node_path`, if it is one's.
    fn changed(&self, node_path: &str) {
        // A child of the lock path (never the root), not a deeper node.
        let child = node_path.strip_prefix(self.lock_path.as_str());
        let Some(name) = child.and_then(|rest| rest.strip_prefix('/')) else {
            return;
        };
        if name.contains('/') {
            return;
        }
        let Some(prefix) = name.get(..PREFIX_LEN) else { return };
        if let Some(entry) = self.marks.lock().get(prefix) {
            if entry.node.as_deref().is_none_or(|node| node == name) {
                entry.latch.open();
            }
        }
    }

    /// Drops the watch if the participant is contended and no mark is left
    /// (checked with the marks locked, so no mark comes in between).
    fn release_if_idle(&self) {
        let marks = self.marks.lock();
        if !marks.is_empty() || !self.contended.load(Ordering::SeqCst) {
            return;
        }
        let watch = self.watch.lock().take();
        drop(marks);
        // Removed from the server without waiting, no lock held.
        drop(watch);
    }

    fn open_all(&self) {
        for entry in self.marks.lock().values() {
            entry.latch.open();
        }
    }
}

impl Mark {
    /// Notes the name of the attempt's node: only its events count now.
    pub(super) fn named(&self, name: &str) {
        if let Some(entry) = self.shared.marks.lock().get_mut(&self.prefix) {
            entry.node = Some(name.to_owned());
        }
    }

    /// Whether nothing may have happened to the node since the mark was
    /// armed.
    pub(super) fn is_intact(&self) -> bool {
        !self.latch.is_open()
    }

    /// Arms the mark again (a new latch), before a listing that will show
    /// whether the node is there.
    pub(super) fn arm(&mut self) {
        let latch = Latch::new();
        if let Some(entry) = self.shared.marks.lock().get_mut(&self.prefix) {
            entry.latch = latch.clone();
        }
        self.latch = latch;
    }

    /// Opens `latch` when the mark opens (at once if it is open).
    pub(super) fn forward_to(&self, latch: &Latch) {
        self.latch.forward_to(latch);
    }
}

impl Drop for Mark {
    fn drop(&mut self) {
        self.shared.marks.lock().remove(&self.prefix);
        self.shared.release_if_idle();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::wire::WatchEvent;

    fn event(kind: EventType, path: &str) -> WatchEvent {
        WatchEvent {
            kind,
            state: 3,
            path: path.to_owned(),
        }
    }

    #[test]
    fn a_mark_opens_on_its_own_node_s_deletion_only() {
        let own = OwnNodes::new("/l");
        let prefix = "_c_0a1b2c3d-0000-4000-8000-000000000001-";
        let other = "_c_0a1b2c3d-0000-4000-8000-000000000002-";
        let (mut mark, sink) = own.mark(prefix, Session::of_epoch(1));
        let sink = sink.expect("no watch is set yet");
        let tell = |kind, path: &str| sink(Notice::Event(&event(kind, path)));
        tell(EventType::NodeDeleted, &format!("/l/{other}lock-0000000001"));
        tell(EventType::NodeCreated, &format!("/l/{prefix}lock-0000000002"));
        tell(EventType::NodeDeleted, &format!("/other/{prefix}lock-0000000002"));
        assert!(mark.is_intact());
        // Before the create's answer, any node of the prefix is its own.
        tell(EventType::NodeDeleted, &format!("/l/{prefix}lock-0000000002"));
        assert!(!mark.is_intact());
        mark.arm();
        mark.named(&format!("{prefix}lock-0000000003"));
        tell(EventType::NodeDeleted, &format!("/l/{prefix}lock-0000000002"));
        assert!(mark.is_intact(), "a stray node of the same prefix is not its node");
        let lost = Latch::new();
        mark.forward_to(&lost);
        tell(EventType::NodeDataChanged, &format!("/l/{prefix}lock-0000000003"));
        assert!(!mark.is_intact() && lost.is_open());
        mark.arm();
        sink(Notice::Disconnected);
        assert!(!mark.is_intact(), "events may be missed while disconnected");
        drop(mark);
        assert!(own.shared.marks.lock().is_empty());
        // Contended, it sends no other watch, and its marks are not kept.
        own.contended();
        let (_mark, sink) = own.mark(prefix, Session::of_epoch(1));
        assert!(sink.is_none());
        assert!(!own.covers(Session::of_epoch(1)));
    }
}
