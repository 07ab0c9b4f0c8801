//! The fault proxy's port: it listens while the proxy's server accepts
//! connections and refuses while the server refuses, so that a server
//! stopped or restarting behind the proxy looks like one to its clients
//! (connection refused, not a connection accepted and then closed).
//!
//! While refusing, the port stays bound without listening: a connection to
//! it is refused by the kernel at once, and no other socket (an outgoing
//! connection's ephemeral port) can take it before the proxy listens again.

use std::io::{self, Read};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use socket2::{Domain, Protocol, SockAddr, Socket, Type};

/// Connections waiting to be accepted, at most.
const BACKLOG: i32 = 128;

/// How long a probe of the server may take to connect.
const PROBE_TIMEOUT: Duration = Duration::from_secs(1);

/// How long a probe's connection must stay open for the server to count as
/// up: a server waits for the client to speak first, while the listening
/// socket of a server being killed may still complete a connection that its
/// end resets a moment later.
const SETTLE: Duration = Duration::from_millis(50);

pub(super) struct Port {
    addr: SocketAddr,
    state: Mutex<State>,
}

enum State {
    Listening(TcpListener),
    /// Bound, not listening; `None` if the port could not be bound again
    /// (listening then binds it first).
    Refusing(Option<Socket>),
}

impl Port {
    /// A port listening on a free loopback port.
    pub(super) fn bind() -> io::Result<Port> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        Ok(Port {
            addr: listener.local_addr()?,
            state: Mutex::new(State::Listening(listener)),
        })
    }

    pub(super) fn number(&self) -> u16 {
        self.addr.port()
    }

    /// Whether the port refuses connections now.
    pub(super) fn refusing(&self) -> bool {
        matches!(*self.state.lock(), State::Refusing(_))
    }

    /// The next waiting connection, if the port listens and one waits.
    pub(super) fn accept(&self) -> io::Result<Option<TcpStream>> {
        let state = self.state.lock();
        let State::Listening(listener) = &*state else {
            return Ok(None);
        };
        match listener.accept() {
            Ok((stream, _)) => Ok(Some(stream)),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Stops listening: connections waiting and new ones are refused.
    pub(super) fn refuse(&self) {
        let mut state = self.state.lock();
        if let State::Listening(_) = &*state {
            // Closed first: a listening socket and a bound one cannot share
            // the port.
            *state = State::Refusing(None);
            let reserved = bound(self.addr);
            if let Err(e) = &reserved {
                log::warn!("fault proxy: port {} could not be kept bound: {e}", self.addr.port());
            }
            *state = State::Refusing(reserved.ok());
            log::debug!("fault proxy on {}: refusing, as its server does", self.addr);
        }
    }

    /// Listens again (if refusing).
    ///
    /// # Errors
    /// The port could not be bound (another socket took it) or listened on.
    pub(super) fn listen(&self) -> io::Result<()> {
        let mut state = self.state.lock();
        let State::Refusing(reserved) = &mut *state else {
            return Ok(());
        };
        let socket = match reserved.take() {
            Some(socket) => socket,
            None => bound(self.addr)?,
        };
        let listening = socket.listen(BACKLOG).and_then(|()| socket.set_nonblocking(true));
        if let Err(e) = listening {
            *reserved = Some(socket);
            return Err(e);
        }
        *state = State::Listening(socket.into());
        log::debug!("fault proxy on {}: listening again", self.addr);
        Ok(())
    }
}

/// A TCP socket bound to `addr`, not listening.
fn bound(addr: SocketAddr) -> io::Result<Socket> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    socket.bind(&SockAddr::from(addr))?;
    Ok(socket)
}

/// Whether `target` refuses connections now (nothing listens there), or is
/// going away: a connection it completes is reset or closed within
/// [`SETTLE`]. Asks again until it refuses or a connection stays open, for at
/// most [`PROBE_TIMEOUT`].
pub(super) fn refuses(target: SocketAddr) -> bool {
    let deadline = Instant::now() + PROBE_TIMEOUT;
    loop {
        match TcpStream::connect_timeout(&target, PROBE_TIMEOUT) {
            Err(e) => return e.kind() == io::ErrorKind::ConnectionRefused,
            Ok(probe) if stays_open(&probe) => return false,
            Ok(_) => {}
        }
        if Instant::now() >= deadline {
            return false;
        }
    }
}

/// Whether a probe's connection stays open, silent, for [`SETTLE`].
fn stays_open(mut probe: &TcpStream) -> bool {
    if probe.set_read_timeout(Some(SETTLE)).is_err() {
        return true;
    }
    match probe.read(&mut [0; 1]) {
        Ok(0) => false,
        Ok(_) => true,
        Err(e) => matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut),
    }
}

/// Whether `target` accepts a connection now (the probe is closed at once).
pub(super) fn accepts(target: SocketAddr) -> bool {
    TcpStream::connect_timeout(&target, PROBE_TIMEOUT).is_ok()
}
