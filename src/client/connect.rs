//! Why a connection could not be made: each server of the connect string
//! with the cause seen when trying it ([`ServerFailure`]), found by a probe
//! that runs beside a connection attempt once it takes longer than usual.

use std::fmt;
use std::io::ErrorKind;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

/// The port a server listens on when the connect string names none.
const DEFAULT_PORT: u16 = 2181;

/// The longest one probe of one address may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(1);

/// The pause between two rounds of probes.
const PROBE_PAUSE: Duration = Duration::from_millis(500);

/// Why one server of the connect string could not be used, as seen when it
/// was last tried. Part of [`Error::Unreachable`](crate::Error::Unreachable).
///
/// ```
/// use zk_queue::{ConnectCause, ServerFailure};
/// let failure = ServerFailure::new("127.0.0.1:2181", ConnectCause::Refused);
/// assert_eq!(failure.to_string(), "127.0.0.1:2181: connection refused");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerFailure {
    address: String,
    cause: ConnectCause,
}

impl ServerFailure {
    /// The failure of the server at `address` (`host:port`, as written in
    /// the connect string) for `cause`.
    ///
    /// ```
    /// use zk_queue::{ConnectCause, ServerFailure};
    /// let failure = ServerFailure::new("zk1:2181", ConnectCause::NameNotResolved);
    /// assert_eq!(failure.address(), "zk1:2181");
    /// ```
    pub fn new(address: impl Into<String>, cause: ConnectCause) -> ServerFailure {
        ServerFailure {
            address: address.into(),
            cause,
        }
    }

    /// The server's address as written in the connect string.
    ///
    /// ```
    /// use zk_queue::{ConnectCause, ServerFailure};
    /// assert_eq!(ServerFailure::new("zk1:2181", ConnectCause::TimedOut).address(), "zk1:2181");
    /// ```
    pub fn address(&self) -> &str {
        &self.address
    }

    /// Why it could not be used.
    ///
    /// ```
    /// use zk_queue::{ConnectCause, ServerFailure};
    /// let failure = ServerFailure::new("zk1:2181", ConnectCause::Refused);
    /// assert_eq!(failure.cause(), &ConnectCause::Refused);
    /// ```
    pub fn cause(&self) -> &ConnectCause {
        &self.cause
    }
}

impl fmt::Display for ServerFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.address, self.cause)
    }
}

/// Why a server could not be used.
///
/// ```
/// use zk_queue::ConnectCause;
/// assert_eq!(ConnectCause::NameNotResolved.to_string(), "name not resolved");
/// ```
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConnectCause {
    /// The host name did not resolve to an address.
    NameNotResolved,
    /// Nothing listens on the port: the connection was refused.
    Refused,
    /// A connection could not be opened in time (a host that drops packets,
    /// or a name that took too long to resolve).
    TimedOut,
    /// A connection was opened, but no session was established over it: a
    /// server that is stalled, not serving (no quorum) or not ZooKeeper.
    NoSession,
    /// Another I/O error, as its text.
    Other(String),
}

impl fmt::Display for ConnectCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConnectCause::NameNotResolved => f.write_str("name not resolved"),
            ConnectCause::Refused => f.write_str("connection refused"),
            ConnectCause::TimedOut => f.write_str("connection timed out"),
            ConnectCause::NoSession => f.write_str("connected, but no session was established"),
            ConnectCause::Other(text) => f.write_str(text),
        }
    }
}

/// Probes the servers of a connect string on a thread of its own, round
/// after round, until dropped; [`failures`](Probe::failures) says what the
/// latest round saw.
pub(super) struct Probe {
    servers: Vec<String>,
    seen: Arc<Mutex<Vec<Option<ConnectCause>>>>,
    stop: Arc<AtomicBool>,
}

impl Probe {
    /// Starts probing the servers of `connect_string`.
    pub(super) fn start(connect_string: &str) -> Probe {
        let servers = servers(connect_string);
        let seen = Arc::new(Mutex::new(vec![None; servers.len()]));
        let stop = Arc::new(AtomicBool::new(false));
        let (list, record, stopped) = (servers.clone(), Arc::clone(&seen), Arc::clone(&stop));
        let spawned = std::thread::Builder::new()
            .name("zk-queue-probe".into())
            .spawn(move || {
                while !stopped.load(Ordering::Acquire) {
                    for (i, server) in list.iter().enumerate() {
                        let cause = probe(server);
                        record.lock()[i] = Some(cause);
                    }
                    std::thread::sleep(PROBE_PAUSE);
                }
            });
        if let Err(e) = spawned {
            log::debug!("cannot start the connection probe: {e}");
        }
        Probe { servers, seen, stop }
    }

    /// Each server of `connect_string` when none could be probed in time:
    /// every one counts as timed out.
    pub(super) fn unprobed(connect_string: &str) -> Vec<ServerFailure> {
        servers(connect_string)
            .into_iter()
            .map(|server| ServerFailure::new(server, ConnectCause::TimedOut))
            .collect()
    }

    /// Each server with the cause last seen (a server not probed yet, its
    /// name still resolving say, counts as timed out).
    pub(super) fn failures(&self) -> Vec<ServerFailure> {
        let seen = self.seen.lock();
        self.servers
            .iter()
            .zip(seen.iter())
            .map(|(server, cause)| ServerFailure::new(server.clone(), cause.clone().unwrap_or(ConnectCause::TimedOut)))
            .collect()
    }
}

impl Drop for Probe {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
    }
}

/// The `host:port` entries of a connect string
/// (`[scheme://]host[:port][,...][/chroot]`), as written.
fn servers(connect_string: &str) -> Vec<String> {
    connect_string
        .split(',')
        .map(|entry| {
            let entry = entry.split_once("://").map_or(entry, |(_, rest)| rest);
            entry.split('/').next().unwrap_or_default().trim().to_owned()
        })
        .filter(|entry| !entry.is_empty())
        .collect()
}

/// The host and port of a `host[:port]` entry (`[v6]:port` for IPv6).
fn host_port(server: &str) -> (&str, u16) {
    let (host, port) = match server.rsplit_once(':') {
        Some((host, port)) if !host.is_empty() && (host.ends_with(']') || !host.contains(':')) => {
            (host, port.parse().ok())
        }
        _ => (server, None),
    };
    (
        host.trim_start_matches('[').trim_end_matches(']'),
        port.unwrap_or(DEFAULT_PORT),
    )
}

/// Tries `server` once: resolves its name and opens a connection to each
/// address until one opens.
fn probe(server: &str) -> ConnectCause {
    let addresses: Vec<SocketAddr> = match host_port(server).to_socket_addrs() {
        Ok(addresses) => addresses.collect(),
        Err(_) => return ConnectCause::NameNotResolved,
    };
    let mut cause = ConnectCause::NameNotResolved;
    for address in addresses {
        cause = match TcpStream::connect_timeout(&address, PROBE_TIMEOUT) {
            Ok(_) => return ConnectCause::NoSession,
            Err(e) => match e.kind() {
                ErrorKind::ConnectionRefused => ConnectCause::Refused,
                ErrorKind::TimedOut | ErrorKind::WouldBlock => ConnectCause::TimedOut,
                _ => ConnectCause::Other(e.to_string()),
            },
        };
    }
    cause
}

#[cfg(test)]
mod tests {
    use std::net::TcpListener;

    use super::*;

    #[test]
    fn servers_are_read_as_written_without_scheme_or_chroot() {
        assert_eq!(
            servers("a:1,tcp://b:2,[::1]:3/app/x"),
            ["a:1", "b:2", "[::1]:3"].map(String::from)
        );
        assert_eq!(servers("zk"), ["zk"]);
    }

    #[test]
    fn host_and_port_default_to_the_zookeeper_port() {
        assert_eq!(host_port("zk"), ("zk", 2181));
        assert_eq!(host_port("zk:2182"), ("zk", 2182));
        assert_eq!(host_port("[::1]:2183"), ("::1", 2183));
        assert_eq!(host_port("::1"), ("::1", 2181));
    }

    #[test]
    fn a_closed_port_is_refused_and_an_open_one_gives_no_session() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let open = listener.local_addr().unwrap().to_string();
        assert_eq!(probe(&open), ConnectCause::NoSession);
        drop(listener);
        assert_eq!(probe(&open), ConnectCause::Refused);
    }

    #[test]
    fn an_unknown_name_does_not_resolve() {
        assert_eq!(probe("no-such-host.invalid:2181"), ConnectCause::NameNotResolved);
    }
}
