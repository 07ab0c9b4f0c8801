//! The byte stream of a connection to a server: plain TCP, or TLS over TCP
//! (feature `tls`). An enum, so the plain path costs a match and nothing
//! more: no lock, no copy, no indirection.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use super::connect::{dial, left};
use super::ConnectCause;

/// How the client speaks to servers: plain TCP unless TLS is configured.
#[derive(Clone, Debug, Default)]
pub(crate) struct Security {
    /// The TLS settings, if TLS is used.
    #[cfg(feature = "tls")]
    pub(crate) tls: Option<super::tls::TlsConfig>,
}

/// One half of a connection (a writer or the reader); the two halves of a
/// connection share its socket (and its TLS state).
pub(crate) enum Stream {
    /// Plain TCP.
    Plain(TcpStream),
    /// TLS over TCP.
    #[cfg(feature = "tls")]
    Tls(super::tls::TlsStream),
}

impl Stream {
    /// Opens a connection to `server` as `security` says, the TCP
    /// connection and any TLS handshake within `timeout`.
    pub(crate) fn open(server: &str, security: &Security, timeout: Duration) -> Result<Stream, ConnectCause> {
        let deadline = Instant::now() + timeout;
        let socket = dial(server, timeout)?;
        let _ = socket.set_nodelay(true);
        #[cfg(feature = "tls")]
        if let Some(tls) = &security.tls {
            let host = super::connect::host_port(server).0;
            return super::tls::handshake(socket, tls, host, deadline).map(Stream::Tls);
        }
        let _ = (security, deadline);
        Ok(Stream::Plain(socket))
    }

    /// The socket under the stream.
    pub(crate) fn socket(&self) -> &TcpStream {
        match self {
            Stream::Plain(socket) => socket,
            #[cfg(feature = "tls")]
            Stream::Tls(tls) => tls.socket(),
        }
    }

    /// The other half of the connection.
    pub(crate) fn try_clone(&self) -> io::Result<Stream> {
        match self {
            Stream::Plain(socket) => socket.try_clone().map(Stream::Plain),
            #[cfg(feature = "tls")]
            Stream::Tls(tls) => tls.try_clone().map(Stream::Tls),
        }
    }

    /// Writes all of `bytes` by `deadline`.
    pub(crate) fn write_all_by(&mut self, bytes: &[u8], deadline: Instant) -> io::Result<()> {
        match self {
            Stream::Plain(socket) => {
                socket.set_write_timeout(Some(left(deadline)))?;
                socket.write_all(bytes)
            }
            #[cfg(feature = "tls")]
            Stream::Tls(tls) => tls.write_all_by(bytes, deadline),
        }
    }

    /// Sets how long a read waits for data.
    pub(crate) fn set_read_timeout(&self, timeout: Duration) -> io::Result<()> {
        self.socket().set_read_timeout(Some(timeout))
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(socket) => socket.read(buf),
            #[cfg(feature = "tls")]
            Stream::Tls(tls) => tls.read(buf),
        }
    }
}
