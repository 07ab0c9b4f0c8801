//! The session's watches: who waits for which event, so that the reader
//! thread can route each event, and so that a reattached session can ask the
//! server to set them all again (`SetWatches`).
//!
//! A one-shot watch is registered when the reply to the request that set it
//! arrives (on the reader thread, before any later event is read), fires
//! once, and stays registered across a reconnection to the same session: the
//! server sets it again from the list the client sends, and fires it for
//! changes made while the client was away. A persistent watch stays until it
//! is removed; its owner hears of a disconnection, since the events of a lost
//! connection are not sent again (ZOOKEEPER-4698). When the session ends
//! (expiry or close) every watch is told and forgotten.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::client::wire::{Code, EventType, WatchEvent};
use crate::sync::Latch;

/// What a one-shot watch waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum WatchKind {
    /// Changes of an existing node's data, and its deletion.
    Data,
    /// The creation of a node that did not exist.
    Exist,
    /// Changes of a node's children, and its deletion.
    Child,
}

/// What a persistent watch's owner is told.
#[derive(Debug)]
pub(crate) enum Notice<'a> {
    /// An event on the watched node or, for a recursive watch, below it.
    Event(&'a WatchEvent),
    /// The connection dropped: events may be missed until the owner looks again.
    Disconnected,
    /// The session ended (expired, or the client closed): the watch is gone.
    Ended,
}

/// The owner of a persistent watch; called on the reader thread, so it only
/// records and signals.
pub(crate) type Sink = Arc<dyn Fn(Notice<'_>) + Send + Sync>;

/// The watch a request sets once it is answered.
pub(crate) enum WatchReg {
    /// A one-shot watch that opens `latch`.
    OneShot {
        /// The node.
        path: String,
        /// Child or data watch; an exists request's is decided by its answer.
        kind: WatchKind,
        /// The registration's id, for removing it.
        id: u64,
        /// Opened when the watch fires or the session ends.
        latch: Latch,
    },
    /// A one-shot data watch on a node that must exist, set by a request
    /// whose answer nobody awaits: an answer that does not set it (the node
    /// is missing, the request failed) opens `latch` instead.
    MustExist {
        /// The node.
        path: String,
        /// The registration's id, for removing it.
        id: u64,
        /// Opened when the watch fires, is not set, or the session ends.
        latch: Latch,
    },
    /// A one-shot data watch on a node that must exist, set by a request
    /// whose answer nobody awaits, that also tells whether the node's
    /// deletion fired it (not a change of its data, nor the session's end):
    /// it sets `deleted` before it opens `latch`. An answer that does not
    /// set it opens `latch` too, setting `deleted` if it found no node.
    Deletion {
        /// The node.
        path: String,
        /// The registration's id, for removing it.
        id: u64,
        /// Opened when the watch fires or the session ends.
        latch: Latch,
        /// Set when the node's deletion fired the watch.
        deleted: Arc<AtomicBool>,
    },
    /// A persistent watch (recursive or not) reporting to `sink`.
    Persistent {
        /// The node.
        path: String,
        /// Whether events below the node count too.
        recursive: bool,
        /// The registration's id, for removing it.
        id: u64,
        /// The owner.
        sink: Sink,
    },
}

struct Persistent {
    id: u64,
    recursive: bool,
    sink: Sink,
}

/// A one-shot watch's owner: its registration's id, its latch, and the
/// flag its node's deletion sets, if it asked for one.
struct OneShot {
    id: u64,
    latch: Latch,
    deleted: Option<Arc<AtomicBool>>,
}

impl OneShot {
    fn of(id: u64, latch: Latch) -> OneShot {
        OneShot {
            id,
            latch,
            deleted: None,
        }
    }
}

#[derive(Default)]
struct Inner {
    one_shot: HashMap<(String, WatchKind), Vec<OneShot>>,
    persistent: HashMap<String, Vec<Persistent>>,
    /// Watches (of any kind) sent and not answered yet, by path.
    pending: HashMap<String, usize>,
}

/// Every watch of one session.
#[derive(Default)]
pub(crate) struct Watches {
    inner: Mutex<Inner>,
    next_id: AtomicU64,
}

/// The paths of every watch, as `SetWatches` lists them.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct WatchLists {
    pub(crate) data: Vec<String>,
    pub(crate) exist: Vec<String>,
    pub(crate) child: Vec<String>,
    pub(crate) persistent: Vec<String>,
    pub(crate) recursive: Vec<String>,
}

impl WatchLists {
    /// Whether there is no watch to set.
    pub(crate) fn is_empty(&self) -> bool {
        self.data.is_empty()
            && self.exist.is_empty()
            && self.child.is_empty()
            && self.persistent.is_empty()
            && self.recursive.is_empty()
    }
}

impl Watches {
    /// A fresh id for a registration.
    pub(crate) fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Counts a watch sent but not answered yet (called as the request is
    /// written).
    pub(crate) fn sent(&self, reg: &WatchReg) {
        let (WatchReg::Persistent { path, .. }
        | WatchReg::OneShot { path, .. }
        | WatchReg::MustExist { path, .. }
        | WatchReg::Deletion { path, .. }) = reg;
        *self.inner.lock().pending.entry(path.clone()).or_default() += 1;
    }

    fn settle_pending(inner: &mut Inner, path: &str) {
        if let Some(count) = inner.pending.get_mut(path) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                inner.pending.remove(path);
            }
        }
    }

    /// Registers `reg` now that its request was answered with `code`: a
    /// watch is set by an answer, or by an exists request's "no node".
    pub(crate) fn answered(&self, reg: WatchReg, code: Code) {
        let mut inner = self.inner.lock();
        match reg {
            WatchReg::OneShot { path, kind, id, latch } => {
                Self::settle_pending(&mut inner, &path);
                let kind = match (kind, code) {
                    (WatchKind::Exist, Code::OK) => WatchKind::Data,
                    (WatchKind::Exist, Code::NO_NODE) => WatchKind::Exist,
                    (kind, Code::OK) => kind,
                    _ => return,
                };
                inner
                    .one_shot
                    .entry((path, kind))
                    .or_default()
                    .push(OneShot::of(id, latch));
            }
            WatchReg::Deletion {
                path,
                id,
                latch,
                deleted,
            } => {
                Self::settle_pending(&mut inner, &path);
                if code == Code::OK {
                    let owner = OneShot {
                        id,
                        latch,
                        deleted: Some(deleted),
                    };
                    inner.one_shot.entry((path, WatchKind::Data)).or_default().push(owner);
                } else {
                    deleted.store(code == Code::NO_NODE, Ordering::SeqCst);
                    latch.open();
                }
            }
            WatchReg::MustExist { path, id, latch } => {
                Self::settle_pending(&mut inner, &path);
                if code == Code::OK {
                    inner
                        .one_shot
                        .entry((path, WatchKind::Data))
                        .or_default()
                        .push(OneShot::of(id, latch));
                } else {
                    latch.open();
                }
            }
            WatchReg::Persistent {
                path,
                recursive,
                id,
                sink,
            } => {
                Self::settle_pending(&mut inner, &path);
                if code == Code::OK {
                    inner
                        .persistent
                        .entry(path)
                        .or_default()
                        .push(Persistent { id, recursive, sink });
                }
            }
        }
    }

    /// A watch whose request failed without an answer.
    pub(crate) fn unanswered(&self, reg: WatchReg) {
        self.answered(reg, Code::CONNECTION_LOSS);
    }

    /// Removes a one-shot registration (its owner is gone); returns whether
    /// the server's watch of that kind on `path` should go too: this was the
    /// last one there, it had not fired, and no other watch is on its way to
    /// or set on `path`.
    pub(crate) fn remove_one_shot(&self, path: &str, kind: WatchKind, id: u64) -> bool {
        let mut inner = self.inner.lock();
        let mut found = false;
        let mut emptied = false;
        // An exists request's watch is registered as the kind its answer decided.
        for kind in [kind, WatchKind::Data, WatchKind::Exist] {
            let key = (path.to_owned(), kind);
            if let Some(list) = inner.one_shot.get_mut(&key) {
                let before = list.len();
                list.retain(|owner| owner.id != id);
                found |= list.len() < before;
                if list.is_empty() {
                    inner.one_shot.remove(&key);
                    emptied |= found;
                }
            }
        }
        let others = [WatchKind::Data, WatchKind::Exist, WatchKind::Child]
            .into_iter()
            .any(|k| k != kind && inner.one_shot.contains_key(&(path.to_owned(), k)));
        emptied && !others && !inner.pending.contains_key(path) && !inner.persistent.contains_key(path)
    }

    /// Removes a persistent registration; returns whether the server's watch
    /// on `path` should go too: no other watch of any kind is left or on its
    /// way there.
    pub(crate) fn remove_persistent(&self, path: &str, id: u64) -> bool {
        let mut inner = self.inner.lock();
        let Some(list) = inner.persistent.get_mut(path) else {
            return false;
        };
        list.retain(|p| p.id != id);
        if !list.is_empty() {
            return false;
        }
        inner.persistent.remove(path);
        let one_shot_left = [WatchKind::Data, WatchKind::Exist, WatchKind::Child]
            .into_iter()
            .any(|kind| inner.one_shot.contains_key(&(path.to_owned(), kind)));
        !one_shot_left && !inner.pending.contains_key(path)
    }

    /// Routes an event from the server to the watches it fires.
    pub(crate) fn dispatch(&self, event: &WatchEvent) {
        let kinds: &[WatchKind] = match event.kind {
            EventType::NodeCreated | EventType::NodeDataChanged => &[WatchKind::Data, WatchKind::Exist],
            EventType::NodeDeleted => &[WatchKind::Data, WatchKind::Exist, WatchKind::Child],
            EventType::NodeChildrenChanged => &[WatchKind::Child],
            _ => &[],
        };
        let mut fired = Vec::new();
        let mut sinks = Vec::new();
        {
            let mut inner = self.inner.lock();
            for kind in kinds {
                if let Some(list) = inner.one_shot.remove(&(event.path.clone(), *kind)) {
                    fired.extend(list);
                }
            }
            for (path, list) in &inner.persistent {
                let exact = *path == event.path;
                let below = is_below(path, &event.path);
                for p in list {
                    let counts = if p.recursive {
                        (exact || below) && event.kind != EventType::NodeChildrenChanged
                    } else {
                        exact
                    };
                    if counts {
                        sinks.push(Arc::clone(&p.sink));
                    }
                }
            }
        }
        // Signalled without the registry's lock held.
        for owner in fired {
            if let Some(deleted) = &owner.deleted {
                deleted.store(event.kind == EventType::NodeDeleted, Ordering::SeqCst);
            }
            owner.latch.open();
        }
        for sink in sinks {
            sink(Notice::Event(event));
        }
    }

    /// Tells persistent watches that the connection dropped.
    pub(crate) fn disconnected(&self) {
        for sink in self.sinks() {
            sink(Notice::Disconnected);
        }
    }

    /// Tells every watch that the session ended, and forgets them all.
    pub(crate) fn ended(&self) {
        let (one_shot, persistent) = {
            let mut inner = self.inner.lock();
            inner.pending.clear();
            (
                std::mem::take(&mut inner.one_shot),
                std::mem::take(&mut inner.persistent),
            )
        };
        for (_, list) in one_shot {
            for owner in list {
                owner.latch.open();
            }
        }
        for (_, list) in persistent {
            for p in list {
                (p.sink)(Notice::Ended);
            }
        }
    }

    /// Every watch's path, for setting them again after a reconnection.
    pub(crate) fn lists(&self) -> WatchLists {
        let inner = self.inner.lock();
        let mut lists = WatchLists::default();
        for (path, kind) in inner.one_shot.keys() {
            match kind {
                WatchKind::Data => lists.data.push(path.clone()),
                WatchKind::Exist => lists.exist.push(path.clone()),
                WatchKind::Child => lists.child.push(path.clone()),
            }
        }
        for (path, list) in &inner.persistent {
            if list.iter().any(|p| p.recursive) {
                lists.recursive.push(path.clone());
            }
            if list.iter().any(|p| !p.recursive) {
                lists.persistent.push(path.clone());
            }
        }
        lists
    }

    fn sinks(&self) -> Vec<Sink> {
        let inner = self.inner.lock();
        inner
            .persistent
            .values()
            .flat_map(|list| list.iter().map(|p| Arc::clone(&p.sink)))
            .collect()
    }
}

/// Whether `path` is strictly below `ancestor`.
fn is_below(ancestor: &str, path: &str) -> bool {
    if ancestor == "/" {
        return path.len() > 1;
    }
    path.strip_prefix(ancestor).is_some_and(|rest| rest.starts_with('/'))
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use super::*;

    fn event(kind: EventType, path: &str) -> WatchEvent {
        WatchEvent {
            kind,
            state: 3,
            path: path.to_owned(),
        }
    }

    fn one_shot(watches: &Watches, path: &str, kind: WatchKind, code: Code) -> Latch {
        let latch = Latch::new();
        let reg = WatchReg::OneShot {
            path: path.into(),
            kind,
            id: watches.next_id(),
            latch: latch.clone(),
        };
        watches.answered(reg, code);
        latch
    }

    #[test]
    fn a_watch_on_a_node_that_must_exist_opens_its_latch_when_the_answer_does_not_set_it() {
        let watches = Watches::default();
        let must_exist = |code| {
            let latch = Latch::new();
            let reg = WatchReg::MustExist {
                path: "/l/n".into(),
                id: watches.next_id(),
                latch: latch.clone(),
            };
            watches.sent(&reg);
            watches.answered(reg, code);
            latch
        };
        assert!(must_exist(Code::NO_NODE).is_open());
        assert!(must_exist(Code::CONNECTION_LOSS).is_open());
        let set = must_exist(Code::OK);
        assert!(!set.is_open());
        watches.dispatch(&event(EventType::NodeDataChanged, "/l/other"));
        assert!(!set.is_open());
        watches.dispatch(&event(EventType::NodeDeleted, "/l/n"));
        assert!(set.is_open());
    }

    #[test]
    fn a_deletion_watch_tells_a_deletion_from_a_change_and_the_end() {
        let watches = Watches::default();
        let answered = |path: &str, code| {
            let (latch, deleted) = (Latch::new(), Arc::new(AtomicBool::new(false)));
            let reg = WatchReg::Deletion {
                path: path.into(),
                id: watches.next_id(),
                latch: latch.clone(),
                deleted: Arc::clone(&deleted),
            };
            watches.sent(&reg);
            watches.answered(reg, code);
            (latch, deleted)
        };
        let watch = |path: &str| answered(path, Code::OK);
        let (changed, changed_deleted) = watch("/l/a");
        let (gone, gone_deleted) = watch("/l/b");
        let (ended, ended_deleted) = watch("/l/c");
        watches.dispatch(&event(EventType::NodeDataChanged, "/l/a"));
        watches.dispatch(&event(EventType::NodeDeleted, "/l/b"));
        watches.ended();
        assert!(changed.is_open() && gone.is_open() && ended.is_open());
        let flags = [&changed_deleted, &gone_deleted, &ended_deleted].map(|f| f.load(Ordering::SeqCst));
        assert_eq!(flags, [false, true, false]);
        // An answer that sets no watch opens it: a deletion if the node is gone.
        let (missing, missing_deleted) = answered("/l/d", Code::NO_NODE);
        let (lost, lost_deleted) = answered("/l/e", Code::CONNECTION_LOSS);
        assert!(missing.is_open() && missing_deleted.load(Ordering::SeqCst));
        assert!(lost.is_open() && !lost_deleted.load(Ordering::SeqCst));
        assert!(watches.lists().is_empty());
    }

    #[test]
    fn a_child_watch_fires_once_on_its_node_and_survives_other_events() {
        let watches = Watches::default();
        let latch = one_shot(&watches, "/q", WatchKind::Child, Code::OK);
        watches.dispatch(&event(EventType::NodeDataChanged, "/q"));
        watches.dispatch(&event(EventType::NodeChildrenChanged, "/other"));
        assert!(!latch.is_open());
        assert_eq!(watches.lists().child, ["/q"]);
        watches.dispatch(&event(EventType::NodeChildrenChanged, "/q"));
        assert!(latch.is_open());
        assert!(watches.lists().is_empty());
    }

    #[test]
    fn an_exists_watch_is_a_data_watch_on_a_node_and_an_exist_watch_without_one() {
        let watches = Watches::default();
        one_shot(&watches, "/a", WatchKind::Exist, Code::OK);
        let missing = one_shot(&watches, "/b", WatchKind::Exist, Code::NO_NODE);
        one_shot(&watches, "/c", WatchKind::Child, Code::NO_NODE);
        let lists = watches.lists();
        assert_eq!(
            (lists.data, lists.exist, lists.child),
            (vec!["/a".to_owned()], vec!["/b".to_owned()], vec![])
        );
        watches.dispatch(&event(EventType::NodeCreated, "/b"));
        assert!(missing.is_open());
    }

    #[test]
    fn a_recursive_watch_hears_its_subtree_and_is_told_of_disconnections_and_the_end() {
        let watches = Watches::default();
        let heard = Arc::new(Mutex::new(Vec::new()));
        let record = Arc::clone(&heard);
        let sink: Sink = Arc::new(move |notice| {
            record.lock().push(match notice {
                Notice::Event(e) => e.path.clone(),
                Notice::Disconnected => "disconnected".into(),
                Notice::Ended => "ended".into(),
            })
        });
        let reg = WatchReg::Persistent {
            path: "/q".into(),
            recursive: true,
            id: 7,
            sink,
        };
        watches.sent(&reg);
        watches.answered(reg, Code::OK);
        for path in ["/q/queue-1", "/qq/x", "/q", "/"] {
            watches.dispatch(&event(EventType::NodeCreated, path));
        }
        watches.dispatch(&event(EventType::NodeChildrenChanged, "/q"));
        watches.disconnected();
        assert_eq!(watches.lists().recursive, ["/q"]);
        watches.ended();
        assert_eq!(*heard.lock(), ["/q/queue-1", "/q", "disconnected", "ended"]);
        assert!(watches.lists().is_empty());
    }

    #[test]
    fn the_servers_persistent_watch_goes_only_with_the_last_watch_on_its_path() {
        let watches = Watches::default();
        let calls = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&calls);
        let sink: Sink = Arc::new(move |_| _ = counter.fetch_add(1, Ordering::SeqCst));
        for id in [1, 2] {
            let reg = WatchReg::Persistent {
                path: "/q".into(),
                recursive: true,
                id,
                sink: Arc::clone(&sink),
            };
            watches.answered(reg, Code::OK);
        }
        let child = one_shot(&watches, "/q", WatchKind::Child, Code::OK);
        assert!(!watches.remove_persistent("/q", 1), "another persistent watch is left");
        assert!(!watches.remove_persistent("/q", 2), "a child watch is left");
        let reg = WatchReg::Persistent {
            path: "/q".into(),
            recursive: true,
            id: 3,
            sink,
        };
        watches.answered(reg, Code::OK);
        watches.dispatch(&event(EventType::NodeChildrenChanged, "/q"));
        assert!(child.is_open());
        assert!(watches.remove_persistent("/q", 3));
        assert!(!watches.remove_persistent("/q", 3), "already gone");
    }

    #[test]
    fn descendants_are_strictly_below() {
        assert!(is_below("/q", "/q/a"));
        assert!(is_below("/", "/a"));
        assert!(!is_below("/q", "/q"));
        assert!(!is_below("/q", "/qq/a"));
        assert!(!is_below("/", "/"));
    }
}
