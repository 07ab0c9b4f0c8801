//! Why a connection could not be made: each server of the connect string
//! with the cause seen when it was last tried ([`ServerFailure`]), as
//! [`Error::Unreachable`](crate::Error::Unreachable) carries them.

use std::fmt;

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
    /// A connection was opened, but no session was established over it: the
    /// server answered, but is not serving sessions (starting or restarting,
    /// or without a quorum), is stalled, is a secure port reached without
    /// TLS, or is not ZooKeeper.
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

    /// Whether the server accepted the connection, and the session (or TLS)
    /// failed over it, rather than nothing listening or no connection opened.
    ///
    /// ```
    /// use zk_queue::client::ConnectCause;
    /// assert!(ConnectCause::NoSession.connected());
    /// assert!(!ConnectCause::Refused.connected());
    /// ```
    pub fn connected(&self) -> bool {
        match self {
            ConnectCause::NoSession => true,
            #[cfg(feature = "tls")]
            ConnectCause::Tls(_) => true,
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
            ConnectCause::NoSession => f.write_str(
                "connected, but no session was established (the server is not serving yet or has no quorum, \
                 is stalled, is a secure port reached without tls, or is not zookeeper)",
            ),
            ConnectCause::Other(text) => f.write_str(text),
            #[cfg(feature = "tls")]
            ConnectCause::Tls(e) => write!(f, "tls: {e}"),
        }
    }
}
