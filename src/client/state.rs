//! Connection states, and the [`Hub`] that tells them to listeners and
//! wakes blocked callers.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use parking_lot::Mutex;

use super::session::LinkEvent;
use crate::metrics::ClientMetrics;
use crate::sync::Latch;

/// The state of a client's connection to the ensemble, as Curator names it.
///
/// ```
/// use zk_queue::ConnectionState;
/// assert!(ConnectionState::Reconnected.is_connected());
/// assert!(!ConnectionState::Suspended.is_connected());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ConnectionState {
    /// The first session is established.
    Connected,
    /// The connection dropped; the session may still be alive. The client
    /// tries to reconnect at least once a second, for as long as it takes:
    /// only a server can say the session expired. Requests wait for a
    /// reconnection (each within its deadline).
    Suspended,
    /// Connected again: to the same session after [`Suspended`](Self::Suspended),
    /// or to a new session after [`Lost`](Self::Lost).
    Reconnected,
    /// The session expired: its ephemeral nodes and watches are gone. The
    /// client is opening a new session.
    Lost,
}

impl ConnectionState {
    /// Whether requests can be served in this state.
    ///
    /// ```
    /// use zk_queue::ConnectionState;
    /// assert!(ConnectionState::Reconnected.is_connected());
    /// assert!(!ConnectionState::Lost.is_connected());
    /// ```
    pub fn is_connected(self) -> bool {
        matches!(self, ConnectionState::Connected | ConnectionState::Reconnected)
    }
}

/// The latest state, its listeners and the latches of blocked callers; the
/// session thread reports to it, and it only signals.
pub(crate) struct Hub {
    /// The client's metrics (feature `metrics`; nothing without it).
    pub(crate) metrics: ClientMetrics,
    state: Mutex<ConnectionState>,
    /// Since when no server has been reachable: the first change to a
    /// state that is not connected, until the next connected one.
    down_since: Mutex<Option<Instant>>,
    listeners: Mutex<Vec<Sender<ConnectionState>>>,
    /// Latches of blocked callers, opened on every state change and on close.
    wakers: Mutex<Vec<(u64, Latch)>>,
    next_waker: AtomicU64,
}

impl Hub {
    pub(crate) fn new(metrics: ClientMetrics) -> Hub {
        Hub {
            metrics,
            state: Mutex::new(ConnectionState::Connected),
            down_since: Mutex::new(None),
            listeners: Mutex::new(Vec::new()),
            wakers: Mutex::new(Vec::new()),
            next_waker: AtomicU64::new(0),
        }
    }

    /// The latest state.
    pub(crate) fn state(&self) -> ConnectionState {
        *self.state.lock()
    }

    /// How long no server has been reachable, if none is now.
    pub(crate) fn down_for(&self) -> Option<Duration> {
        self.down_since.lock().map(|since| since.elapsed())
    }

    /// Tells what the session thread reports, as a connection state.
    pub(crate) fn report(&self, event: LinkEvent) {
        let state = match event {
            LinkEvent::Suspended => ConnectionState::Suspended,
            LinkEvent::Reconnected | LinkEvent::NewSession => ConnectionState::Reconnected,
            LinkEvent::Expired | LinkEvent::AuthFailed => ConnectionState::Lost,
        };
        match state {
            ConnectionState::Connected | ConnectionState::Reconnected => log::info!("zookeeper session {state:?}"),
            ConnectionState::Suspended | ConnectionState::Lost => log::warn!("zookeeper session {state:?}"),
        }
        {
            let mut down_since = self.down_since.lock();
            if state.is_connected() {
                *down_since = None;
            } else if down_since.is_none() {
                *down_since = Some(Instant::now());
            }
        }
        {
            // The new state shows, and the latches registered before it are
            // opened, under the latches' lock: a latch registered by a caller
            // that saw the new state is not opened by this change afterwards
            // (it would tell of a change that came before it). Opening a
            // latch only signals; it takes no lock of this hub.
            let wakers = self.wakers.lock();
            *self.state.lock() = state;
            for (_, latch) in wakers.iter() {
                latch.open();
            }
        }
        self.record(state);
        // Told after the latches are opened: a listener told of a state
        // knows every caller that waited on the change was woken.
        self.listeners.lock().retain(|tx| tx.send(state).is_ok());
    }

    /// Counts the change to `state` in the client's metrics.
    fn record(&self, state: ConnectionState) {
        self.metrics.connected(state.is_connected());
        match state {
            ConnectionState::Reconnected => self.metrics.reconnected(),
            ConnectionState::Lost => self.metrics.session_lost(),
            ConnectionState::Connected | ConnectionState::Suspended => {}
        }
    }

    /// A new listener, sent the current state first.
    pub(crate) fn listen(&self) -> Receiver<ConnectionState> {
        let (tx, rx) = crossbeam_channel::unbounded();
        let mut listeners = self.listeners.lock();
        let _ = tx.send(self.state());
        listeners.push(tx);
        rx
    }

    /// Registers a latch opened on every state change and on close; returns
    /// its id for [`forget`](Self::forget).
    pub(crate) fn wake_on_change(&self, latch: &Latch) -> u64 {
        let id = self.next_waker.fetch_add(1, Ordering::Relaxed);
        self.wakers.lock().push((id, latch.clone()));
        id
    }

    /// Removes a latch registered by [`wake_on_change`](Self::wake_on_change).
    pub(crate) fn forget(&self, id: u64) {
        self.wakers.lock().retain(|(i, _)| *i != id);
    }

    /// Disconnects every listener and wakes every blocked caller: the client closed.
    pub(crate) fn close(&self) {
        self.metrics.closed();
        self.listeners.lock().clear();
        self.wake_all();
    }

    fn wake_all(&self) {
        for (_, latch) in self.wakers.lock().iter() {
            latch.open();
        }
    }
}
