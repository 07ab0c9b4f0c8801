//! [`Lead`]: a mutex waiter's watch on a node ahead of it in the line,
//! kept from one look at the line to the next while that node is still the
//! one it waits for, with the news of every connection change since it
//! was sent. Its request is not awaited: its answer comes before any event
//! it could miss, and one that finds no node counts as the node's deletion.
//!
//! A mutex waiter holds on its predecessor's deletion with no listing only
//! if that predecessor was the first in the line at its last listing (see
//! `Driver::holds_once_deleted`). So that it is, when its turn comes, a
//! waiter also watches a node further ahead (`Driver::watch_ahead`):
//! - behind the second node, the first: that one's deletion (an event, no
//!   listing) makes the second the first, as a listing would show (no node
//!   can come before a node again);
//! - further back, the node two before its predecessor: when that one
//!   goes (most often it released), the waiter looks at the line again, a
//!   hand-off or two before its turn, and finds itself behind the second.
//!
//! The watch on its predecessor is kept across those looks, so in a busy
//! line each hand-off is the deletion event alone. A deletion wakes three
//! waiters at most, never the herd: the one right behind the node (its
//! turn), the next (now behind the first, with no request) and the one
//! after that (a listing, off the hand-off's path).
//!
//! A lead is kept only while nothing may have been missed: it records every
//! connection change from before its watch was sent (a reattached
//! session's watches may fire in any order), and the attempt drops it when
//! it sets the watch on its own node again (that watch must be set before
//! the lead's, so that it tells of its own node's deletion first).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::client::{DataWatch, Opts, Session, WakerGuard, ZkClient};
use crate::sync::Latch;

/// A watch on a node ahead of a waiter: the one it waits for, or one
/// further ahead.
pub(super) struct Lead {
    /// The node watched.
    path: String,
    session: Session,
    /// Opened when the watch fires, or the session ends.
    fired: Latch,
    /// Set when the node's deletion fired it (also when the answer found
    /// no node).
    deleted: Arc<AtomicBool>,
    /// Opened on every connection change since before the watch was sent.
    changed: Latch,
    _states: WakerGuard,
    _watch: DataWatch,
}

impl Lead {
    /// Watches the node at `path` in `session`, without waiting for the
    /// answer: a node deleted since the listing that named it counts as
    /// deleted now; a request that fails fires it as a change would.
    pub(super) fn watch(client: &ZkClient, path: &str, session: Session, opts: Opts<'_>) -> Lead {
        let changed = Latch::new();
        let states = client.wake_on_state_change(&changed);
        let fired = Latch::new();
        let deleted = Arc::new(AtomicBool::new(false));
        let watch = client.watch_deletion_unawaited(path, &fired, &deleted, opts);
        Lead {
            path: path.to_owned(),
            session,
            fired,
            deleted,
            changed,
            _states: states,
            _watch: watch,
        }
    }

    /// Whether it watches `path` in `session`.
    pub(super) fn watches(&self, path: &str, session: Session) -> bool {
        self.path == path && self.session == session
    }

    /// Opens `latch` when the watch fires or the connection changes.
    pub(super) fn wakes(&self, latch: &Latch) {
        self.fired.forward_to(latch);
        self.changed.forward_to(latch);
    }

    /// Whether the node's deletion fired the watch, with no connection
    /// change since it was sent.
    pub(super) fn deleted_in_view(&self) -> bool {
        self.fired.is_open() && self.deleted.load(Ordering::SeqCst) && !self.changed.is_open()
    }

    /// Whether the watch fired (or the connection changed): the node is
    /// no longer known to be there.
    pub(super) fn fired(&self) -> bool {
        self.fired.is_open() || self.changed.is_open()
    }

    /// Whether it can serve the next look: it has not fired, and the
    /// connection has not changed.
    pub(super) fn is_fresh(&self) -> bool {
        !self.fired.is_open() && !self.changed.is_open()
    }
}
