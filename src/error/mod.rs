//! The crate's error type, [`Error`], and the causes it carries that the
//! client finds: the server's error codes (`code.rs`), why a server could not
//! be used (`connect.rs`), a reply that could not be read (`decode.rs`), TLS
//! errors (`tls.rs`). The client re-exports those it makes public.

mod code;
mod connect;
mod decode;
#[cfg(feature = "tls")]
mod tls;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

pub(crate) use code::Code;
pub use connect::{ConnectCause, ServerFailure};
pub(crate) use decode::DecodeError;
#[cfg(feature = "tls")]
pub use tls::{TlsError, TlsErrorKind};

/// A `Result` whose error defaults to this crate's [`Error`].
///
/// ```
/// fn half(n: u32) -> zk_queue::Result<u32> {
///     if n % 2 == 1 {
///         return Err(zk_queue::Error::InvalidArgument(format!("{n} is odd")));
///     }
///     Ok(n / 2)
/// }
/// assert_eq!(half(4)?, 2);
/// assert!(half(3).is_err());
/// # Ok::<(), zk_queue::Error>(())
/// ```
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in this crate.
///
/// Messages are short lowercase sentences; the underlying cause, when there is
/// one (a ZooKeeper client error, an I/O error), is available through
/// [`std::error::Error::source`] and is not repeated in the message.
///
/// ZooKeeper's own answers that a caller may want to match on (`NoNode`,
/// `NodeExists`, `BadVersion`, ...) have variants of their own carrying the
/// path they concern.
///
/// Errors are cheap to clone (causes are shared, not copied), so one failure
/// can be reported to every request it concerns; they are `Send + Sync +
/// 'static` and carry no type of another crate in their fields.
///
/// ```
/// use zk_queue::Error;
/// let err = Error::NoNode { path: "/jobs".into() };
/// assert_eq!(err.to_string(), "node /jobs does not exist");
/// match err.clone() {
///     Error::NoNode { path } => assert_eq!(path, "/jobs"),
///     other => panic!("unexpected {other}"),
/// }
/// ```
#[non_exhaustive]
#[derive(Clone, Debug)]
pub enum Error {
    /// A path is not a valid ZooKeeper path, or is reserved; no request was sent.
    InvalidPath {
        /// The path as given.
        path: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// An option or argument is out of range; no request was sent.
    InvalidArgument(String),
    /// A request would exceed the server's packet limit (`jute.maxbuffer`);
    /// it was refused before sending, so the connection stays up.
    ItemTooLarge {
        /// Size of the item's data in bytes.
        size: usize,
        /// The largest data this request could carry.
        limit: usize,
    },
    /// The queue is empty (`element` / `remove`).
    NoSuchElement,
    /// A bounded queue was full: what a [`PutError::Full`] becomes when
    /// converted to this error (the items it gave back are dropped then).
    Full,
    /// The node does not exist.
    NoNode {
        /// The node's path.
        path: String,
    },
    /// The node already exists.
    NodeExists {
        /// The node's path.
        path: String,
    },
    /// The node's version differs from the one expected.
    BadVersion {
        /// The node's path.
        path: String,
    },
    /// The node has children and cannot be deleted.
    NotEmpty {
        /// The node's path.
        path: String,
    },
    /// The node's ACL does not allow this operation for this client's identities.
    NotAuthorized {
        /// The node's path.
        path: String,
    },
    /// One operation of a multi failed, so none was applied.
    MultiFailed {
        /// Index of the failing operation in the request.
        index: usize,
        /// Why it failed.
        source: Box<Error>,
    },
    /// The connection to the ensemble was lost while a request was in flight:
    /// the request may or may not have been applied. (A request refused
    /// because the session moved to another server, or because the server
    /// sheds load, is reported the same way; it is retried like any.)
    ConnectionLoss {
        /// The client's error.
        source: ClientError,
    },
    /// A connected server did not answer within the deadline (a stalled or
    /// overloaded server).
    Timeout {
        /// What was waited for.
        operation: &'static str,
        /// How long it waited.
        after: Duration,
    },
    /// No session could be had: when connecting (within the connection
    /// timeout, or at once when every server refused), and for any call
    /// whose deadline passed while the client was disconnected. Each server
    /// of the connect string with why it could not be used, as last tried.
    ///
    /// The message says whether a server accepted the connection without a
    /// session coming of it ([`ConnectCause::NoSession`]: a server starting
    /// or restarting, without a quorum, or a secure port reached without
    /// TLS; or a TLS failure) or none did, and how long it waited only when
    /// it did wait: "no zookeeper server reachable: 127.0.0.1:2181: connection
    /// refused"; "a zookeeper server accepted the connection, but no session
    /// was established within 2000 ms: 127.0.0.1:2181: connected, but no
    /// session was established (…)".
    Unreachable {
        /// How long the call (or connecting) waited.
        after: Duration,
        /// Each server tried, with the cause seen when it was last tried.
        servers: Vec<ServerFailure>,
    },
    /// The ZooKeeper session expired; the client opens a new one by itself.
    SessionExpired,
    /// Authentication with the ensemble failed.
    AuthFailed,
    /// The client was closed.
    Closed,
    /// The queue handle was closed (its client may still be open): no more
    /// puts, and its pull receiver hands out nothing more.
    QueueClosed,
    /// The queue's serializer could not serialize an item; nothing was stored.
    Serialization {
        /// The serializer's error.
        source: Arc<crate::codec::CodecError>,
    },
    /// An item node holds data that is not a valid item: not a Curator item
    /// frame, or a record the serializer cannot read. Such items are never
    /// deleted: they are moved to the dead-letter path, or left in place.
    CorruptItem {
        /// The item node's path.
        path: String,
        /// What is wrong with the data.
        source: Arc<dyn std::error::Error + Send + Sync>,
    },
    /// A lock-safe consumer's lock on an item was lost (its session expired,
    /// and another consumer may hold the item now) before it acknowledged the
    /// item; nothing was deleted.
    LeaseLost {
        /// The item node's path.
        path: String,
    },
    /// An item failed as many deliveries as the queue allows
    /// ([`QueueBuilder::max_attempts`](crate::QueueBuilder::max_attempts)),
    /// so it was moved to the dead-letter path instead of being requeued.
    AttemptsExhausted {
        /// The item node's path.
        path: String,
        /// The failed deliveries, this one included.
        attempts: u32,
    },
    /// A thread the crate needs (a queue's consumer or put thread, a client's
    /// session thread) could not be started; nothing was started.
    Spawn {
        /// The thread's role.
        thread: &'static str,
        /// The operating system's error.
        source: Arc<std::io::Error>,
    },
    /// The call does not fit the queue's lifecycle (not started, started
    /// twice, or closed), or what the calling thread holds (a thread that
    /// holds only a [`RwLock`](crate::recipes::RwLock)'s read lock asking
    /// for its write lock, or a thread asking again for the
    /// [`SemaphoreMutex`](crate::recipes::SemaphoreMutex) it holds).
    InvalidState(&'static str),
    /// Any other error reported by ZooKeeper or the client library.
    ZooKeeper {
        /// The path the request concerned, if any.
        path: Option<String>,
        /// The client's error.
        source: ClientError,
    },
    /// A lock-safe consumer held an item that someone else deleted meanwhile
    /// (an [`IdQueue::remove`](crate::IdQueue::remove) by a handle without
    /// the consumer's lock path, or another client): its acknowledge, requeue
    /// or dead-letter move had nothing left to act on, so nothing was done
    /// but releasing its lock. Told to the consumer, not returned by a call.
    ItemRemoved {
        /// The item node's path.
        path: String,
    },
    /// TLS settings that cannot be used
    /// ([`TlsConfigBuilder::build`](crate::client::TlsConfigBuilder::build)):
    /// an unreadable file, no PEM certificate or key in it, a key that does
    /// not fit its certificate, a bad server name.
    #[cfg(feature = "tls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
    Tls(TlsError),
}

/// The cause of a failed ZooKeeper request, kept as the
/// [`source`](std::error::Error::source) of an [`Error`]: the server's error
/// code, a lost connection, or a reply the client could not read. Opaque on
/// purpose; its message says which.
///
/// ```no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// use std::error::Error as _;
/// let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
/// if let Err(e @ zk_queue::Error::ConnectionLoss { .. }) = client.exists("/jobs") {
///     eprintln!("{e}: {}", e.source().map(|cause| cause.to_string()).unwrap_or_default());
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct ClientError(Cause);

#[derive(Clone, Debug)]
enum Cause {
    Code(Code),
    ConnectionLost(String),
    Malformed(DecodeError),
    Unexpected(String),
}

impl ClientError {
    /// The server answered with `code`.
    pub(crate) fn code(code: Code) -> ClientError {
        ClientError(Cause::Code(code))
    }

    /// The connection was lost with a request on `path` in flight.
    pub(crate) fn connection_lost(path: &str) -> ClientError {
        ClientError(Cause::ConnectionLost(path.to_owned()))
    }

    /// A reply could not be decoded.
    pub(crate) fn malformed(error: DecodeError) -> ClientError {
        ClientError(Cause::Malformed(error))
    }

    /// A reply of another kind than its request's.
    pub(crate) fn unexpected(what: &str) -> ClientError {
        ClientError(Cause::Unexpected(what.chars().take(200).collect()))
    }
}

impl fmt::Display for ClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Cause::Code(code) => write!(f, "the server answered {code}"),
            Cause::ConnectionLost(path) => {
                write!(f, "the connection was lost with a request on {path} in flight")
            }
            Cause::Malformed(error) => fmt::Display::fmt(error, f),
            Cause::Unexpected(what) => write!(f, "an unexpected reply: {what}"),
        }
    }
}

impl std::error::Error for ClientError {}

impl Error {
    /// The error of a call that started at `started` from its last
    /// request's: an [`Unreachable`](Error::Unreachable) or
    /// [`Timeout`](Error::Timeout) tells how long the call waited, not how
    /// long that request did.
    pub(crate) fn of_call_since(self, started: std::time::Instant) -> Error {
        match self {
            Error::Unreachable { servers, .. } => Error::Unreachable {
                after: started.elapsed(),
                servers,
            },
            Error::Timeout { operation, .. } => Error::Timeout {
                operation,
                after: started.elapsed(),
            },
            e => e,
        }
    }

    /// Maps the server's error `code` for a request on `path` to this
    /// crate's error.
    pub(crate) fn from_code(code: Code, path: &str) -> Error {
        let path = path.to_owned();
        match code {
            Code::NO_NODE => Error::NoNode { path },
            Code::NODE_EXISTS => Error::NodeExists { path },
            Code::BAD_VERSION => Error::BadVersion { path },
            Code::NOT_EMPTY => Error::NotEmpty { path },
            Code::NO_AUTH => Error::NotAuthorized { path },
            Code::SESSION_EXPIRED => Error::SessionExpired,
            Code::AUTH_FAILED => Error::AuthFailed,
            // The request was not applied: the connection dropped, the
            // session moved to another server while the request was on its
            // way, or the server is shedding load; it may be sent again.
            Code::CONNECTION_LOSS
            | Code::OPERATION_TIMEOUT
            | Code::SESSION_MOVED
            | Code::THROTTLED
            | Code::REQUEST_TIMEOUT => Error::ConnectionLoss {
                source: ClientError::code(code),
            },
            _ => Error::ZooKeeper {
                path: Some(path),
                source: ClientError::code(code),
            },
        }
    }

    /// Why items could not be encoded as an item frame: no items (an
    /// invalid argument) or an item too large for a record's length field.
    pub(crate) fn encoding(error: crate::codec::FrameError) -> Error {
        use crate::codec::FrameError;
        match error {
            FrameError::ItemTooLarge { size } => Error::ItemTooLarge {
                size,
                limit: i32::MAX.unsigned_abs() as usize,
            },
            // Only `NoItems` is left for an encoder to report; its message is
            // the whole story.
            other => Error::InvalidArgument(other.to_string()),
        }
    }

    /// A thread could not be started.
    pub(crate) fn spawn(thread: &'static str, source: std::io::Error) -> Error {
        Error::Spawn {
            thread,
            source: Arc::new(source),
        }
    }

    /// Whether a retry policy may try the request again: the connection was
    /// lost, no answer came in time, no server could be reached (yet), or
    /// the session was replaced.
    ///
    /// ```
    /// use std::time::Duration;
    /// use zk_queue::Error;
    /// assert!(Error::SessionExpired.is_retryable());
    /// assert!(Error::Timeout { operation: "get_data", after: Duration::from_secs(1) }.is_retryable());
    /// assert!(!Error::NoNode { path: "/jobs".into() }.is_retryable());
    /// ```
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            Error::ConnectionLoss { .. } | Error::Timeout { .. } | Error::Unreachable { .. } | Error::SessionExpired
        )
    }

    /// Whether the server does not implement the request (an older server).
    pub(crate) fn is_unimplemented(&self) -> bool {
        matches!(
            self,
            Error::ZooKeeper {
                source: ClientError(Cause::Code(Code::UNIMPLEMENTED)),
                ..
            }
        )
    }

    /// Whether this is [`Error::NoNode`].
    ///
    /// ```
    /// use zk_queue::Error;
    /// assert!(Error::NoNode { path: "/jobs".into() }.is_no_node());
    /// assert!(!Error::Closed.is_no_node());
    /// ```
    pub fn is_no_node(&self) -> bool {
        matches!(self, Error::NoNode { .. })
    }

    /// Whether this is [`Error::NodeExists`].
    ///
    /// ```
    /// use zk_queue::Error;
    /// assert!(Error::NodeExists { path: "/jobs".into() }.is_node_exists());
    /// assert!(!Error::NoNode { path: "/jobs".into() }.is_node_exists());
    /// ```
    pub fn is_node_exists(&self) -> bool {
        matches!(self, Error::NodeExists { .. })
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidPath { path, reason } => write!(f, "invalid path {path:?}: {reason}"),
            Error::InvalidArgument(what) => write!(f, "invalid argument: {what}"),
            Error::ItemTooLarge { size, limit } => write!(
                f,
                "item of {size} bytes exceeds the limit of {limit} bytes set by the server's packet size (jute.maxbuffer)"
            ),
            Error::NoSuchElement => f.write_str("the queue is empty"),
            Error::Full => f.write_str("the queue is full"),
            Error::NoNode { path } => write!(f, "node {path} does not exist"),
            Error::NodeExists { path } => write!(f, "node {path} already exists"),
            Error::BadVersion { path } => write!(f, "node {path} has another version"),
            Error::NotEmpty { path } => write!(f, "node {path} has children"),
            Error::NotAuthorized { path } => write!(f, "not authorized for node {path}"),
            Error::MultiFailed { index, .. } => write!(f, "operation {index} of a multi failed"),
            Error::ConnectionLoss { .. } => f.write_str("connection to zookeeper lost"),
            Error::Timeout { operation, after } => {
                write!(f, "{operation} timed out after {} ms", after.as_millis())
            }
            Error::Unreachable { after, servers } => {
                unreachable_headline(f, *after, servers)?;
                for (i, server) in servers.iter().enumerate() {
                    f.write_str(if i == 0 { ": " } else { "; " })?;
                    write!(f, "{server}")?;
                }
                Ok(())
            }
            Error::SessionExpired => f.write_str("zookeeper session expired"),
            Error::AuthFailed => f.write_str("authentication failed"),
            Error::Closed => f.write_str("client is closed"),
            Error::QueueClosed => f.write_str("the queue is closed"),
            Error::Serialization { .. } => f.write_str("cannot serialize the item"),
            Error::CorruptItem { path, .. } => write!(f, "item {path} is not a valid queue item"),
            Error::LeaseLost { path } => write!(f, "lost the lock on item {path} before acknowledging it"),
            Error::AttemptsExhausted { path, attempts } => {
                write!(f, "item {path} failed {attempts} deliveries, its maximum")
            }
            Error::Spawn { thread, .. } => write!(f, "cannot start the {thread} thread"),
            Error::InvalidState(what) => f.write_str(what),
            Error::ZooKeeper { path: Some(path), .. } => write!(f, "zookeeper request on {path} failed"),
            Error::ZooKeeper { path: None, .. } => f.write_str("zookeeper request failed"),
            Error::ItemRemoved { path } => write!(f, "item {path} was removed by someone else while it was held"),
            #[cfg(feature = "tls")]
            Error::Tls(e) => write!(f, "bad tls settings: {e}"),
        }
    }
}

/// The first words of [`Error::Unreachable`]'s message: whether a server
/// accepted the connection (but no session came of it) or none did, and
/// how long it was waited for, unless every server failed in a way that
/// does not take waiting (a refusal, a name that does not resolve, a
/// refused certificate): then the causes say what happened.
fn unreachable_headline(f: &mut fmt::Formatter<'_>, after: Duration, servers: &[ServerFailure]) -> fmt::Result {
    if servers.iter().any(|s| s.cause().connected()) {
        f.write_str("a zookeeper server accepted the connection, but no session was established")?;
    } else {
        f.write_str("no zookeeper server reachable")?;
    }
    if servers.is_empty() || !servers.iter().all(|s| s.cause().is_definite()) {
        write!(f, " within {} ms", after.as_millis())?;
    }
    Ok(())
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::MultiFailed { source, .. } => Some(source.as_ref()),
            Error::ConnectionLoss { source } | Error::ZooKeeper { source, .. } => Some(source),
            Error::Serialization { source } => Some(source.as_ref()),
            Error::CorruptItem { source, .. } => Some(source.as_ref()),
            Error::Spawn { source, .. } => Some(source.as_ref()),
            #[cfg(feature = "tls")]
            Error::Tls(e) => Some(e),
            // The first server's tls failure, if any.
            #[cfg(feature = "tls")]
            Error::Unreachable { servers, .. } => servers.iter().find_map(|s| match s.cause() {
                ConnectCause::Tls(e) => Some(e as &(dyn std::error::Error + 'static)),
                _ => None,
            }),
            _ => None,
        }
    }
}

/// Why a put that may not wait forever (`try_put`, `put_timeout`,
/// `put_multi_timeout`) did not store its items.
///
/// A full queue gives the items back; `?` in a function returning
/// [`Result`] turns this into an [`Error`] (dropping the items).
///
/// ```no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// use std::time::Duration;
/// use zk_queue::{PutError, QueueBuilder, StringSerializer, ZkClient};
/// let client = ZkClient::connect("127.0.0.1:2181")?;
/// let queue = QueueBuilder::new(&client, "/jobs", StringSerializer).max_items(100).build_queue()?;
/// match queue.put_timeout("resize 42".to_string(), Duration::from_secs(1)) {
///     Ok(()) => {}
///     Err(PutError::Full(job)) => eprintln!("still full, keeping {job} for later"),
///     Err(PutError::Failed(e)) => return Err(e),
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub enum PutError<T> {
    /// The bounded queue was full (`try_put`) or stayed full until the
    /// deadline (`put_timeout`): nothing was sent, and here are the items.
    Full(T),
    /// The put failed; see the error. After a connection error or a timeout
    /// while a request was in flight, the items may or may not have been
    /// stored, and they are not given back.
    Failed(Error),
}

impl<T> PutError<T> {
    /// The items given back, if the queue was full.
    ///
    /// ```
    /// use zk_queue::{Error, PutError};
    /// assert_eq!(PutError::Full("job").into_inner(), Some("job"));
    /// assert_eq!(PutError::<&str>::Failed(Error::Closed).into_inner(), None);
    /// ```
    pub fn into_inner(self) -> Option<T> {
        match self {
            PutError::Full(items) => Some(items),
            PutError::Failed(_) => None,
        }
    }

    /// Whether the queue was full.
    ///
    /// ```
    /// assert!(zk_queue::PutError::Full(()).is_full());
    /// ```
    pub fn is_full(&self) -> bool {
        matches!(self, PutError::Full(_))
    }

    /// The same error with the items changed by `f`.
    pub(crate) fn map<U>(self, f: impl FnOnce(T) -> U) -> PutError<U> {
        match self {
            PutError::Full(items) => PutError::Full(f(items)),
            PutError::Failed(e) => PutError::Failed(e),
        }
    }
}

impl<T> From<Error> for PutError<T> {
    fn from(error: Error) -> PutError<T> {
        PutError::Failed(error)
    }
}

impl<T> From<PutError<T>> for Error {
    fn from(error: PutError<T>) -> Error {
        match error {
            PutError::Full(_) => Error::Full,
            PutError::Failed(e) => e,
        }
    }
}

impl<T> fmt::Debug for PutError<T> {
    /// Leaves the items out, so that `T` needs no `Debug`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PutError::Full(_) => f.write_str("Full(..)"),
            PutError::Failed(e) => f.debug_tuple("Failed").field(e).finish(),
        }
    }
}

impl<T> fmt::Display for PutError<T> {
    /// A failure reads as its error.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PutError::Full(_) => f.write_str("the queue is full"),
            PutError::Failed(e) => fmt::Display::fmt(e, f),
        }
    }
}

impl<T> std::error::Error for PutError<T> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PutError::Full(_) => None,
            PutError::Failed(e) => e.source(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync_clone<T: Clone + Send + Sync + 'static>() {}

    #[test]
    fn error_is_clone_send_sync_and_small() {
        assert_send_sync_clone::<Error>();
        assert!(std::mem::size_of::<Error>() <= 64, "{}", std::mem::size_of::<Error>());
    }

    #[test]
    fn server_codes_map_to_typed_variants_with_the_path() {
        let e = Error::from_code(Code::NO_NODE, "/q/a");
        assert!(matches!(&e, Error::NoNode { path } if path == "/q/a"));
        assert_eq!(e.to_string(), "node /q/a does not exist");
        let e = Error::from_code(Code::NO_AUTH, "/q");
        assert!(matches!(e, Error::NotAuthorized { .. }));
        let e = Error::from_code(Code::CONNECTION_LOSS, "/q");
        assert!(e.is_retryable());
        assert!(std::error::Error::source(&e).is_some());
        for moved in [Code::SESSION_MOVED, Code::THROTTLED] {
            assert!(Error::from_code(moved, "/q").is_retryable(), "no data change: retried");
        }
        let e = Error::from_code(Code::UNIMPLEMENTED, "/q");
        assert!(!e.is_retryable());
        assert!(e.is_unimplemented());
        assert_eq!(e.to_string(), "zookeeper request on /q failed");
        assert_eq!(
            std::error::Error::source(&e).map(|c| c.to_string()),
            Some(format!("the server answered {}", Code::UNIMPLEMENTED))
        );
    }

    #[test]
    fn a_clone_keeps_the_variant_and_the_cause() {
        use std::error::Error as _;
        let corrupt = Error::CorruptItem {
            path: "/q/queue-1".into(),
            source: Arc::new(crate::codec::FrameError::Truncated { len: 3 }),
        };
        let copy = corrupt.clone();
        assert!(matches!(&copy, Error::CorruptItem { path, .. } if path == "/q/queue-1"));
        let cause = copy.source().and_then(|c| c.downcast_ref::<crate::codec::FrameError>());
        assert_eq!(cause, Some(&crate::codec::FrameError::Truncated { len: 3 }));
        let serializer = Error::Serialization {
            source: Arc::new(crate::codec::CodecError::new("not a number")),
        };
        assert!(matches!(serializer.clone(), Error::Serialization { .. }));
        let spawn = Error::spawn("put", std::io::Error::other("no threads left"));
        assert_eq!(spawn.clone().to_string(), "cannot start the put thread");
        assert_eq!(spawn.source().unwrap().to_string(), "no threads left");
    }

    #[test]
    fn messages_are_lowercase_without_trailing_punctuation() {
        let errors = [
            Error::NoSuchElement,
            Error::Closed,
            Error::QueueClosed,
            Error::SessionExpired,
            Error::ItemTooLarge { size: 2, limit: 1 },
            Error::Timeout {
                operation: "take",
                after: Duration::from_millis(5),
            },
        ];
        for e in errors {
            let msg = e.to_string();
            assert!(msg.chars().next().is_some_and(|c| c.is_lowercase()), "{msg}");
            assert!(!msg.ends_with('.'), "{msg}");
        }
    }
}
