//! The session: the crate's own connection to a ZooKeeper ensemble, kept
//! the way ZooKeeper's Java client keeps it.
//!
//! - [`Link`] (this file) holds the session (id, password, the session's
//!   number, its watches) and its current connection; callers write their
//!   own requests on it ([`Link::send`]) and wait for their replies each
//!   until its own deadline ([`Pending::wait`]).
//! - `conn.rs`: one connection (plain TCP or TLS: `transport.rs`), its
//!   writing half and the requests in flight; `slot.rs`: the reply slot a caller waits on.
//! - `thread.rs`: the session thread, which reads every reply and event of
//!   the connection, pings, and reconnects: on a disconnection it tries the
//!   ensemble's servers (shuffled) at least once a second with jitter,
//!   presenting the session, until a server reattaches it or says it
//!   expired. The client never declares a session expired by itself.
//! - `attach.rs`: the handshake with one server.
//! - `watches.rs`: the watch registry, set again on the server after a
//!   reattachment.

mod attach;
mod conn;
mod rounds;
mod slot;
mod thread;
mod watches;

use std::sync::atomic::{AtomicI32, AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

pub(crate) use slot::{Failure, Pending};
pub(crate) use watches::{Notice, Sink, WatchKind, WatchReg, Watches};

use self::conn::{Conn, InFlight};
use self::slot::Slot;
use super::connect::with_port;
use super::wire::{Request, XID_AUTH};
use super::ServerFailure;
use crate::error::{Error, Result};

/// A caller's watch, removed when dropped: from the registry, and from the
/// server once no other watch of the client is left on its node.
pub(crate) struct Registration {
    link: std::sync::Weak<Link>,
    path: String,
    id: u64,
    /// The kind of a one-shot watch; `None` for a persistent one.
    kind: Option<WatchKind>,
}

impl Registration {
    /// The one-shot (`persistent: false`, a child watch) or persistent watch
    /// `id` on `path`.
    pub(crate) fn new(link: std::sync::Weak<Link>, path: &str, id: u64, persistent: bool) -> Registration {
        let kind = (!persistent).then_some(WatchKind::Child);
        Registration {
            link,
            path: path.to_owned(),
            id,
            kind,
        }
    }

    /// The one-shot data watch `id` on `path`.
    pub(crate) fn data(link: std::sync::Weak<Link>, path: &str, id: u64) -> Registration {
        Registration {
            link,
            path: path.to_owned(),
            id,
            kind: Some(WatchKind::Data),
        }
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        let Some(link) = self.link.upgrade() else { return };
        match self.kind {
            None => link.remove_persistent_watch(&self.path, self.id),
            Some(kind) => link.remove_one_shot_watch(&self.path, kind, self.id),
        }
    }
}

/// What the session thread reports as it goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LinkEvent {
    /// The connection dropped; the session may live on.
    Suspended,
    /// The same session is served again.
    Reconnected,
    /// A server said the session expired; a new one is being opened.
    Expired,
    /// A new session replaced the expired one.
    NewSession,
    /// A server refused the session's authentication: the client stops.
    AuthFailed,
}

/// Settings of a link, fixed when it opens.
#[derive(Clone, Debug)]
pub(crate) struct LinkConfig {
    /// The servers, `host[:port]` as written in the connect string.
    pub(crate) servers: Vec<String>,
    /// The chroot (`/app`), or empty.
    pub(crate) chroot: String,
    /// The session timeout asked of the server.
    pub(crate) session_timeout: Duration,
    /// How long the first session may take to open.
    pub(crate) connection_timeout: Duration,
    /// Plain TCP or TLS.
    pub(crate) security: crate::client::transport::Security,
}

/// The session and its connection, shared by every caller and the session
/// thread.
pub(crate) struct Link {
    config: LinkConfig,
    auth: Mutex<Vec<(String, Vec<u8>)>>,
    state: Mutex<State>,
    /// Notified when a connection is installed or lost, and on close.
    changed: Condvar,
    xid: AtomicI32,
    last_zxid: AtomicI64,
    /// Time with a request in flight, in nanoseconds, over every connection.
    waited: Arc<AtomicU64>,
    watches: Arc<Watches>,
    on_event: Box<dyn Fn(LinkEvent) + Send + Sync>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

struct State {
    conn: Option<Arc<Conn>>,
    /// The session's number: 0 for the first, one more for each session
    /// opened after an expiry.
    epoch: u64,
    /// A server said the session `epoch` expired.
    lost: bool,
    closed: bool,
    auth_failed: bool,
    session_id: i64,
    password: Vec<u8>,
    /// The session timeout the server granted.
    negotiated: Duration,
    /// Each server's failure in the latest round that found none serving.
    failures: Vec<ServerFailure>,
}

impl Link {
    /// Opens the first session, trying the servers in rounds until one takes
    /// it or the connection timeout passes; returns at once when every
    /// server refused the connection or has a name that does not resolve.
    pub(crate) fn open(
        config: LinkConfig,
        auth: Vec<(String, Vec<u8>)>,
        on_event: Box<dyn Fn(LinkEvent) + Send + Sync>,
    ) -> Result<Arc<Link>> {
        let started = Instant::now();
        let deadline = started + config.connection_timeout;
        let link = Arc::new(Link {
            config,
            auth: Mutex::new(auth),
            state: Mutex::new(State {
                conn: None,
                epoch: 0,
                lost: false,
                closed: false,
                auth_failed: false,
                session_id: 0,
                password: vec![0; 16],
                negotiated: Duration::ZERO,
                failures: Vec::new(),
            }),
            changed: Condvar::new(),
            xid: AtomicI32::new(1),
            last_zxid: AtomicI64::new(0),
            waited: Arc::new(AtomicU64::new(0)),
            watches: Arc::new(Watches::default()),
            on_event,
            thread: Mutex::new(None),
        });
        let mut patience = rounds::Patience::new(link.config.session_timeout, link.config.servers.len());
        let attached = loop {
            let round_started = Instant::now();
            match rounds::round(&link, Some(deadline), &patience) {
                rounds::Round::Attached(attached) => break attached,
                rounds::Round::Expired => {}
                rounds::Round::Failed(failures) => {
                    let definite = failures.iter().all(|f| f.cause().is_definite());
                    patience.after(&failures);
                    let failures = {
                        let mut state = link.state.lock();
                        state.failures = rounds::telling(&state.failures, failures);
                        state.failures.clone()
                    };
                    if definite || Instant::now() >= deadline {
                        return Err(Error::Unreachable {
                            after: started.elapsed(),
                            servers: failures,
                        });
                    }
                }
            }
            let pause = rounds::round_pause(round_started);
            std::thread::sleep(pause.min(deadline.saturating_duration_since(Instant::now())));
        };
        let (conn, stream, reader) = link.install(attached, true)?;
        let runner = Arc::clone(&link);
        let handle = std::thread::Builder::new()
            .name("zk-queue-session".into())
            .spawn(move || thread::run(runner, conn, stream, reader))
            .map_err(|e| Error::spawn("session", e))?;
        *link.thread.lock() = Some(handle);
        Ok(link)
    }

    /// Writes `requests` (pipelined, in order) on the current connection and
    /// returns where each one's reply will land. A request waits for a
    /// connection until `deadline` ([`Failure::Unreachable`] past it); one
    /// `fence`d to a session number is sent only in that session
    /// ([`Failure::SessionExpired`] otherwise).
    pub(crate) fn send(
        &self,
        requests: Vec<(Request<'_>, Option<WatchReg>)>,
        fence: Option<u64>,
        deadline: Instant,
    ) -> Vec<Pending> {
        let failed = |requests: Vec<(Request<'_>, Option<WatchReg>)>, failure: Failure| {
            requests
                .into_iter()
                .map(|(request, _)| Pending::failed(request.reply_kind(), failure.clone()))
                .collect()
        };
        let conn = match self.connection(fence, deadline) {
            Ok(conn) => conn,
            Err(failure) => return failed(requests, failure),
        };
        let Some(mut writer) = conn.writer_until(deadline) else {
            return failed(requests, Failure::Timeout);
        };
        let mut frames = Vec::new();
        let mut pending = Vec::with_capacity(requests.len());
        for (request, watch) in requests {
            let xid = self.next_xid();
            request.encode(xid, &self.config.chroot, &mut frames);
            let slot = Arc::new(Slot::default());
            if let Some(watch) = &watch {
                self.watches.sent(watch);
            }
            let kind = request.reply_kind();
            match conn.expect(
                xid,
                InFlight {
                    slot: Arc::clone(&slot),
                    watch,
                },
            ) {
                Ok(()) => pending.push(Pending { slot, kind }),
                Err(InFlight { watch, .. }) => {
                    if let Some(watch) = watch {
                        self.watches.unanswered(watch);
                    }
                    pending.push(Pending::failed(kind, Failure::ConnectionLoss));
                }
            }
        }
        conn.write(&mut writer, &frames, deadline);
        pending
    }

    /// The live connection, waiting for one until `deadline`.
    fn connection(&self, fence: Option<u64>, deadline: Instant) -> std::result::Result<Arc<Conn>, Failure> {
        let mut state = self.state.lock();
        loop {
            if state.closed {
                return Err(Failure::Closed);
            }
            if state.auth_failed {
                return Err(Failure::AuthFailed);
            }
            if fence.is_some_and(|epoch| epoch != state.epoch || state.lost) {
                return Err(Failure::SessionExpired);
            }
            if let Some(conn) = state.conn.as_ref().filter(|c| !c.is_dead()) {
                return Ok(Arc::clone(conn));
            }
            if Instant::now() >= deadline {
                return Err(Failure::Unreachable);
            }
            self.changed.wait_until(&mut state, deadline);
        }
    }

    /// Adds an identity to the session: sent now if connected, and after
    /// every reconnection. The server answers only a refusal, which ends
    /// the session ([`LinkEvent::AuthFailed`]).
    pub(crate) fn add_auth(&self, scheme: &str, auth: &[u8], deadline: Instant) -> std::result::Result<(), Failure> {
        self.auth.lock().push((scheme.to_owned(), auth.to_vec()));
        let conn = self.connection(None, deadline)?;
        let mut frame = Vec::new();
        Request::SetAuth { scheme, auth }.encode(XID_AUTH, &self.config.chroot, &mut frame);
        let mut writer = conn.writer_until(deadline).ok_or(Failure::Timeout)?;
        if conn.write(&mut writer, &frame, deadline) {
            Ok(())
        } else {
            Err(Failure::ConnectionLoss)
        }
    }

    /// Removes the persistent watch `id` on `path`, and the server's watches
    /// there once no other watch of the client is left on `path` or on its
    /// way. The answer is not waited for.
    pub(crate) fn remove_persistent_watch(&self, path: &str, id: u64) {
        self.remove_watch(path, |watches| watches.remove_persistent(path, id));
    }

    /// Removes the one-shot watch `id` of `kind` on `path`, and the server's
    /// watch there once it was the last watch of the client on `path`. The
    /// answer is not waited for.
    pub(crate) fn remove_one_shot_watch(&self, path: &str, kind: WatchKind, id: u64) {
        self.remove_watch(path, |watches| watches.remove_one_shot(path, kind, id));
    }

    /// Removes a registration with `remove`, which says whether the server's
    /// watches on `path` should go too; if so, asks the server, all with the
    /// writer held, so that no request setting a watch there can slip in
    /// between the check and the removal.
    fn remove_watch(&self, path: &str, remove: impl FnOnce(&Watches) -> bool) {
        let conn = self.state.lock().conn.clone().filter(|c| !c.is_dead());
        let deadline = Instant::now() + Duration::from_secs(1);
        let writer = conn
            .as_ref()
            .and_then(|conn| conn.writer_until(deadline).map(|w| (conn, w)));
        let Some((conn, mut writer)) = writer else {
            // Disconnected: the watch is simply not set again.
            remove(&self.watches);
            return;
        };
        if remove(&self.watches) {
            let xid = self.next_xid();
            let mut frame = Vec::new();
            // Any kind: servers before 3.9 remove persistent watches only so,
            // and no other watch of the client is on the path.
            Request::RemoveWatches { path, kind: 3 }.encode(xid, &self.config.chroot, &mut frame);
            let in_flight = InFlight {
                slot: Arc::new(Slot::default()),
                watch: None,
            };
            if conn.expect(xid, in_flight).is_ok() {
                conn.write(&mut writer, &frame, deadline);
            }
        }
    }

    /// The current session's number (see [`LinkEvent::NewSession`]).
    pub(crate) fn epoch(&self) -> u64 {
        self.state.lock().epoch
    }

    /// Whether session `epoch` is the current one and no server said it expired.
    pub(crate) fn is_live(&self, epoch: u64) -> bool {
        let state = self.state.lock();
        state.epoch == epoch && !state.lost
    }

    /// The current session's id (0 before the first).
    pub(crate) fn session_id(&self) -> i64 {
        self.state.lock().session_id
    }

    /// Whether a connection is up.
    pub(crate) fn is_connected(&self) -> bool {
        self.state.lock().conn.as_ref().is_some_and(|c| !c.is_dead())
    }

    /// Whether the server cannot have expired the session yet, whatever
    /// the session thread has noticed: a connection is up and a request
    /// written less than nine tenths of the session timeout ago was
    /// answered on it. (A server expires a session no sooner than its
    /// timeout after it last heard from it.)
    pub(crate) fn is_vouched(&self) -> bool {
        let state = self.state.lock();
        state
            .conn
            .as_ref()
            .is_some_and(|c| !c.is_dead() && c.since_vouched() < state.negotiated * 9 / 10)
    }

    /// How long, in all, a request of the session was in flight (periods
    /// still going on are not counted yet).
    pub(crate) fn waited(&self) -> Duration {
        Duration::from_nanos(self.waited.load(Ordering::Relaxed))
    }

    /// Each server's failure in the latest round that found none serving.
    pub(crate) fn failures(&self) -> Vec<ServerFailure> {
        let failures = self.state.lock().failures.clone();
        if failures.is_empty() {
            let cause = super::ConnectCause::TimedOut;
            return self
                .config
                .servers
                .iter()
                .map(|s| ServerFailure::new(with_port(s), cause.clone()))
                .collect();
        }
        failures
    }

    /// The watch registry.
    pub(crate) fn watches(&self) -> &Arc<Watches> {
        &self.watches
    }

    /// The chroot paths are relative to.
    pub(crate) fn chroot(&self) -> &str {
        &self.config.chroot
    }

    /// Closes the session: tells the server (waiting for its answer at most
    /// `grace`), fails every waiting and later request with
    /// [`Failure::Closed`], ends every watch and stops the session thread.
    pub(crate) fn close(&self, grace: Duration) {
        let conn = {
            let mut state = self.state.lock();
            if state.closed {
                return;
            }
            state.closed = true;
            self.changed.notify_all();
            state.conn.take()
        };
        if let Some(conn) = conn.filter(|c| !c.is_dead()) {
            let deadline = Instant::now() + grace;
            let xid = self.next_xid();
            let slot = Arc::new(Slot::default());
            let mut frame = Vec::new();
            Request::CloseSession.encode(xid, &self.config.chroot, &mut frame);
            let in_flight = InFlight {
                slot: Arc::clone(&slot),
                watch: None,
            };
            if conn.expect(xid, in_flight).is_ok() {
                if let Some(mut writer) = conn.writer_until(deadline) {
                    if conn.write(&mut writer, &frame, deadline) {
                        drop(writer);
                        let _ = Pending {
                            slot,
                            kind: Request::CloseSession.reply_kind(),
                        }
                        .wait(deadline);
                    }
                }
            }
            conn.kill();
            conn.fail_all(&self.watches, &Failure::Closed);
        }
        self.watches.ended();
        let handle = self.thread.lock().take();
        if let Some(handle) = handle {
            if handle.thread().id() != std::thread::current().id() && handle.join().is_err() {
                log::error!("the session thread panicked");
            }
        }
    }

    /// Whether [`close`](Self::close) was called.
    pub(crate) fn is_closed(&self) -> bool {
        self.state.lock().closed
    }

    fn next_xid(&self) -> i32 {
        // Positive, wrapping before the special negative ones.
        let xid = self.xid.fetch_add(1, Ordering::Relaxed);
        if xid >= i32::MAX - 1 {
            self.xid.store(1, Ordering::Relaxed);
        }
        xid.max(1)
    }

    /// Notes the latest transaction the server reported.
    fn saw_zxid(&self, zxid: i64) {
        self.last_zxid.fetch_max(zxid, Ordering::Relaxed);
    }
}
