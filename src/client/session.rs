//! Opening sessions and following their state on a background thread.

use std::pin::pin;
use std::sync::Weak;
use std::time::{Duration, Instant};

use futures::channel::oneshot;
use futures::future::{select, Either};
use zookeeper_client::{SessionState, StateWatcher};

use super::connect::Probe;
use super::{Config, Shared};
use crate::error::{Error, Result};
use crate::sync::Backoff;

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

/// How long a connection may take before a probe looks at each server, so
/// that a failure can say why.
const PROBE_AFTER: Duration = Duration::from_millis(500);

/// Opens a session with the configured timeouts and authentication, within
/// the connection timeout. A failure to reach the ensemble says, for each
/// server, why ([`Error::Unreachable`]).
pub(crate) fn open(config: &Config, auth: &[(String, Vec<u8>)]) -> Result<zookeeper_client::Client> {
    let started = Instant::now();
    let deadline = started + config.connection_timeout;
    let mut connector = zookeeper_client::Client::connector()
        .with_session_timeout(config.session_timeout)
        .with_connection_timeout(config.connection_timeout);
    for (scheme, bytes) in auth {
        connector = connector.with_auth(scheme, bytes);
    }
    let mut connect = pin!(connector.connect(&config.connect_string));
    // Most connections are made at once: the probe starts only if not.
    let mut probe = None;
    let result = loop {
        let at = match probe {
            None => deadline.min(started + PROBE_AFTER),
            Some(_) => deadline,
        };
        match async_io::block_on(select(connect.as_mut(), async_io::Timer::at(at))) {
            Either::Left((result, _)) => break Some(result),
            Either::Right(_) if Instant::now() >= deadline => break None,
            Either::Right(_) => probe = Some(Probe::start(&config.connect_string)),
        }
    };
    let unreachable = |probe: Option<Probe>| Error::Unreachable {
        after: started.elapsed(),
        servers: probe.map_or_else(|| Probe::unprobed(&config.connect_string), |probe| probe.failures()),
    };
    match result {
        Some(Ok(client)) => Ok(client),
        Some(Err(zookeeper_client::Error::BadArguments(what))) => Err(Error::InvalidArgument(format!(
            "connect string {:?}: {what}",
            config.connect_string
        ))),
        Some(Err(
            err @ (zookeeper_client::Error::SessionExpired
            | zookeeper_client::Error::AuthFailed
            | zookeeper_client::Error::ClientClosed),
        )) => Err(Error::from_zk(err, "/")),
        Some(Err(err)) => {
            log::debug!("connecting to {}: {err}", config.connect_string);
            Err(unreachable(probe))
        }
        None => Err(unreachable(probe)),
    }
}

/// The session thread: maps session states to [`ConnectionState`]s and, after
/// an expiry, opens a new session. Ends when the client closes.
pub(crate) fn supervise(shared: Weak<Shared>, mut watcher: StateWatcher, mut close_rx: oneshot::Receiver<()>) {
    let mut suspended = false;
    loop {
        let state = match async_io::block_on(select(pin!(watcher.changed()), &mut close_rx)) {
            Either::Left((state, _)) => state,
            Either::Right(_) => return,
        };
        let Some(client) = shared.upgrade() else { return };
        match state {
            SessionState::Disconnected => {
                suspended = true;
                client.publish(ConnectionState::Suspended);
            }
            SessionState::SyncConnected | SessionState::ConnectedReadOnly => {
                let state = if suspended {
                    ConnectionState::Reconnected
                } else {
                    ConnectionState::Connected
                };
                suspended = false;
                client.publish(state);
            }
            SessionState::Expired => {
                client.mark_lost();
                client.publish(ConnectionState::Lost);
                drop(client);
                match renew(&shared, &mut close_rx) {
                    Some(new_watcher) => {
                        watcher = new_watcher;
                        suspended = false;
                    }
                    None => return,
                }
            }
            SessionState::AuthFailed => {
                log::error!("zookeeper authentication failed; the client stops reconnecting");
                client.publish(ConnectionState::Lost);
                return;
            }
            SessionState::Closed => return,
        }
    }
}

/// Opens a new session after an expiry, retrying with a capped backoff until
/// it succeeds or the client closes.
fn renew(shared: &Weak<Shared>, close_rx: &mut oneshot::Receiver<()>) -> Option<StateWatcher> {
    let mut backoff = Backoff::new(Duration::from_millis(50), Duration::from_secs(2));
    loop {
        let attempt = {
            let client = shared.upgrade()?;
            if client.is_closed() {
                return None;
            }
            let auth = client.auth();
            // Runs on this thread; a close wakes it through `close_rx` below only
            // between attempts, and each attempt is bounded by the connection timeout.
            open(&client.config, &auth)
        };
        match attempt {
            Ok(new_client) => {
                let client = shared.upgrade()?;
                let watcher = new_client.state_watcher();
                client.replace_session(new_client);
                client.publish(ConnectionState::Reconnected);
                return Some(watcher);
            }
            Err(err) => {
                let pause = backoff.pause();
                log::warn!("cannot open a new zookeeper session: {err}; retrying in {pause:?}");
                let timer = async_io::Timer::after(pause);
                if let Either::Right(_) = async_io::block_on(select(timer, &mut *close_rx)) {
                    return None;
                }
            }
        }
    }
}
