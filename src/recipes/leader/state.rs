//! What a latch's handle and its thread share: whether it leads, and in
//! which session; its node; the listener; and how the thread is woken and
//! stopped.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use super::Leadership;
use crate::client::{Acl, Session, ZkClient};
use crate::sync::Latch;

/// How soon a participant that leads, but whose session is not vouched for
/// (the server answered no fresh request lately), looks again.
const RECHECK: Duration = Duration::from_millis(50);

/// A listener of leadership changes.
pub(super) type Listener = Box<dyn Fn(Leadership) + Send + Sync>;

pub(super) struct Shared {
    pub(super) client: ZkClient,
    pub(super) path: String,
    pub(super) id: String,
    /// The ACL of the latch path (if created) and of this participant's nodes.
    pub(super) acl: Vec<Acl>,
    listener: Option<Listener>,
    state: Mutex<State>,
    changed: Condvar,
    /// Opened to wake the latch's thread (a new latch each round).
    pub(super) wake: Mutex<Latch>,
    stopping: AtomicBool,
}

#[derive(Default)]
struct State {
    /// The session in which this participant leads, if it does.
    leads_in: Option<Session>,
    /// The full path of its node, while it has one.
    node: Option<String>,
    /// The latch is closed.
    closed: bool,
}

impl Shared {
    pub(super) fn new(client: ZkClient, path: String, id: String, acl: Vec<Acl>, listener: Option<Listener>) -> Shared {
        Shared {
            client,
            path,
            id,
            acl,
            listener,
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
            wake: Mutex::new(Latch::new()),
            stopping: AtomicBool::new(false),
        }
    }

    /// Whether this participant leads now: its thread said so, in a session
    /// that is still live and that the server cannot have expired yet. A
    /// disconnection ends leadership at once, before the thread has seen
    /// it, and so does a silence near the session timeout.
    pub(super) fn leads(&self) -> bool {
        let state = self.state.lock();
        self.leads_locked(&state)
    }

    fn leads_locked(&self, state: &State) -> bool {
        !state.closed && state.leads_in.is_some_and(|session| self.client.holds_session(session))
    }

    /// Waits until this participant leads (`true`), the latch closes, or
    /// `deadline` passes (`false`). The latch's thread signals every change
    /// it records, also after a reconnection.
    pub(super) fn wait_to_lead(&self, deadline: Option<Instant>) -> std::result::Result<bool, Closed> {
        let mut state = self.state.lock();
        loop {
            if state.closed {
                return Err(Closed);
            }
            if self.leads_locked(&state) {
                return Ok(true);
            }
            if deadline.is_some_and(|at| Instant::now() >= at) {
                return Ok(false);
            }
            // Leading, but the server's answers to fresh requests are late:
            // no event tells when they come again, so look again shortly.
            let recheck = state.leads_in.is_some().then(|| Instant::now() + RECHECK);
            match deadline.into_iter().chain(recheck).min() {
                Some(at) => {
                    self.changed.wait_until(&mut state, at);
                }
                None => self.changed.wait(&mut state),
            }
        }
    }

    /// Records whether this participant leads (in `session`), and tells the
    /// listener (on the calling thread) if that changed.
    pub(super) fn set_leading(&self, session: Option<Session>) {
        let change = {
            let mut state = self.state.lock();
            let was = state.leads_in.is_some();
            state.leads_in = session;
            self.changed.notify_all();
            match (was, session.is_some()) {
                (false, true) => Some(Leadership::Gained),
                (true, false) => Some(Leadership::Lost),
                _ => None,
            }
        };
        if let Some(change) = change {
            log::info!("leader latch {} ({}): leadership {change:?}", self.path, self.id);
            self.tell(change);
        }
    }

    /// Calls the listener; a panic in it is logged, not spread.
    fn tell(&self, change: Leadership) {
        if let Some(listener) = &self.listener {
            if catch_unwind(AssertUnwindSafe(|| listener(change))).is_err() {
                log::error!(
                    "leader latch {}: the leadership listener panicked on {change:?}",
                    self.path
                );
            }
        }
    }

    pub(super) fn set_node(&self, node: Option<String>) {
        self.state.lock().node = node;
    }

    pub(super) fn node(&self) -> Option<String> {
        self.state.lock().node.clone()
    }

    /// Whether the latch is closing.
    pub(super) fn stopping(&self) -> bool {
        self.stopping.load(Ordering::Acquire)
    }

    /// Tells the thread to stop and wakes it; marks the latch closed for
    /// waiters. Returns whether it was open until now.
    pub(super) fn stop(&self) -> bool {
        let was_open = !self.stopping.swap(true, Ordering::AcqRel);
        self.wake.lock().open();
        let mut state = self.state.lock();
        state.closed = true;
        self.changed.notify_all();
        was_open
    }
}

/// The latch was closed while a caller waited.
pub(super) struct Closed;
