//! The servers of a connect string, opening a TCP connection to one, and
//! why a connection could not be made: each server with the cause seen when
//! it was last tried ([`ServerFailure`]).

use std::fmt;
use std::io::ErrorKind;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

/// The port a server listens on when the connect string names none.
const DEFAULT_PORT: u16 = 2181;

/// Why one server of the connect string could not be used, as seen when it
/// was last tried. Part of [`Error::Unreachable`](crate::Error::Unreachable).
///
/// ```
/// use zk_queue::{client::{ConnectCause, ServerFailure}};
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
    /// use zk_queue::{client::{ConnectCause, ServerFailure}};
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
    /// use zk_queue::{client::{ConnectCause, ServerFailure}};
    /// assert_eq!(ServerFailure::new("zk1:2181", ConnectCause::TimedOut).address(), "zk1:2181");
    /// ```
    pub fn address(&self) -> &str {
        &self.address
    }

    /// Why it could not be used.
    ///
    /// ```
    /// use zk_queue::{client::{ConnectCause, ServerFailure}};
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
/// use zk_queue::client::ConnectCause;
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
    /// A connection was opened, but TLS could not be used over it: the
    /// server's certificate was refused, or the server does not speak TLS.
    #[cfg(feature = "tls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
    Tls(super::TlsError),
}

impl ConnectCause {
    /// Whether trying again soon is bound to fail the same way: nothing
    /// listens, the name does not resolve, or the server's certificate was
    /// refused. A server that closed the connection at the TLS handshake is
    /// no such failure: a plain port does, but so does a proxy in front of
    /// a server that is down.
    pub(crate) fn is_definite(&self) -> bool {
        match self {
            ConnectCause::Refused | ConnectCause::NameNotResolved => true,
            #[cfg(feature = "tls")]
            ConnectCause::Tls(e) => e.kind() != super::TlsErrorKind::NotTls,
            _ => false,
        }
    }
}

impl fmt::Display for ConnectCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConnectCause::NameNotResolved => f.write_str("name not resolved"),
            ConnectCause::Refused => f.write_str("connection refused"),
            ConnectCause::TimedOut => f.write_str("connection timed out"),
            ConnectCause::NoSession => f.write_str("connected, but no session was established"),
            ConnectCause::Other(text) => f.write_str(text),
            #[cfg(feature = "tls")]
            ConnectCause::Tls(e) => write!(f, "tls: {e}"),
        }
    }
}

/// The `host:port` entries of a connect string
/// (`[scheme://]host[:port][,...][/chroot]`), as written.
pub(super) fn servers(connect_string: &str) -> Vec<String> {
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
pub(super) fn host_port(server: &str) -> (&str, u16) {
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

/// The address of `server` as tried: `host:port`, with the port assumed
/// when the connect string names none.
pub(super) fn with_port(server: &str) -> String {
    let (host, port) = host_port(server);
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// Opens a TCP connection to `server` (each address its name resolves to,
/// in turn), each attempt within `timeout`.
pub(super) fn dial(server: &str, timeout: Duration) -> Result<TcpStream, ConnectCause> {
    let addresses: Vec<SocketAddr> = match host_port(server).to_socket_addrs() {
        Ok(addresses) => addresses.collect(),
        Err(_) => return Err(ConnectCause::NameNotResolved),
    };
    let mut cause = ConnectCause::NameNotResolved;
    for address in addresses {
        match TcpStream::connect_timeout(&address, timeout.max(Duration::from_millis(1))) {
            Ok(stream) => return Ok(stream),
            Err(e) => cause = cause_of(&e),
        }
    }
    Err(cause)
}

/// The cause an I/O error of a connection attempt stands for.
pub(super) fn cause_of(e: &std::io::Error) -> ConnectCause {
    match e.kind() {
        ErrorKind::ConnectionRefused => ConnectCause::Refused,
        ErrorKind::TimedOut | ErrorKind::WouldBlock => ConnectCause::TimedOut,
        _ => ConnectCause::Other(e.to_string()),
    }
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
    fn a_closed_port_is_refused_and_an_open_one_connects() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let open = listener.local_addr().unwrap().to_string();
        assert!(dial(&open, Duration::from_secs(1)).is_ok());
        drop(listener);
        assert_eq!(dial(&open, Duration::from_secs(1)).unwrap_err(), ConnectCause::Refused);
    }

    #[test]
    fn an_unknown_name_does_not_resolve() {
        assert_eq!(
            dial("no-such-host.invalid:2181", Duration::from_secs(1)).unwrap_err(),
            ConnectCause::NameNotResolved
        );
    }

    #[test]
    fn the_address_tried_names_the_port_assumed() {
        assert_eq!(with_port("127.0.0.1"), "127.0.0.1:2181");
        assert_eq!(with_port("zk:2182"), "zk:2182");
        assert_eq!(with_port("::1"), "[::1]:2181");
    }
}
