//! [`FaultProxy`]: an in-process TCP proxy between a client and a server that
//! injects network faults.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::Mutex;

use super::delay_line::DelayLine;
use super::proxy_port::{accepts, refuses, Port};

/// How often an idle proxy thread checks for shutdown.
const POLL: Duration = Duration::from_millis(50);

/// How often a refusing proxy asks whether its server accepts again.
const PROBE: Duration = Duration::from_millis(20);

/// A TCP proxy on a free loopback port that forwards to one server and can
/// break the way in between: cut every connection, swallow all traffic
/// (blackhole), delay it, or let a request through and drop its reply (so the
/// server applies a write that the client never hears of).
///
/// Point a client at [`connect_string`](Self::connect_string) instead of the
/// server's. While the server refuses connections (it is stopped, or
/// restarting), so does the proxy: it stops listening once a connection to
/// the server ends and the server refuses a new one (or refuses a client's
/// connection it accepted), and listens again once the server accepts. A
/// restart behind the proxy looks like a restart to its clients. The proxy
/// stops on drop. A TLS connection (to a secure client
/// port) passes too, as opaque bytes: cut, blackhole and delay apply to it,
/// the faults aimed at one request or reply do not.
///
/// ```no_run
/// use std::time::Duration;
/// use zk_queue::testing::{FaultProxy, TestingServer};
///
/// let server = TestingServer::start()?;
/// let proxy = FaultProxy::start(&server.connect_string())?;
/// let client = zk_queue::ZkClient::connect(&proxy.connect_string())?;
/// proxy.blackhole(); // requests now go unanswered
/// proxy.heal(); // back to normal (blackholed connections are cut)
/// proxy.drop_next_reply(); // the next reply is lost and its connection cut
/// proxy.drop_reply_to(zk_queue::testing::Request::Multi); // only the next multi's reply
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct FaultProxy {
    port: u16,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

struct Shared {
    stopping: AtomicBool,
    fault: Mutex<Fault>,
    delay: Mutex<Duration>,
    /// Both ends of every live connection, by its number, to cut them.
    connections: Mutex<Vec<(u64, TcpStream, TcpStream)>>,
    /// Numbers the connections, for [`Fault::DropReplyTo`].
    next_connection: AtomicU64,
    /// Live connections cut so far, by a fault.
    cut: AtomicUsize,
    port: Port,
    target: SocketAddr,
}

impl Shared {
    /// Forgets live connection `connection`; whether it was live.
    fn forget(&self, connection: u64) -> bool {
        let mut connections = self.connections.lock();
        let before = connections.len();
        connections.retain(|(n, ..)| *n != connection);
        connections.len() < before
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Fault {
    #[default]
    None,
    Blackhole,
    /// Drop the first reply that follows the next request, then cut.
    DropNextReply {
        request_seen: bool,
    },
    /// Drop the reply to the next request of this kind, then cut; once the
    /// request is seen, `target` holds its connection and xid. `then` more
    /// such replies are dropped after it, one at a time; after the last,
    /// every connection is blackholed if `blackhole_after`.
    DropReplyTo {
        request: Request,
        target: Option<(u64, i32)>,
        then: u32,
        blackhole_after: bool,
    },
    /// Drop the next request of this kind (and those after it in the same
    /// read), then cut: the server never sees it.
    DropRequestTo {
        request: Request,
    },
}

/// A kind of ZooKeeper request, for [`FaultProxy::drop_reply_to`].
///
/// ```
/// use zk_queue::testing::Request;
/// assert_ne!(Request::Create, Request::Multi);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Request {
    /// Any create (plain, `create2`, container or TTL).
    Create,
    /// A delete.
    Delete,
    /// An `exists`.
    Exists,
    /// A `getData`.
    GetData,
    /// A `getChildren` (either version).
    GetChildren,
    /// A multi (transaction).
    Multi,
    /// A `setData`.
    SetData,
    /// A `setACL`.
    SetAcl,
}

impl Request {
    /// Whether a request with ZooKeeper op code `op` is of this kind.
    fn matches(self, op: i32) -> bool {
        match self {
            Request::Create => matches!(op, 1 | 15 | 19 | 21),
            Request::Delete => op == 2,
            Request::Exists => op == 3,
            Request::GetData => op == 4,
            Request::GetChildren => matches!(op, 8 | 12),
            Request::Multi => op == 14,
            Request::SetData => op == 5,
            Request::SetAcl => op == 7,
        }
    }
}

impl FaultProxy {
    /// Starts a proxy to `target` (`host:port`) on a free loopback port.
    ///
    /// # Errors
    /// The target does not resolve, or no port could be bound.
    ///
    /// ```
    /// use zk_queue::testing::FaultProxy;
    /// let proxy = FaultProxy::start("127.0.0.1:2181")?;
    /// assert!(proxy.connect_string().starts_with("127.0.0.1:"));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn start(target: &str) -> io::Result<FaultProxy> {
        let target = target
            .to_socket_addrs()?
            .next()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the target has no address"))?;
        let port = Port::bind()?;
        let shared = Arc::new(Shared {
            stopping: AtomicBool::new(false),
            fault: Mutex::new(Fault::None),
            delay: Mutex::new(Duration::ZERO),
            connections: Mutex::new(Vec::new()),
            next_connection: AtomicU64::new(0),
            cut: AtomicUsize::new(0),
            port,
            target,
        });
        let port = shared.port.number();
        let acceptor = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("zk-fault-proxy".into())
                .spawn(move || accept_loop(&shared))?
        };
        log::debug!("fault proxy on 127.0.0.1:{port} to {target}");
        Ok(FaultProxy {
            port,
            shared,
            acceptor: Some(acceptor),
        })
    }

    /// The connect string of the proxy: `127.0.0.1:<port>`.
    ///
    /// ```
    /// use zk_queue::testing::FaultProxy;
    /// let proxy = FaultProxy::start("127.0.0.1:2181")?;
    /// let addr: std::net::SocketAddr = proxy.connect_string().parse().unwrap();
    /// assert!(addr.ip().is_loopback());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn connect_string(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Closes every open connection (new ones are accepted as usual).
    ///
    /// ```
    /// use zk_queue::testing::FaultProxy;
    /// let proxy = FaultProxy::start("127.0.0.1:2181")?;
    /// proxy.cut(); // clients see their connections drop and reconnect
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn cut(&self) {
        let connections = std::mem::take(&mut *self.shared.connections.lock());
        log::debug!("fault proxy: cutting {} connection(s)", connections.len());
        if !self.shared.stopping.load(Ordering::Acquire) {
            self.shared.cut.fetch_add(connections.len(), Ordering::Relaxed);
        }
        for (_, client, server) in connections {
            let _ = client.shutdown(Shutdown::Both);
            let _ = server.shutdown(Shutdown::Both);
        }
    }

    /// How many live connections the proxy cut so far: by
    /// [`cut`](Self::cut), by [`heal`](Self::heal) after a blackhole, and
    /// with a dropped reply or request. A connection that had ended already
    /// is not counted, so a fault that cut nothing leaves the count as it
    /// was.
    ///
    /// ```
    /// use zk_queue::testing::FaultProxy;
    /// let proxy = FaultProxy::start("127.0.0.1:2181")?;
    /// proxy.cut(); // no client is connected
    /// assert_eq!(proxy.connections_cut(), 0);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn connections_cut(&self) -> usize {
        self.shared.cut.load(Ordering::Relaxed)
    }

    /// Swallows all traffic both ways, on open and new connections: nothing
    /// is answered and nothing is closed, like a partition.
    ///
    /// ```
    /// use zk_queue::testing::FaultProxy;
    /// let proxy = FaultProxy::start("127.0.0.1:2181")?;
    /// proxy.blackhole(); // requests now time out
    /// proxy.heal();
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn blackhole(&self) {
        *self.shared.fault.lock() = Fault::Blackhole;
    }

    /// Lets the next request through and drops the reply that follows it,
    /// then cuts that connection, so the client sees the connection drop
    /// without an answer while the server has applied the request.
    ///
    /// ```
    /// use zk_queue::testing::FaultProxy;
    /// let proxy = FaultProxy::start("127.0.0.1:2181")?;
    /// proxy.drop_next_reply(); // the next request is applied, its reply lost
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn drop_next_reply(&self) {
        *self.shared.fault.lock() = Fault::DropNextReply { request_seen: false };
    }

    /// Lets the next request of kind `request` through (on any connection)
    /// and drops its reply, then cuts that connection: the server applied the
    /// request, and the client never hears of it. Other requests and replies,
    /// before and after it on that connection, pass as usual. Unlike
    /// [`drop_next_reply`](Self::drop_next_reply), other traffic (pings,
    /// reads) does not take the fault.
    ///
    /// ```
    /// use zk_queue::testing::{FaultProxy, Request};
    /// let proxy = FaultProxy::start("127.0.0.1:2181")?;
    /// proxy.drop_reply_to(Request::Create); // the next create is applied, its reply lost
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn drop_reply_to(&self, request: Request) {
        self.drop_replies_to(request, 1);
    }

    /// Like [`drop_reply_to`](Self::drop_reply_to), `times` times in a row:
    /// the replies to the next `times` requests of kind `request` are
    /// dropped, each with its connection, so a client that sends a request
    /// again after losing its reply loses that reply too (`0` sets no fault).
    ///
    /// ```
    /// use zk_queue::testing::{FaultProxy, Request};
    /// let proxy = FaultProxy::start("127.0.0.1:2181")?;
    /// proxy.drop_replies_to(Request::Create, 2); // a create and its resend, both applied, both unanswered
    /// assert!(proxy.dropping_reply());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn drop_replies_to(&self, request: Request, times: u32) {
        self.aim_reply_drops(request, times, false);
    }

    /// As [`drop_reply_to`](Self::drop_reply_to), and from the cut on every
    /// connection is blackholed (as [`blackhole`](Self::blackhole)) until
    /// [`heal`](Self::heal): the server applied the request, and the client
    /// cannot ask what became of it until the test lets it.
    ///
    /// ```
    /// use zk_queue::testing::{FaultProxy, Request};
    /// let proxy = FaultProxy::start("127.0.0.1:2181")?;
    /// proxy.drop_reply_to_then_blackhole(Request::Create); // applied, unanswered, no way to look
    /// proxy.heal(); // now the client may reconnect and read back
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn drop_reply_to_then_blackhole(&self, request: Request) {
        self.aim_reply_drops(request, 1, true);
    }

    /// Aims the drop of the replies to the next `times` requests of kind
    /// `request` (none for `0`), blackholing after the last if
    /// `blackhole_after`.
    fn aim_reply_drops(&self, request: Request, times: u32, blackhole_after: bool) {
        *self.shared.fault.lock() = match times.checked_sub(1) {
            Some(then) => Fault::DropReplyTo {
                request,
                target: None,
                then,
                blackhole_after,
            },
            None => Fault::None,
        };
    }

    /// Drops the next request of kind `request` (on any connection) before
    /// it reaches the server, with any request the client sent after it in
    /// the same write, then cuts that connection: the server never applied
    /// it, and the client cannot tell that from a lost reply.
    ///
    /// ```
    /// use zk_queue::testing::{FaultProxy, Request};
    /// let proxy = FaultProxy::start("127.0.0.1:2181")?;
    /// proxy.drop_request_to(Request::Delete); // the next delete never arrives
    /// assert!(proxy.dropping_request());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn drop_request_to(&self, request: Request) {
        *self.shared.fault.lock() = Fault::DropRequestTo { request };
    }

    /// Whether a fault set by [`drop_request_to`](Self::drop_request_to) is
    /// still waiting for its request.
    ///
    /// ```
    /// use zk_queue::testing::{FaultProxy, Request};
    /// let proxy = FaultProxy::start("127.0.0.1:2181")?;
    /// proxy.drop_request_to(Request::Delete);
    /// proxy.heal();
    /// assert!(!proxy.dropping_request());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn dropping_request(&self) -> bool {
        matches!(*self.shared.fault.lock(), Fault::DropRequestTo { .. })
    }

    /// Whether a fault set by [`drop_next_reply`](Self::drop_next_reply),
    /// [`drop_reply_to`](Self::drop_reply_to) or
    /// [`drop_replies_to`](Self::drop_replies_to) is still waiting for a reply
    /// to drop.
    ///
    /// ```
    /// use zk_queue::testing::{FaultProxy, Request};
    /// let proxy = FaultProxy::start("127.0.0.1:2181")?;
    /// assert!(!proxy.dropping_reply());
    /// proxy.drop_reply_to(Request::Multi);
    /// assert!(proxy.dropping_reply());
    /// proxy.heal();
    /// assert!(!proxy.dropping_reply());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn dropping_reply(&self) -> bool {
        matches!(
            *self.shared.fault.lock(),
            Fault::DropNextReply { .. } | Fault::DropReplyTo { .. }
        )
    }

    /// Delays every forwarded chunk by `delay` (zero for none), as a link's
    /// latency: chunks sent together arrive together, each `delay` after it
    /// was sent, in order.
    ///
    /// ```
    /// use std::time::Duration;
    /// use zk_queue::testing::FaultProxy;
    /// let proxy = FaultProxy::start("127.0.0.1:2181")?;
    /// proxy.set_delay(Duration::from_millis(300)); // a slow network
    /// proxy.set_delay(Duration::ZERO);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn set_delay(&self, delay: Duration) {
        *self.shared.delay.lock() = delay;
    }

    /// Ends any fault. Connections that were blackholed lost bytes, so they
    /// are cut; clients reconnect.
    ///
    /// ```
    /// use zk_queue::testing::FaultProxy;
    /// let proxy = FaultProxy::start("127.0.0.1:2181")?;
    /// proxy.blackhole();
    /// proxy.heal(); // blackholed connections are cut; new ones work
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn heal(&self) {
        let was = std::mem::take(&mut *self.shared.fault.lock());
        *self.shared.delay.lock() = Duration::ZERO;
        if was == Fault::Blackhole {
            self.cut();
        }
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.shared.stopping.store(true, Ordering::Release);
        self.cut();
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
    }
}

impl std::fmt::Debug for FaultProxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FaultProxy")
            .field("port", &self.port)
            .field("fault", &*self.shared.fault.lock())
            .finish()
    }
}

/// Accepts clients while the server accepts connections; while it refuses,
/// refuses too, and asks it again every [`PROBE`].
fn accept_loop(shared: &Arc<Shared>) {
    let target = shared.target;
    while !shared.stopping.load(Ordering::Acquire) {
        if shared.port.refusing() {
            if accepts(target) {
                if let Err(e) = shared.port.listen() {
                    log::warn!("fault proxy: cannot listen again on port {}: {e}", shared.port.number());
                }
            }
            std::thread::sleep(PROBE);
            continue;
        }
        match shared.port.accept() {
            Ok(Some(client)) => {
                if let Err(e) = connect(client, target, shared) {
                    log::debug!("fault proxy: cannot reach {target}: {e}");
                    if e.kind() == io::ErrorKind::ConnectionRefused {
                        shared.port.refuse();
                    }
                }
            }
            Ok(None) => std::thread::sleep(POLL),
            Err(e) => {
                log::warn!("fault proxy: accept failed: {e}");
                std::thread::sleep(POLL);
            }
        }
    }
}

/// Connects a new client to the target and starts a pump each way.
fn connect(client: TcpStream, target: SocketAddr, shared: &Arc<Shared>) -> io::Result<()> {
    client.set_nonblocking(false)?;
    let server = TcpStream::connect_timeout(&target, Duration::from_secs(5))?;
    for stream in [&client, &server] {
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(POLL))?;
    }
    let connection = shared.next_connection.fetch_add(1, Ordering::Relaxed);
    shared
        .connections
        .lock()
        .push((connection, client.try_clone()?, server.try_clone()?));
    for (from, to, replies) in [
        (client.try_clone()?, server.try_clone()?, false),
        (server, client, true),
    ] {
        let shared = Arc::clone(shared);
        std::thread::Builder::new()
            .name("zk-fault-proxy-pump".into())
            .spawn(move || pump(from, to, replies, connection, &shared))?;
    }
    Ok(())
}

/// Why a pump stopped.
#[derive(Clone, Copy, PartialEq, Eq)]
enum End {
    /// The proxy stops.
    Stopping,
    /// The side it reads from closed or broke.
    FromClosed,
    /// The side it writes to broke.
    ToBroke,
    /// A fault cut the connection (a dropped reply or request).
    Cut,
}

/// Copies bytes one way until either side closes, applying the fault; then
/// closes both sides. A connection that ended on its own side of the server
/// (not cut by the proxy) makes the proxy refuse if the server refuses now,
/// before its client sees the end and connects again.
fn pump(mut from: TcpStream, mut to: TcpStream, replies: bool, connection: u64, shared: &Shared) {
    let (end, line) = forward(&mut from, &mut to, replies, connection, shared);
    // What was forwarded before the end still arrives.
    if let Some(line) = line {
        line.drain();
    }
    if shared.forget(connection) {
        let server_ended = match end {
            End::FromClosed => replies,
            End::ToBroke => !replies,
            End::Stopping | End::Cut => false,
        };
        if end == End::Cut {
            shared.cut.fetch_add(1, Ordering::Relaxed);
        } else if server_ended && refuses(shared.target) {
            shared.port.refuse();
        }
    }
    let _ = from.shutdown(Shutdown::Both);
    let _ = to.shutdown(Shutdown::Both);
}

/// The loop of [`pump`]: forwards until the connection ends, and says why,
/// with the delay line in use if any.
///
/// Requests and replies pass in whole frames, so one request, or the reply
/// to one, can be dropped without the others.
fn forward(
    from: &mut TcpStream,
    to: &mut TcpStream,
    replies: bool,
    connection: u64,
    shared: &Shared,
) -> (End, Option<DelayLine>) {
    let mut buf = vec![0u8; 64 * 1024];
    let mut frames = Frames::default();
    // Chunks forwarded while a delay is set go through a delay line.
    let mut line: Option<DelayLine> = None;
    loop {
        if shared.stopping.load(Ordering::Acquire) {
            return (End::Stopping, line);
        }
        let n = match from.read(&mut buf) {
            Ok(0) => return (End::FromClosed, line),
            Ok(n) => n,
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => continue,
            Err(_) => return (End::FromClosed, line),
        };
        frames.push(&buf[..n]);
        let (out, mut cut) = aimed_faults(&mut frames, replies, connection, shared);
        let forward = {
            let mut fault = shared.fault.lock();
            match (*fault, replies) {
                (Fault::Blackhole, _) => false,
                (Fault::DropNextReply { request_seen: false }, false) => {
                    *fault = Fault::DropNextReply { request_seen: true };
                    true
                }
                (Fault::DropNextReply { request_seen: true }, true) => {
                    *fault = Fault::None;
                    cut = true;
                    false
                }
                _ => true,
            }
        };
        if forward && !out.is_empty() {
            let delay = *shared.delay.lock();
            // Once delayed, every later chunk goes through the line too, so
            // none overtakes another.
            if line.is_none() && !delay.is_zero() {
                match to.try_clone().and_then(DelayLine::new) {
                    Ok(new) => line = Some(new),
                    Err(_) => return (End::ToBroke, line),
                }
            }
            match &line {
                Some(line) => line.send(out, delay),
                None => {
                    if to.write_all(&out).is_err() {
                        return (End::ToBroke, line);
                    }
                }
            }
        }
        if cut {
            // The reply is lost and the connection with it.
            return (End::Cut, line);
        }
    }
}

/// Applies the faults aimed at one request or its reply to the whole frames
/// read so far: returns the bytes to forward, and whether the connection is
/// to be cut after them (its next frame dropped).
fn aimed_faults(frames: &mut Frames, replies: bool, connection: u64, shared: &Shared) -> (Vec<u8>, bool) {
    let mut out: Vec<u8> = Vec::new();
    let mut fault = shared.fault.lock();
    while let Some(frame) = frames.next_frame() {
        match (&mut *fault, replies, frame.header) {
            (Fault::DropRequestTo { request }, false, Some((_, op))) if request.matches(op) => {
                *fault = Fault::None;
                return (out, true);
            }
            (Fault::DropReplyTo { request, target, .. }, false, Some((xid, op)))
                if target.is_none() && request.matches(op) =>
            {
                *target = Some((connection, xid));
            }
            (
                Fault::DropReplyTo {
                    request,
                    target: Some(t),
                    then,
                    blackhole_after,
                },
                true,
                Some((xid, _)),
            ) if *t == (connection, xid) => {
                *fault = match then.checked_sub(1) {
                    Some(then) => Fault::DropReplyTo {
                        request: *request,
                        target: None,
                        then,
                        blackhole_after: *blackhole_after,
                    },
                    None if *blackhole_after => Fault::Blackhole,
                    None => Fault::None,
                };
                return (out, true);
            }
            _ => {}
        }
        out.extend_from_slice(&frame.bytes);
    }
    (out, false)
}

/// Splits one direction of a ZooKeeper connection into frames: a 4-byte
/// big-endian length, then the body. The first frame is the session
/// handshake; every later one starts with its xid (and, for a request, its
/// op code). A TLS connection (its first byte a TLS handshake record's)
/// passes as it comes, in chunks without headers: its frames cannot be
/// read, so the faults aimed at one request or reply do not apply to it.
#[derive(Default)]
struct Frames {
    buf: Vec<u8>,
    handshake_seen: bool,
    /// Whether the connection is TLS, once its first byte came.
    tls: Option<bool>,
}

/// The first byte of a TLS handshake record; a ZooKeeper connection starts
/// with the length of its handshake, whose first byte is 0.
const TLS_HANDSHAKE_RECORD: u8 = 0x16;

struct Frame {
    bytes: Vec<u8>,
    /// The xid and op code (the op code is meaningless in a reply).
    header: Option<(i32, i32)>,
}

impl Frames {
    fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    fn next_frame(&mut self) -> Option<Frame> {
        let first = *self.buf.first()?;
        if *self.tls.get_or_insert(first == TLS_HANDSHAKE_RECORD) {
            return Some(Frame {
                bytes: std::mem::take(&mut self.buf),
                header: None,
            });
        }
        let len = self.buf.get(..4)?;
        let len = usize::try_from(i32::from_be_bytes(len.try_into().ok()?)).unwrap_or(0);
        if self.buf.len() < 4 + len {
            return None;
        }
        let bytes: Vec<u8> = self.buf.drain(..4 + len).collect();
        let read = |at: usize| {
            bytes
                .get(at..at + 4)
                .map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
        };
        let header = if self.handshake_seen {
            read(4).map(|xid| (xid, read(8).unwrap_or(0)))
        } else {
            self.handshake_seen = true;
            None
        };
        Some(Frame { bytes, header })
    }
}
