//! The handshake: opening a connection to one server and presenting a
//! session (a new one, or one to reattach) within a timeout.

use std::io::ErrorKind;
use std::time::{Duration, Instant};

use crate::client::connect::cause_of;
pub(super) use crate::client::connect::left;
use crate::client::transport::{Security, Stream};
use crate::client::wire::{ConnectRequest, ConnectResponse, FrameReader};
use crate::client::ConnectCause;

/// The largest reply frame the client reads: far above any listing or item
/// the crate handles, and a bound on what a broken stream can make it hold.
pub(super) const MAX_FRAME: usize = 64 << 20;

/// A server that took the session.
pub(super) struct Attached {
    pub(super) stream: Stream,
    /// Holds whatever the server sent after its answer.
    pub(super) reader: FrameReader,
    pub(super) response: ConnectResponse,
    /// When the handshake was about to be written: the server saw the
    /// session no earlier.
    pub(super) asked: Instant,
}

/// How presenting a session to one server went.
pub(super) enum Attempt {
    /// The server took it.
    Attached(Attached),
    /// The server said the session expired.
    Expired,
    /// No answer from this server; why.
    Failed(ConnectCause),
}

/// Presents `request` to `server`, connection and answer within `timeout`.
/// A read-only server (one cut off from its quorum) is refused: the client
/// never asks for read-only sessions, and such a server closes the
/// connection or answers read-only.
pub(super) fn attach(server: &str, security: &Security, request: &ConnectRequest<'_>, timeout: Duration) -> Attempt {
    let deadline = Instant::now() + timeout;
    let mut stream = match Stream::open(server, security, timeout) {
        Ok(stream) => stream,
        Err(cause) => return Attempt::Failed(cause),
    };
    let mut frame = Vec::new();
    request.encode(&mut frame);
    let asked = Instant::now();
    if let Err(e) = stream.write_all_by(&frame, deadline) {
        return Attempt::Failed(cause_of(&e));
    }
    let mut reader = FrameReader::new(MAX_FRAME);
    loop {
        match reader.next_frame() {
            Ok(Some(frame)) => return answer(stream, reader, &frame, asked),
            Ok(None) => {}
            Err(_) => return Attempt::Failed(ConnectCause::NoSession),
        }
        if Instant::now() >= deadline {
            return Attempt::Failed(ConnectCause::NoSession);
        }
        if stream.set_read_timeout(left(deadline)).is_err() {
            return Attempt::Failed(ConnectCause::NoSession);
        }
        if let Err(cause) = read_answer(&mut reader, &mut stream) {
            return Attempt::Failed(cause);
        }
    }
}

/// The server's answer to the handshake.
fn answer(stream: Stream, reader: FrameReader, frame: &[u8], asked: Instant) -> Attempt {
    match ConnectResponse::decode(frame) {
        Ok(response) if response.is_expired() => Attempt::Expired,
        Ok(response) if response.read_only => Attempt::Failed(ConnectCause::Other("the server is read-only".into())),
        Ok(response) => Attempt::Attached(Attached {
            stream,
            reader,
            response,
            asked,
        }),
        Err(_) => Attempt::Failed(ConnectCause::NoSession),
    }
}

/// Reads what the server sent to the handshake, if anything came before
/// the socket's read timeout; a server that refused the client's TLS
/// certificate after the TLS handshake (TLS 1.3 servers do) says so.
fn read_answer(reader: &mut FrameReader, stream: &mut Stream) -> Result<(), ConnectCause> {
    match read_once(reader, stream) {
        Ok(true) => Ok(()),
        Ok(false) => Err(ConnectCause::NoSession),
        Err(e) => Err(tls_cause(&e).unwrap_or(ConnectCause::NoSession)),
    }
}

/// The TLS failure behind a read's error, if it is one.
#[cfg(feature = "tls")]
fn tls_cause(e: &std::io::Error) -> Option<ConnectCause> {
    crate::client::tls::failure_of(e).map(ConnectCause::Tls)
}

/// No read fails for TLS without it.
#[cfg(not(feature = "tls"))]
fn tls_cause(_: &std::io::Error) -> Option<ConnectCause> {
    None
}

/// Reads what the server sent, if anything came before the socket's read
/// timeout; fails, saying why, when the connection ended or broke.
pub(super) fn read_some(reader: &mut FrameReader, stream: &mut Stream) -> Result<(), String> {
    match read_once(reader, stream) {
        Ok(true) => Ok(()),
        Ok(false) => Err("closed by the server".into()),
        Err(e) => Err(e.to_string()),
    }
}

/// One read of what the server sent: `false` when the connection ended,
/// `true` when something came or nothing came before the socket's read
/// timeout.
fn read_once(reader: &mut FrameReader, stream: &mut Stream) -> std::io::Result<bool> {
    match reader.read_from(stream) {
        Ok(read) => Ok(read > 0),
        Err(e)
            if matches!(
                e.kind(),
                ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
            ) =>
        {
            Ok(true)
        }
        Err(e) => Err(e),
    }
}
