//! One TLS connection: the handshake within a deadline, then the TLS state
//! shared by the connection's two halves.
//!
//! rustls keeps a connection's two directions in one state machine, so the
//! halves share it under a lock held only to encrypt or decrypt, never
//! across socket I/O: a writer encrypts its frames into a buffer under the
//! lock and writes that buffer to the socket after it (writers are already
//! serialized by the connection's writer lock, so records go out in
//! order); the reader reads the socket (with its read timeout) outside the
//! lock and takes the lock to decrypt what came. Anything the state machine
//! wants to send on its own (a key update's answer) goes out with the next
//! write, and the session pings at least every third of its timeout.

use std::io::{self, ErrorKind, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;
use rustls::ClientConnection;

use super::{of_handshake, TlsConfig, TlsError, TlsErrorKind};
use crate::client::connect::{cause_of, left};
use crate::client::ConnectCause;

/// Bytes read from the socket at a time.
const READ_CHUNK: usize = 32 * 1024;

/// The state both halves share.
struct Shared {
    tls: ClientConnection,
    /// Bytes read from the socket that rustls has not taken yet.
    incoming: Vec<u8>,
}

/// One half of a TLS connection (both halves share the TLS state).
pub(crate) struct TlsStream {
    shared: Arc<Mutex<Shared>>,
    socket: TcpStream,
    scratch: Vec<u8>,
}

impl TlsStream {
    /// The other half: the same TLS state, over a clone of the socket.
    pub(crate) fn try_clone(&self) -> io::Result<TlsStream> {
        Ok(TlsStream {
            shared: Arc::clone(&self.shared),
            socket: self.socket.try_clone()?,
            scratch: Vec::new(),
        })
    }

    /// The socket, for timeouts and shutdown.
    pub(crate) fn socket(&self) -> &TcpStream {
        &self.socket
    }

    /// Encrypts `bytes` and writes them, by `deadline`.
    pub(crate) fn write_all_by(&mut self, bytes: &[u8], deadline: Instant) -> io::Result<()> {
        let records = {
            let mut shared = self.shared.lock();
            shared.tls.writer().write_all(bytes)?;
            let mut records = Vec::with_capacity(bytes.len() + 64);
            while shared.tls.wants_write() {
                shared.tls.write_tls(&mut records)?;
            }
            records
        };
        self.socket.set_write_timeout(Some(left(deadline)))?;
        self.socket.write_all(&records)
    }
}

impl Shared {
    /// Hands rustls as much of `incoming` as it takes and decrypts it.
    fn absorb(&mut self) -> io::Result<()> {
        while !self.incoming.is_empty() {
            let mut rest = &self.incoming[..];
            let taken = match self.tls.read_tls(&mut rest) {
                Ok(0) => return Ok(()),
                Ok(_) => self.incoming.len() - rest.len(),
                // rustls holds as much plain text as it will: read it first.
                Err(_) => return Ok(()),
            };
            self.incoming.drain(..taken);
            self.tls
                .process_new_packets()
                .map_err(|e| io::Error::new(ErrorKind::InvalidData, of_handshake(e, true)))?;
        }
        Ok(())
    }
}

impl TlsStream {
    /// The plain text decrypted so far into `buf`, if any; `Ok(0)` at the
    /// end of the stream.
    fn plain_text(&self, buf: &mut [u8]) -> Option<io::Result<usize>> {
        let mut shared = self.shared.lock();
        if let Err(e) = shared.absorb() {
            return Some(Err(e));
        }
        match shared.tls.reader().read(buf) {
            Ok(n) => Some(Ok(n)),
            Err(e) if e.kind() == ErrorKind::WouldBlock => None,
            Err(e) if e.kind() == ErrorKind::UnexpectedEof => Some(Ok(0)),
            Err(e) => Some(Err(e)),
        }
    }
}

impl Read for TlsStream {
    /// Plain text, 0 at the end of the stream. At most one read of the
    /// socket, with its read timeout: bytes that complete no TLS record are
    /// kept, and the read fails as timed out (`WouldBlock`), so a server
    /// that trickles bytes holds the reader no longer than a silent one.
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Some(read) = self.plain_text(buf) {
            return read;
        }
        self.scratch.resize(READ_CHUNK, 0);
        let n = self.socket.read(&mut self.scratch)?;
        if n == 0 {
            return Ok(0);
        }
        self.shared.lock().incoming.extend_from_slice(&self.scratch[..n]);
        self.plain_text(buf)
            .unwrap_or_else(|| Err(io::Error::new(ErrorKind::WouldBlock, "no whole tls record yet")))
    }
}

/// The TLS failure behind a read's error, if it is one.
pub(crate) fn failure_of(e: &io::Error) -> Option<TlsError> {
    e.get_ref()?.downcast_ref::<TlsError>().cloned()
}

/// Runs the TLS handshake over `socket` with the server at `host`, by
/// `deadline`. A server that closes the connection (or answers something
/// that is not TLS) before sending any TLS record does not speak TLS.
pub(crate) fn handshake(
    mut socket: TcpStream,
    config: &TlsConfig,
    host: &str,
    deadline: Instant,
) -> Result<TlsStream, ConnectCause> {
    let name = config.server_name(host).map_err(ConnectCause::Tls)?;
    let mut tls = ClientConnection::new(config.rustls(), name)
        .map_err(|e| ConnectCause::Tls(TlsError::new(TlsErrorKind::Handshake, e.to_string()).caused_by(e)))?;
    tls.set_buffer_limit(None);
    let not_tls = || {
        ConnectCause::Tls(TlsError::new(
            TlsErrorKind::NotTls,
            "it closed the connection at the handshake",
        ))
    };
    let mut heard = false;
    while tls.is_handshaking() || tls.wants_write() {
        if Instant::now() >= deadline {
            return Err(ConnectCause::NoSession);
        }
        if tls.wants_write() {
            socket
                .set_write_timeout(Some(left(deadline)))
                .map_err(|e| cause_of(&e))?;
            match tls.write_tls(&mut socket) {
                Ok(_) => continue,
                Err(e) if is_reset(&e) && !heard => return Err(not_tls()),
                Err(e) if timed_out(&e) => continue,
                Err(e) => return Err(cause_of(&e)),
            }
        }
        socket
            .set_read_timeout(Some(left(deadline)))
            .map_err(|e| cause_of(&e))?;
        match tls.read_tls(&mut socket) {
            Ok(0) if heard => {
                return Err(ConnectCause::Tls(TlsError::new(
                    TlsErrorKind::Handshake,
                    "the server closed the connection during the handshake",
                )))
            }
            Ok(0) => return Err(not_tls()),
            Ok(_) => {
                if let Err(e) = tls.process_new_packets() {
                    return Err(ConnectCause::Tls(of_handshake(e, heard)));
                }
                heard = true;
            }
            Err(e) if timed_out(&e) => {}
            Err(e) if is_reset(&e) && !heard => return Err(not_tls()),
            Err(e) => return Err(cause_of(&e)),
        }
    }
    Ok(TlsStream {
        shared: Arc::new(Mutex::new(Shared {
            tls,
            incoming: Vec::new(),
        })),
        socket,
        scratch: Vec::new(),
    })
}

/// The read or write timed out.
fn timed_out(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
    )
}

/// The server reset or closed the connection.
fn is_reset(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted | ErrorKind::BrokenPipe | ErrorKind::UnexpectedEof
    )
}
