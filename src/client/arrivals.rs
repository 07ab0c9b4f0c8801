//! [`Arrivals`]: the names of the children created under a node since a
//! consumer last listed it, as a persistent recursive watch reports them, so
//! the consumer keeps its ordered view current without listing the node
//! again.
//!
//! The watch's owner only records names, on the reader thread. ZooKeeper
//! drops the events of a connection loss (ZOOKEEPER-4698), so a
//! disconnection marks the view broken, and the session's end ends it: the
//! consumer then lists again (and registers again), as it would without
//! arrivals.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::session::{Notice, Registration, Sink, WatchReg};
use super::wire::{Code, EventType, Request};
use super::{Opts, ZkClient};
use crate::error::{Error, Result};
use crate::path;
use crate::sync::Latch;

/// The most names kept between two takes: more, and the view breaks (the
/// consumer lists again), so a consumer busy with a long pass does not keep
/// the name of every item created meanwhile.
const MAX_NAMES: usize = 4_096;

/// Children created under one node since [`Arrivals::restart`].
pub(crate) struct Arrivals {
    shared: Arc<Shared>,
    /// Removes the watch when done.
    _registration: Registration,
}

#[derive(Default)]
struct Shared {
    names: Mutex<Vec<String>>,
    /// An event may have been missed since the last restart, or the node
    /// itself was deleted.
    broken: AtomicBool,
    /// The watch is gone with its session or client.
    ended: AtomicBool,
    /// Opened when a name arrives or the view breaks.
    wake: Mutex<Option<Latch>>,
    /// Children deleted since the watch began, by anyone.
    deleted: AtomicU64,
}

impl Shared {
    /// Records the name of a child created; too many names not taken break
    /// the view instead.
    fn arrived(&self, name: &str) {
        let mut names = self.names.lock();
        if names.len() >= MAX_NAMES {
            names.clear();
            self.broken.store(true, Ordering::SeqCst);
        } else if !self.broken.load(Ordering::SeqCst) {
            names.push(name.to_owned());
        }
        drop(names);
        self.wake();
    }

    fn wake(&self) {
        if let Some(latch) = &*self.wake.lock() {
            latch.open();
        }
    }
}

impl Arrivals {
    /// Forgets what arrived so far: the caller is about to list the node.
    pub(crate) fn restart(&self) {
        self.shared.broken.store(false, Ordering::SeqCst);
        self.shared.names.lock().clear();
    }

    /// The names that arrived since the last call or restart, in the order
    /// the server created them; `None` if one may be missing (list again).
    pub(crate) fn take(&self) -> Option<Vec<String>> {
        let names = std::mem::take(&mut *self.shared.names.lock());
        (!self.is_broken()).then_some(names)
    }

    /// Whether an event may have been missed since the last restart.
    pub(crate) fn is_broken(&self) -> bool {
        self.shared.broken.load(Ordering::SeqCst) || self.has_ended()
    }

    /// Opens `latch` when the next name arrives, or when the view breaks or
    /// ends (in place of the latch given before).
    pub(crate) fn wake_on_arrival(&self, latch: &Latch) {
        *self.shared.wake.lock() = Some(latch.clone());
        if !self.shared.names.lock().is_empty() || self.is_broken() {
            latch.open();
        }
    }

    /// How many children were deleted since the watch began (by this
    /// client or any other). ZooKeeper sends a client the event of its own
    /// delete before the delete's reply.
    pub(crate) fn deleted(&self) -> u64 {
        self.shared.deleted.load(Ordering::SeqCst)
    }

    /// Whether the watch ended with its session: register a new one.
    pub(crate) fn has_ended(&self) -> bool {
        self.shared.ended.load(Ordering::SeqCst)
    }
}

impl ZkClient {
    /// Watches `path` for children created under it (a persistent recursive
    /// watch; ZooKeeper 3.6 and later). Deleting the [`Arrivals`] ends the
    /// watcher; the server keeps the watch until the session ends, or until
    /// the client removes it when no other watcher of its is left on `path`.
    ///
    /// A client built [without persistent
    /// watches](super::ZkClientBuilder::without_persistent_watches) refuses
    /// it without sending anything, with the error an older server answers.
    pub(crate) fn watch_arrivals(&self, path: &str) -> Result<Arrivals> {
        path::validate(path)?;
        if !self.shared.config.persistent_watches {
            return Err(Error::from_code(Code::UNIMPLEMENTED, path));
        }
        let shared = Arc::new(Shared::default());
        let recorder = Arc::clone(&shared);
        let parent = path.to_owned();
        // Runs on the reader thread: it only records names and flags.
        let sink: Sink = Arc::new(move |notice| match notice {
            Notice::Event(event) => match event.kind {
                EventType::NodeCreated => {
                    if let Some(name) = child_of(&parent, &event.path) {
                        recorder.arrived(name);
                    }
                }
                EventType::NodeDeleted if child_of(&parent, &event.path).is_some() => {
                    recorder.deleted.fetch_add(1, Ordering::SeqCst);
                }
                // The node itself deleted (by an operator, or reaped as a
                // container): listing finds out and creates it again.
                EventType::NodeDeleted if event.path == parent => {
                    recorder.broken.store(true, Ordering::SeqCst);
                    recorder.wake();
                }
                _ => {}
            },
            Notice::Disconnected => {
                recorder.broken.store(true, Ordering::SeqCst);
                recorder.wake();
            }
            Notice::Ended => {
                recorder.broken.store(true, Ordering::SeqCst);
                recorder.ended.store(true, Ordering::SeqCst);
                recorder.wake();
            }
        });
        let watches = self.shared.link().watches();
        let mut id = 0;
        let request = || {
            id = watches.next_id();
            let watch = WatchReg::Persistent {
                path: path.to_owned(),
                recursive: true,
                id,
                sink: Arc::clone(&sink),
            };
            (Request::AddWatch { path, recursive: true }, Some(watch))
        };
        self.call("add_watch", path, Opts::new(), request, |_| Ok(()))?;
        Ok(Arrivals {
            shared,
            _registration: Registration::new(self.shared.link_weak(), path, id, true),
        })
    }
}

/// The name of `child` if it is a child (not a deeper descendant) of `parent`.
fn child_of<'a>(parent: &str, child: &'a str) -> Option<&'a str> {
    let rest = child.strip_prefix(parent)?;
    let name = if parent == "/" { rest } else { rest.strip_prefix('/')? };
    (!name.is_empty() && !name.contains('/')).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::child_of;

    #[test]
    fn only_direct_children_count_as_arrivals() {
        assert_eq!(child_of("/q", "/q/queue-1"), Some("queue-1"));
        assert_eq!(child_of("/", "/queue-1"), Some("queue-1"));
        assert_eq!(child_of("/q", "/q"), None);
        assert_eq!(child_of("/q", "/q/a/b"), None);
        assert_eq!(child_of("/q", "/qq/a"), None);
    }
}
