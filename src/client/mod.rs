//! A blocking facade over the asynchronous `zookeeper-client` crate.
//!
//! Every call blocks the calling thread on one request (or a few, for
//! [`ZkClient::ensure_path`]) with a deadline ([`ZkClientBuilder::request_timeout`]),
//! and retries what the [`RetryPolicy`] allows. A background thread follows
//! the session: it reports [`ConnectionState`]s to listeners and, when the
//! session expires, opens a new one so the client keeps working.

mod arrivals;
mod batch;
mod builder;
mod connect;
mod multi;
mod ops;
mod packet;
mod request;
mod retry;
mod session;
mod stats;
mod types;
mod watch;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use parking_lot::{Mutex, RwLock};

pub use batch::BatchResults;
pub(crate) use batch::MULTI_READ;
pub use builder::ZkClientBuilder;
pub use connect::{ConnectCause, ServerFailure};
pub use retry::{ExponentialBackoffRetry, RetryForever, RetryNTimes, RetryOneTime, RetryPolicy, RetryUntilElapsed};
pub use session::ConnectionState;
pub use stats::ClientStats;
pub use types::{Acl, CreateMode, Op, OpResult, Perms, Stat};
pub use watch::ChildWatch;

pub(crate) use arrivals::Arrivals;
pub(crate) use ops::Deleted;
pub(crate) use request::Opts;
pub(crate) use retry::Retry;

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
/// use zk_queue::{CreateMode, ZkClient};
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
}

pub(crate) struct Shared {
    pub(crate) config: Config,
    /// Authentication, replayed on every new session.
    auth: Mutex<Vec<(String, Vec<u8>)>>,
    /// The live session's client; `None` once closed.
    current: RwLock<Option<zookeeper_client::Client>>,
    /// Bumped each time a new session replaces an expired one.
    generation: AtomicU64,
    /// One more than the generation of the latest session a server said
    /// expired (0: none), set before [`ConnectionState::Lost`] is told.
    lost: AtomicU64,
    state: Mutex<ConnectionState>,
    listeners: Mutex<Vec<crossbeam_channel::Sender<ConnectionState>>>,
    /// Latches of blocked callers, opened on every state change and on close.
    wakers: Mutex<Vec<(u64, Latch)>>,
    next_waker: AtomicU64,
    closed: AtomicBool,
    close_tx: Mutex<Option<futures::channel::oneshot::Sender<()>>>,
    supervisor: Mutex<Option<JoinHandle<()>>>,
    pub(crate) counters: stats::Counters,
    /// The server refused a multi-read (older than 3.6): nodes are read one
    /// request each.
    pub(crate) no_multi_read: AtomicBool,
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
    /// use zk_queue::{ExponentialBackoffRetry, ZkClient};
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
        let client = session::open(&config, &auth)?;
        let watcher = client.state_watcher();
        let (close_tx, close_rx) = futures::channel::oneshot::channel();
        let shared = Arc::new(Shared {
            config,
            auth: Mutex::new(auth),
            current: RwLock::new(Some(client)),
            generation: AtomicU64::new(0),
            lost: AtomicU64::new(0),
            state: Mutex::new(ConnectionState::Connected),
            listeners: Mutex::new(Vec::new()),
            wakers: Mutex::new(Vec::new()),
            next_waker: AtomicU64::new(0),
            closed: AtomicBool::new(false),
            close_tx: Mutex::new(Some(close_tx)),
            supervisor: Mutex::new(None),
            counters: stats::Counters::default(),
            no_multi_read: AtomicBool::new(false),
        });
        let weak = Arc::downgrade(&shared);
        let handle = std::thread::Builder::new()
            .name("zk-queue-session".into())
            .spawn(move || session::supervise(weak, watcher, close_rx))
            .map_err(|e| Error::spawn("session", e))?;
        *shared.supervisor.lock() = Some(handle);
        log::info!("connected to {}", shared.config.connect_string);
        Ok(ZkClient { shared })
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
        *self.shared.state.lock()
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
        let (tx, rx) = crossbeam_channel::unbounded();
        let mut listeners = self.shared.listeners.lock();
        if !self.is_closed() {
            let _ = tx.send(self.state());
            listeners.push(tx);
        }
        rx
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
        Ok(self.shared.current()?.0.session_id().0)
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
        self.shared.auth.lock().push((scheme.to_owned(), auth.to_vec()));
        self.send(
            "add_auth",
            "/",
            Opts::new(),
            |c| async move { c.auth(scheme, auth).await },
        )
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
        let handle = self.shared.supervisor.lock().take();
        if let Some(handle) = handle {
            if handle.thread().id() != std::thread::current().id() && handle.join().is_err() {
                log::error!("the session thread panicked");
            }
        }
    }

    /// How many requests of each kind this client (and its clones) sent.
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
        self.shared.counters.snapshot()
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
    pub(crate) fn wake_on_state_change(&self, latch: &Latch) -> WakerGuard<'_> {
        self.shared.wake_on_state_change(latch)
    }

    /// The current session.
    pub(crate) fn session(&self) -> Session {
        Session(self.shared.generation.load(Ordering::Acquire))
    }

    /// Whether `session` is still the live one: not replaced, and not said
    /// by a server to have expired (which is known before a new session
    /// replaces it).
    pub(crate) fn is_live(&self, session: Session) -> bool {
        let Session(generation) = session;
        self.shared.generation.load(Ordering::Acquire) == generation
            && self.shared.lost.load(Ordering::Acquire) != generation + 1
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

/// One of a client's sessions: the first, or one the client opened after an
/// expiry (see `session`). A request fenced to a session (a lock's release
/// or acknowledge) is sent only while that session is current, so a lock
/// taken in one session never acts in the next, where another consumer may
/// hold the item.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Session(u64);

/// Removes a latch registered by [`ZkClient::wake_on_state_change`] on drop.
pub(crate) struct WakerGuard<'a> {
    shared: &'a Shared,
    id: u64,
}

impl Drop for WakerGuard<'_> {
    fn drop(&mut self) {
        self.shared.wakers.lock().retain(|(id, _)| *id != self.id);
    }
}

impl Shared {
    /// The live client and its session.
    pub(crate) fn current(&self) -> Result<(zookeeper_client::Client, Session)> {
        let session = Session(self.generation.load(Ordering::Acquire));
        match &*self.current.read() {
            Some(client) => Ok((client.clone(), session)),
            None => Err(Error::Closed),
        }
    }

    /// Reports a state to listeners and wakes blocked callers.
    pub(crate) fn publish(&self, state: ConnectionState) {
        match state {
            ConnectionState::Connected | ConnectionState::Reconnected => log::info!("zookeeper session {state:?}"),
            ConnectionState::Suspended | ConnectionState::Lost => log::warn!("zookeeper session {state:?}"),
        }
        *self.state.lock() = state;
        self.listeners.lock().retain(|tx| tx.send(state).is_ok());
        self.wake_all();
    }

    fn wake_all(&self) {
        for (_, latch) in self.wakers.lock().iter() {
            latch.open();
        }
    }

    /// Marks the current session as expired: a server said so.
    pub(crate) fn mark_lost(&self) {
        let generation = self.generation.load(Ordering::Acquire);
        self.lost.store(generation + 1, Ordering::Release);
    }

    /// Installs the client of a new session after an expiry.
    pub(crate) fn replace_session(&self, client: zookeeper_client::Client) {
        let mut current = self.current.write();
        if current.is_some() {
            *current = Some(client);
            self.generation.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// Registers a latch to be opened on every connection-state change and on
    /// close, for as long as the guard lives.
    fn wake_on_state_change(&self, latch: &Latch) -> WakerGuard<'_> {
        let id = self.next_waker.fetch_add(1, Ordering::Relaxed);
        self.wakers.lock().push((id, latch.clone()));
        WakerGuard { shared: self, id }
    }

    /// Blocks until a session newer than `session` is installed, the client
    /// closes, or the deadline passes.
    pub(crate) fn wait_for_new_session(&self, session: Session, deadline: Instant) {
        let Session(generation) = session;
        while self.generation.load(Ordering::Acquire) == generation && !self.closed.load(Ordering::Acquire) {
            let latch = Latch::new();
            let _guard = self.wake_on_state_change(&latch);
            // Re-check after registering so a replacement in between is not missed.
            let replaced = self.generation.load(Ordering::Acquire) != generation;
            if !replaced && !latch.wait_until(Some(deadline)) {
                return;
            }
        }
    }

    pub(crate) fn auth(&self) -> Vec<(String, Vec<u8>)> {
        self.auth.lock().clone()
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    fn close(&self) {
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        log::info!("closing the client of {}", self.config.connect_string);
        // Dropping the last client of the session closes it.
        self.current.write().take();
        if let Some(tx) = self.close_tx.lock().take() {
            let _ = tx.send(());
        }
        self.listeners.lock().clear();
        self.wake_all();
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        self.close();
    }
}
