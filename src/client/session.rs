//! Opening sessions and following their state on a background thread.

use std::pin::pin;
use std::sync::Weak;
use std::time::Duration;

use futures::channel::oneshot;
use futures::future::{select, Either};
use zookeeper_client::{SessionState, StateWatcher};

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
    /// The connection dropped; the session may still be alive. Requests wait
    /// for a reconnection (each within its deadline).
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

/// Opens a session with the configured timeouts and authentication, within
/// the connection timeout.
pub(crate) fn open(config: &Config, auth: &[(String, Vec<u8>)]) -> Result<zookeeper_client::Client> {
    let mut connector = zookeeper_client::Client::connector()
        .with_session_timeout(config.session_timeout)
        .with_connection_timeout(config.connection_timeout);
    for (scheme, bytes) in auth {
        connector = connector.with_auth(scheme, bytes);
    }
    let connect = connector.connect(&config.connect_string);
    let timer = async_io::Timer::after(config.connection_timeout);
    match async_io::block_on(select(pin!(connect), timer)) {
        Either::Left((Ok(client), _)) => Ok(client),
        Either::Left((Err(zookeeper_client::Error::BadArguments(what)), _)) => Err(Error::InvalidArgument(format!(
            "connect string {:?}: {what}",
            config.connect_string
        ))),
        Either::Left((Err(err), _)) => Err(Error::from_zk(err, "/")),
        Either::Right(_) => Err(Error::Timeout {
            operation: "connect",
            after: config.connection_timeout,
        }),
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
