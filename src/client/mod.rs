//! The crate's own blocking ZooKeeper client.
//!
//! Queue users need only [`ZkClient`], its builder and [`ConnectionState`]
//! (all three also at the crate root): connect once and hand the client to
//! the queues. Everything else here is a general-purpose ZooKeeper client
//! for code that shares the session with the queues: node operations
//! ([`ZkClient::create`], [`ZkClient::get_data`], ...), pipelined batches
//! ([`ZkClient::create_many`], ...), transactions ([`ZkClient::multi`],
//! [`Op`]), ACLs ([`Acl`], [`Perms`]), child watches ([`ChildWatch`]), and
//! Curator's retry policies ([`RetryPolicy`]). It speaks ZooKeeper's protocol
//! itself (no async runtime): each call writes its requests on the session's
//! connection from the calling thread and waits for the replies until its
//! deadline, retrying what the retry policy allows; one reader thread per
//! connection reads replies and events, pings, and keeps the session through
//! disconnections.
//!
//! ```no_run
//! # fn main() -> Result<(), zk_queue::Error> {
//! use zk_queue::client::{CreateMode, Op, RetryNTimes};
//! use zk_queue::ZkClient;
//! use std::time::Duration;
//! let client = ZkClient::builder("127.0.0.1:2181")
//!     .retry_policy(RetryNTimes::new(3, Duration::from_millis(100)))
//!     .connect()?;
//! client.ensure_path("/app")?;
//! client.multi(&[
//!     Op::create("/app/a", b"1".to_vec(), CreateMode::Persistent),
//!     Op::create("/app/b", b"2".to_vec(), CreateMode::Persistent),
//! ])?;
//! # Ok(())
//! # }
//! ```

mod arrivals;
mod batch;
mod builder;
mod connect;
mod multi;
mod multis;
mod ops;
mod packet;
mod pipeline;
mod read_ahead;
mod request;
mod retry;
mod session;
mod state;
mod stats;
mod subtree;
#[cfg(feature = "tls")]
mod tls;
mod transport;
mod types;
mod watch;
pub(crate) mod wire;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;

pub use crate::error::{ConnectCause, ServerFailure};
pub use batch::BatchResults;
pub(crate) use batch::MULTI_READ;
pub use builder::ZkClientBuilder;
pub(crate) use multis::{Created, MULTI_OPS};
pub use retry::{ExponentialBackoffRetry, RetryForever, RetryNTimes, RetryOneTime, RetryPolicy, RetryUntilElapsed};
pub use state::ConnectionState;
pub use stats::ClientStats;
#[cfg(feature = "tls")]
pub use tls::{TlsConfig, TlsConfigBuilder, TlsError, TlsErrorKind};
pub use types::{Acl, CreateMode, Op, OpResult, Perms, Stat};
pub use watch::ChildWatch;
pub(crate) use watch::DataWatch;

pub(crate) use arrivals::Arrivals;
pub(crate) use ops::Deleted;
pub(crate) use pipeline::Step;
pub(crate) use request::{Opts, DEADLINE_GRACE, TRY_WAIT};
pub(crate) use retry::Retry;
pub(crate) use session::{Notice, Sink};
pub(crate) use subtree::SubtreeWatch;

use self::session::{Link, LinkConfig};
use self::state::Hub;
use crate::error::{Error, Result};
use crate::sync::Latch;

/// A connection to a ZooKeeper ensemble, shared by clones.
///
/// Cloning is cheap; all clones use the same session. The session closes when
/// [`close`](ZkClient::close) is called or the last clone is dropped.
///
/// # Threads and blocking
/// Every method blocks the calling thread until ZooKeeper answers, the retry
/// policy gives up, or the request timeout passes
/// ([`ZkClientBuilder::request_timeout`], 15 seconds by default, retries
/// included): then it fails with [`Error::Timeout`] or the last connection
/// error. A call with a deadline of its own (`take_timeout`, `put_timeout`,
/// `close_timeout`, ...) returns by that deadline instead; a request it sent
/// and that a connected server is still answering may finish up to one second
/// after it. A background thread named `zk-queue-session` follows the session
/// state; it never runs user code.
///
/// # Outages and session expiry
/// While no server answers, the client tries each server of the connect
/// string again at least once a second (with jitter), and the session lives
/// on ([`ConnectionState::Suspended`]) until a server answers: a restart, a
/// leader change or a network cut shorter than the session timeout never
/// costs the session, and a restarted server keeps the sessions it reloads
/// for another session timeout. The client does not declare the session
/// expired by itself; only a server does. When the session expires the
/// client reports [`ConnectionState::Lost`], opens a new session by itself and
/// reports [`ConnectionState::Reconnected`]. Ephemeral nodes of the old
/// session are gone by then; persistent data is not affected.
///
/// # Examples
/// ```no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// use zk_queue::{ZkClient, client::CreateMode};
/// let client = ZkClient::connect("127.0.0.1:2181")?;
/// client.ensure_path("/app/config")?;
/// let (path, _stat) = client.create("/app/config/key", b"value", CreateMode::Persistent)?;
/// assert_eq!(client.get_data(&path)?.0, b"value");
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct ZkClient {
    shared: Arc<Shared>,
}

/// Settings fixed when the client is built.
#[derive(Debug)]
pub(crate) struct Config {
    pub(crate) connect_string: String,
    pub(crate) session_timeout: Duration,
    pub(crate) connection_timeout: Duration,
    pub(crate) request_timeout: Duration,
    pub(crate) retry: Box<dyn RetryPolicy>,
    pub(crate) default_acl: Vec<Acl>,
    pub(crate) max_packet_size: usize,
    /// Whether multi-reads may be sent
    /// ([`ZkClientBuilder::without_multi_read`]).
    pub(crate) multi_read: bool,
    /// Whether persistent watches may be set
    /// ([`ZkClientBuilder::without_persistent_watches`]).
    pub(crate) persistent_watches: bool,
    /// Plain TCP or TLS ([`ZkClientBuilder::tls`]).
    pub(crate) security: transport::Security,
}

pub(crate) struct Shared {
    pub(crate) config: Config,
    /// The session and its connection.
    link: Arc<Link>,
    /// Connection states, listeners and blocked callers' latches.
    hub: Arc<Hub>,
    closed: AtomicBool,
    pub(crate) counters: stats::Counters,
    /// The server refused a multi-read (older than 3.6), or the client was
    /// built without them: nodes are read one request each.
    pub(crate) no_multi_read: AtomicBool,
    /// The server refused a persistent watch sent with a lock's create
    /// (older than 3.6), or the client was built without them.
    pub(crate) no_subtree_watch: AtomicBool,
}

impl ZkClient {
    /// Connects with default settings; see [`ZkClient::builder`] for the
    /// defaults and the connect string's syntax.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// let client = zk_queue::ZkClient::connect("127.0.0.1:2181,127.0.0.1:2182/my-app")?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn connect(connect_string: &str) -> Result<ZkClient> {
        ZkClient::builder(connect_string).connect()
    }

    /// A builder for a client of the ensemble `connect_string`:
    /// `host:port[,host:port...][/chroot]`.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// use std::time::Duration;
    /// use zk_queue::{ZkClient, client::ExponentialBackoffRetry};
    /// let client = ZkClient::builder("127.0.0.1:2181")
    ///     .session_timeout(Duration::from_secs(10))
    ///     .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 5))
    ///     .connect()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn builder(connect_string: &str) -> ZkClientBuilder {
        ZkClientBuilder::new(connect_string)
    }

    fn start(config: Config, auth: Vec<(String, Vec<u8>)>) -> Result<ZkClient> {
        let hub = Arc::new(Hub::new(crate::metrics::ClientMetrics::new(&config.connect_string)));
        let reporter = Arc::clone(&hub);
        let link = Link::open(
            LinkConfig {
                servers: connect::servers(&config.connect_string),
                chroot: chroot(&config.connect_string),
                session_timeout: config.session_timeout,
                connection_timeout: config.connection_timeout,
                security: config.security.clone(),
            },
            auth,
            Box::new(move |event| reporter.report(event)),
        )?;
        log::info!("connected to {}", config.connect_string);
        hub.metrics.connected(hub.state().is_connected());
        let no_multi_read = AtomicBool::new(!config.multi_read);
        let no_subtree_watch = AtomicBool::new(!config.persistent_watches);
        Ok(ZkClient {
            shared: Arc::new(Shared {
                config,
                link,
                hub,
                closed: AtomicBool::new(false),
                counters: stats::Counters::default(),
                no_multi_read,
                no_subtree_watch,
            }),
        })
    }

    /// The latest connection state.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// use zk_queue::{ConnectionState, ZkClient};
    /// let client = ZkClient::connect("127.0.0.1:2181")?;
    /// assert_eq!(client.state(), ConnectionState::Connected);
    /// # Ok(())
    /// # }
    /// ```
    pub fn state(&self) -> ConnectionState {
        self.shared.hub.state()
    }

    /// A channel of connection-state changes. The current state is sent first;
    /// the channel disconnects when the client closes. States are sent from the
    /// session thread and never block it (the channel is unbounded), so a
    /// listener that stops reading only costs memory.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// use zk_queue::ZkClient;
    /// let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let states = client.state_listener();
    /// std::thread::spawn(move || {
    ///     for state in states {
    ///         println!("zookeeper: {state:?}");
    ///     }
    /// });
    /// # Ok(())
    /// # }
    /// ```
    pub fn state_listener(&self) -> Receiver<ConnectionState> {
        if self.is_closed() {
            return crossbeam_channel::never();
        }
        self.shared.hub.listen()
    }

    /// The connect string this client was built with.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// assert_eq!(client.connect_string(), "127.0.0.1:2181");
    /// # Ok(())
    /// # }
    /// ```
    pub fn connect_string(&self) -> &str {
        &self.shared.config.connect_string
    }

    /// The id of the current session (it changes after an expiry).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// println!("session 0x{:x}", client.session_id()?);
    /// # Ok(())
    /// # }
    /// ```
    pub fn session_id(&self) -> Result<i64> {
        if self.is_closed() {
            return Err(Error::Closed);
        }
        Ok(self.shared.link.session_id())
    }

    /// Adds authentication to the session, and to every session the client
    /// opens after an expiry. For the `digest` scheme `auth` is
    /// `user:password`; see [`ZkClientBuilder::add_auth`] for what it grants.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// client.add_auth("digest", b"alice:secret")?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn add_auth(&self, scheme: &str, auth: &[u8]) -> Result<()> {
        self.shared.counters.count("add_auth");
        let deadline = Instant::now() + self.request_timeout();
        self.shared
            .link
            .add_auth(scheme, auth, deadline)
            .map_err(|failure| self.failed("add_auth", "/", failure, self.request_timeout()))
    }

    /// Closes the session. Blocked calls of this client wake up with
    /// [`Error::Closed`]; later calls fail with it. Closing twice is harmless.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// client.close();
    /// assert!(matches!(client.exists("/"), Err(zk_queue::Error::Closed)));
    /// # Ok(())
    /// # }
    /// ```
    pub fn close(&self) {
        self.shared.close();
    }

    /// How many requests of each kind this client (and its clones) sent, and
    /// how long it had one in flight.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let before = client.stats();
    /// client.get_children("/")?;
    /// assert_eq!(client.stats().get_children, before.get_children + 1);
    /// # Ok(())
    /// # }
    /// ```
    pub fn stats(&self) -> ClientStats {
        let mut stats = self.shared.counters.snapshot();
        stats.waiting = self.shared.link().waited();
        stats
    }

    /// Whether [`close`](ZkClient::close) was called.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// assert!(!client.is_closed());
    /// # Ok(())
    /// # }
    /// ```
    pub fn is_closed(&self) -> bool {
        self.shared.closed.load(Ordering::Acquire)
    }

    /// Registers a latch to be opened on every connection-state change and on
    /// close, for as long as the guard lives.
    pub(crate) fn wake_on_state_change(&self, latch: &Latch) -> WakerGuard {
        self.shared.wake_on_state_change(latch)
    }

    /// A handle that does not keep the session open.
    pub(crate) fn downgrade(&self) -> WeakClient {
        WeakClient(Arc::downgrade(&self.shared))
    }

    /// The current session.
    pub(crate) fn session(&self) -> Session {
        Session(self.shared.link.epoch())
    }

    /// Whether `session` is still the live one: not replaced, and not said
    /// by a server to have expired (which is known before a new session
    /// replaces it).
    pub(crate) fn is_live(&self, session: Session) -> bool {
        self.shared.link.is_live(session.0)
    }

    /// Whether the client is connected and the server cannot have expired
    /// the session yet: it answered a request written less than nine tenths
    /// of the session timeout ago. Unlike [`state`](Self::state), this
    /// holds however late the session thread runs (a paused process, a
    /// loaded machine), so what claims to hold something asks this.
    pub(crate) fn is_vouched(&self) -> bool {
        self.state().is_connected() && self.shared.link.is_vouched()
    }

    /// Whether `session` is live and vouched for ([`is_vouched`](Self::is_vouched)).
    pub(crate) fn holds_session(&self, session: Session) -> bool {
        self.is_live(session) && self.is_vouched()
    }

    /// How long the client has been unable to reach a server, if it is
    /// now: since its connection dropped, across reconnection attempts and
    /// a new session, until it is connected again.
    pub(crate) fn unreachable_for(&self) -> Option<Duration> {
        self.shared.hub.down_for()
    }

    /// How long one request may take, retries included.
    pub(crate) fn request_timeout(&self) -> Duration {
        self.shared.config.request_timeout
    }

    /// The ACL of nodes created without one.
    pub(crate) fn default_acl(&self) -> &[Acl] {
        &self.shared.config.default_acl
    }

    /// The largest packet the server accepts (`jute.maxbuffer`).
    pub(crate) fn max_packet_size(&self) -> usize {
        self.shared.config.max_packet_size
    }
}

impl std::fmt::Debug for ZkClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZkClient")
            .field("connect_string", &self.shared.config.connect_string)
            .field("state", &self.state())
            .field("closed", &self.is_closed())
            .finish()
    }
}

/// A client that does not keep its session open, for handles that only
/// need to ask about it while someone else still uses it.
#[derive(Clone)]
pub(crate) struct WeakClient(std::sync::Weak<Shared>);

impl WeakClient {
    /// A handle on no client, for tests of handles without a server.
    #[cfg(test)]
    pub(crate) fn detached() -> WeakClient {
        WeakClient(std::sync::Weak::new())
    }

    /// The client, if a clone of it is still alive.
    pub(crate) fn upgrade(&self) -> Option<ZkClient> {
        self.0.upgrade().map(|shared| ZkClient { shared })
    }
}

/// One of a client's sessions: the first, or one the client opened after an
/// expiry (see `session`). A request fenced to a session (a lock's release
/// or acknowledge) is sent only while that session is current, so a lock
/// taken in one session never acts in the next, where another consumer may
/// hold the item.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Session(u64);

#[cfg(test)]
impl Session {
    /// A session of a client that made `epoch` sessions before it.
    pub(crate) const fn of_epoch(epoch: u64) -> Session {
        Session(epoch)
    }
}

/// Removes a latch registered by [`ZkClient::wake_on_state_change`] on drop.
/// It borrows nothing, so a holder can keep it as long as it needs.
pub(crate) struct WakerGuard {
    hub: Arc<Hub>,
    id: u64,
}

impl Drop for WakerGuard {
    fn drop(&mut self) {
        self.hub.forget(self.id);
    }
}

impl Shared {
    /// The session and its connection.
    pub(crate) fn link(&self) -> &Link {
        &self.link
    }

    /// The session and its connection, without keeping them open.
    pub(crate) fn link_weak(&self) -> std::sync::Weak<Link> {
        Arc::downgrade(&self.link)
    }

    /// Registers a latch to be opened on every connection-state change and on
    /// close, for as long as the guard lives.
    fn wake_on_state_change(&self, latch: &Latch) -> WakerGuard {
        let id = self.hub.wake_on_change(latch);
        WakerGuard {
            hub: Arc::clone(&self.hub),
            id,
        }
    }

    /// Blocks until a session newer than `session` is installed, the client
    /// closes, or the deadline passes.
    pub(crate) fn wait_for_new_session(&self, session: Session, deadline: Instant) {
        let Session(epoch) = session;
        while self.link.epoch() == epoch && !self.is_closed() {
            let latch = Latch::new();
            let _guard = self.wake_on_state_change(&latch);
            // Re-check after registering so a replacement in between is not missed.
            let replaced = self.link.epoch() != epoch;
            if !replaced && !latch.wait_until(Some(deadline)) {
                return;
            }
        }
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    fn close(&self) {
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        log::info!("closing the client of {}", self.config.connect_string);
        self.link.close(CLOSE_GRACE.min(self.config.request_timeout));
        self.hub.close();
    }
}

/// The longest a close waits for the server to confirm the session's end.
const CLOSE_GRACE: Duration = Duration::from_secs(1);

/// The chroot of a connect string (`host:port,.../chroot`), or empty.
fn chroot(connect_string: &str) -> String {
    match connect_string.find('/') {
        Some(i) if connect_string[i..].len() > 1 && !connect_string[..i].ends_with(':') => {
            connect_string[i..].trim_end_matches('/').to_owned()
        }
        _ => String::new(),
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        self.close();
    }
}

#[cfg(test)]
mod tests {
    use super::chroot;

    #[test]
    fn the_chroot_is_what_follows_the_servers() {
        assert_eq!(chroot("a:1,b:2/app/x"), "/app/x");
        assert_eq!(chroot("a:1"), "");
        assert_eq!(chroot("a:1/"), "");
    }
}
