//! What a selector's handle and its threads share: the selector's
//! [`SelectorState`], the current term's loss latch, the counts the handle
//! reports, and the signals that wake the selector's thread.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use parking_lot::{Condvar, Mutex as Lock};

use crate::client::ZkClient;
use crate::recipes::Mutex;
use crate::sync::Latch;

/// Where a [`LeaderSelector`](super::LeaderSelector) stands, as
/// [`state`](super::LeaderSelector::state) reports it.
///
/// ```
/// use zk_queue::recipes::{SelectorState, TermEnd};
/// let state = SelectorState::Left(TermEnd::Lost);
/// assert!(!state.is_leading());
/// assert!(state.has_left());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SelectorState {
    /// In line for leadership: its node is in the line, or being created
    /// (also while the server is out of reach; it keeps trying).
    Queued,
    /// It leads: its closure runs and leadership is certain.
    Leading,
    /// Its closure still runs, but leadership is lost or in doubt (the
    /// connection dropped, its node went) or `close` asked it to stop: the
    /// closure should return as soon as its
    /// [context](super::LeaderContext) says so. Another participant may
    /// lead meanwhile.
    Overrunning,
    /// Out of the election after a term ended this way, without automatic
    /// requeueing ([`auto_requeue(false)`](super::LeaderSelectorBuilder::auto_requeue)):
    /// it leads no more until [`requeue`](super::LeaderSelector::requeue).
    Left(TermEnd),
    /// Closed: it leads no more.
    Closed,
}

impl SelectorState {
    /// Whether it leads now ([`Leading`](Self::Leading)).
    ///
    /// ```
    /// assert!(zk_queue::recipes::SelectorState::Leading.is_leading());
    /// ```
    pub fn is_leading(&self) -> bool {
        matches!(self, SelectorState::Leading)
    }

    /// Whether it is out of the election for good or until requeued
    /// ([`Left`](Self::Left) or [`Closed`](Self::Closed)).
    ///
    /// ```
    /// assert!(zk_queue::recipes::SelectorState::Closed.has_left());
    /// ```
    pub fn has_left(&self) -> bool {
        matches!(self, SelectorState::Left(_) | SelectorState::Closed)
    }
}

/// How a term of leadership ended.
///
/// ```
/// use zk_queue::recipes::TermEnd;
/// assert_ne!(TermEnd::Returned, TermEnd::Panicked);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TermEnd {
    /// The closure returned while it still led.
    Returned,
    /// The closure returned after leadership was lost or in doubt (or
    /// `close` asked it to stop).
    Lost,
    /// The closure panicked; leadership was released.
    Panicked,
}

/// The counts a selector keeps.
#[derive(Default)]
struct Status {
    state: Option<SelectorState>,
    /// The current term's loss latch, while a term runs.
    term: Option<Latch>,
    terms: u64,
    panics: u64,
    last_panic: Option<String>,
    /// `requeue` was asked for since the thread last looked.
    requeue: bool,
}

pub(super) struct Shared {
    pub(super) client: ZkClient,
    pub(super) path: String,
    pub(super) id: String,
    pub(super) auto_requeue: bool,
    pub(super) overrun_grace: Duration,
    /// The lock the election is: its waits give up once `stop` opens.
    pub(super) mutex: Mutex,
    /// Opened by `close`: the selector's thread stops waiting and ends.
    pub(super) stop: Latch,
    /// Set by the closure ([`LeaderContext::close_after_term`](super::LeaderContext::close_after_term)):
    /// the selector closes once the term ends.
    close_after_term: AtomicBool,
    status: Lock<Status>,
    changed: Condvar,
}

impl Shared {
    pub(super) fn new(
        client: ZkClient,
        path: String,
        id: String,
        auto_requeue: bool,
        overrun_grace: Duration,
        mutex: Mutex,
        stop: Latch,
    ) -> Shared {
        Shared {
            client,
            path,
            id,
            auto_requeue,
            overrun_grace,
            mutex,
            stop,
            close_after_term: AtomicBool::new(false),
            status: Lock::new(Status::default()),
            changed: Condvar::new(),
        }
    }

    pub(super) fn state(&self) -> SelectorState {
        self.status.lock().state.unwrap_or(SelectorState::Queued)
    }

    /// Records `state`, unless the selector is closed; logs a change.
    pub(super) fn set_state(&self, state: SelectorState) {
        let mut status = self.status.lock();
        let was = status.state;
        if was == Some(SelectorState::Closed) || was == Some(state) {
            return;
        }
        status.state = Some(state);
        self.changed.notify_all();
        drop(status);
        let level = match state {
            // Leaving after a term that simply returned is what a selector
            // without auto-requeue is for; after a loss or a panic it is news.
            SelectorState::Left(TermEnd::Returned) => log::Level::Info,
            SelectorState::Left(_) => log::Level::Warn,
            _ => log::Level::Info,
        };
        log::log!(level, "leader selector {} ({}): {state:?}", self.path, self.id);
    }

    /// Records that the selector is closed, for good.
    pub(super) fn set_closed(&self) {
        let mut status = self.status.lock();
        status.state = Some(SelectorState::Closed);
        status.term = None;
        self.changed.notify_all();
    }

    /// Whether it leads now: in a term whose loss latch is shut, on a
    /// connected client whose session the server cannot have expired yet.
    pub(super) fn leads(&self) -> bool {
        let status = self.status.lock();
        status.state == Some(SelectorState::Leading)
            && status.term.as_ref().is_some_and(|term| !term.is_open())
            && self.client.is_vouched()
    }

    /// A term begins with this loss latch.
    pub(super) fn begin_term(&self, term: &Latch) {
        let mut status = self.status.lock();
        status.terms += 1;
        status.term = Some(term.clone());
        drop(status);
        self.set_state(SelectorState::Leading);
    }

    /// Asks the selector to close once the current term ends.
    pub(super) fn close_after_term(&self) {
        self.close_after_term.store(true, Ordering::SeqCst);
    }

    /// Whether the selector is to close now that a term ended.
    pub(super) fn closes_after_term(&self) -> bool {
        self.close_after_term.load(Ordering::SeqCst)
    }

    /// The term is over.
    pub(super) fn end_term(&self) {
        self.status.lock().term = None;
    }

    /// Marks a `Leading` selector as overrunning its loss.
    pub(super) fn overrunning(&self) {
        if self.state() == SelectorState::Leading {
            self.set_state(SelectorState::Overrunning);
        }
    }

    pub(super) fn record_panic(&self, message: String) {
        let mut status = self.status.lock();
        status.panics += 1;
        status.last_panic = Some(message);
    }

    pub(super) fn terms(&self) -> u64 {
        self.status.lock().terms
    }

    pub(super) fn panics(&self) -> u64 {
        self.status.lock().panics
    }

    pub(super) fn last_panic(&self) -> Option<String> {
        self.status.lock().last_panic.clone()
    }

    /// Asks a selector that left the election to join it again; false if
    /// it is in it or closed.
    pub(super) fn ask_requeue(&self) -> bool {
        let mut status = self.status.lock();
        if !matches!(status.state, Some(SelectorState::Left(_))) {
            return false;
        }
        status.requeue = true;
        self.changed.notify_all();
        true
    }

    /// Waits (on the selector's thread, after it left) until a requeue is
    /// asked for (`true`) or the selector closes (`false`).
    pub(super) fn wait_for_requeue(&self) -> bool {
        let mut status = self.status.lock();
        loop {
            if self.stop.is_open() {
                return false;
            }
            if std::mem::take(&mut status.requeue) {
                return true;
            }
            self.changed.wait(&mut status);
        }
    }

    /// Stops the selector: its waits give up, its closure is told (the
    /// term's latch follows `stop`), and a thread waiting for a requeue
    /// wakes.
    pub(super) fn stop(&self) {
        self.stop.open();
        let _status = self.status.lock();
        self.changed.notify_all();
    }
}
