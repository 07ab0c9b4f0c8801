//! ZooKeeper's four-letter-word commands (`ruok`, `conf`, `mntr`, ...) over plain TCP.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// Largest reply read from a four-letter word; `dump` and `wchs` on a test server stay far below.
const MAX_REPLY: u64 = 4 << 20;

/// Sends `word` to the server at `addr` and returns its whole reply.
///
/// `timeout` bounds the connect and the whole exchange: a paused server, whose kernel still
/// accepts the connection, makes this fail with [`io::ErrorKind::TimedOut`] or
/// [`io::ErrorKind::WouldBlock`] instead of hanging.
pub(crate) fn four_letter_word(addr: SocketAddr, word: &str, timeout: Duration) -> io::Result<String> {
    let deadline = Instant::now() + timeout;
    let mut stream = TcpStream::connect_timeout(&addr, timeout)?;
    stream.set_write_timeout(Some(remaining(deadline)?))?;
    stream.write_all(word.as_bytes())?;
    let mut reply = Vec::new();
    let mut limited = (&mut stream).take(MAX_REPLY);
    let mut chunk = [0u8; 4096];
    loop {
        stream_timeout(limited.get_ref(), deadline)?;
        match limited.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => reply.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    String::from_utf8(reply).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// Whether the server at `addr` answers `ruok` with `imok` within `timeout`.
pub(crate) fn ruok(addr: SocketAddr, timeout: Duration) -> bool {
    matches!(four_letter_word(addr, "ruok", timeout), Ok(reply) if reply == "imok")
}

fn stream_timeout(stream: &TcpStream, deadline: Instant) -> io::Result<()> {
    stream.set_read_timeout(Some(remaining(deadline)?))
}

fn remaining(deadline: Instant) -> io::Result<Duration> {
    match deadline.checked_duration_since(Instant::now()) {
        Some(left) if !left.is_zero() => Ok(left),
        _ => Err(io::Error::new(io::ErrorKind::TimedOut, "four-letter word timed out")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;
    use std::thread;

    #[test]
    fn reads_the_whole_reply_until_the_server_closes() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let server = thread::spawn(move || {
            let (mut conn, _) = listener.accept().expect("accept");
            let mut word = [0u8; 4];
            conn.read_exact(&mut word).expect("read word");
            assert_eq!(&word, b"ruok");
            conn.write_all(b"imok").expect("write reply");
        });
        assert!(ruok(addr, Duration::from_secs(5)));
        server.join().expect("fake server");
    }

    #[test]
    fn silent_server_times_out() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        // Accepted by the kernel's backlog but never answered, like a paused server.
        let started = Instant::now();
        let result = four_letter_word(addr, "ruok", Duration::from_millis(200));
        let err = result.expect_err("no reply must be an error");
        assert!(
            matches!(err.kind(), io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock),
            "{err:?}"
        );
        assert!(started.elapsed() < Duration::from_secs(2));
        drop(listener);
    }
}
