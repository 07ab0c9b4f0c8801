//! The servers of a connect string, and opening a TCP connection to one
//! within a time; why a connection could not be made is a [`ConnectCause`].

use std::io::ErrorKind;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use super::ConnectCause;

/// The port a server listens on when the connect string names none.
const DEFAULT_PORT: u16 = 2181;

/// The `host:port` entries of a connect string
/// (`[scheme://]host[:port][,...][/chroot]`), as written.
pub(super) fn servers(connect_string: &str) -> Vec<String> {
    connect_string
        .split(',')
        .map(|entry| {
            let entry = entry.split_once("://").map_or(entry, |(_, rest)| rest);
            entry.split('/').next().unwrap_or_default().trim().to_owned()
        })
        .filter(|entry| !entry.is_empty())
        .collect()
}

/// The host and port of a `host[:port]` entry (`[v6]:port` for IPv6).
pub(super) fn host_port(server: &str) -> (&str, u16) {
    let (host, port) = match server.rsplit_once(':') {
        Some((host, port)) if !host.is_empty() && (host.ends_with(']') || !host.contains(':')) => {
            (host, port.parse().ok())
        }
        _ => (server, None),
    };
    (
        host.trim_start_matches('[').trim_end_matches(']'),
        port.unwrap_or(DEFAULT_PORT),
    )
}

/// The address of `server` as tried: `host:port`, with the port assumed
/// when the connect string names none.
pub(super) fn with_port(server: &str) -> String {
    let (host, port) = host_port(server);
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// Opens a TCP connection to `server` (each address its name resolves to,
/// in turn), each attempt within `timeout`.
pub(super) fn dial(server: &str, timeout: Duration) -> Result<TcpStream, ConnectCause> {
    let addresses: Vec<SocketAddr> = match host_port(server).to_socket_addrs() {
        Ok(addresses) => addresses.collect(),
        Err(_) => return Err(ConnectCause::NameNotResolved),
    };
    let mut cause = ConnectCause::NameNotResolved;
    for address in addresses {
        match TcpStream::connect_timeout(&address, timeout.max(Duration::from_millis(1))) {
            Ok(stream) => return Ok(stream),
            Err(e) => cause = cause_of(&e),
        }
    }
    Err(cause)
}

/// The time left until `deadline`, at least a millisecond (a zero timeout
/// means none to a socket).
pub(super) fn left(deadline: Instant) -> Duration {
    deadline
        .saturating_duration_since(Instant::now())
        .max(Duration::from_millis(1))
}

/// The cause an I/O error of a connection attempt stands for.
pub(super) fn cause_of(e: &std::io::Error) -> ConnectCause {
    match e.kind() {
        ErrorKind::ConnectionRefused => ConnectCause::Refused,
        ErrorKind::TimedOut | ErrorKind::WouldBlock => ConnectCause::TimedOut,
        _ => ConnectCause::Other(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use std::net::TcpListener;

    use super::*;

    #[test]
    fn servers_are_read_as_written_without_scheme_or_chroot() {
        assert_eq!(
            servers("a:1,tcp://b:2,[::1]:3/app/x"),
            ["a:1", "b:2", "[::1]:3"].map(String::from)
        );
        assert_eq!(servers("zk"), ["zk"]);
    }

    #[test]
    fn host_and_port_default_to_the_zookeeper_port() {
        assert_eq!(host_port("zk"), ("zk", 2181));
        assert_eq!(host_port("zk:2182"), ("zk", 2182));
        assert_eq!(host_port("[::1]:2183"), ("::1", 2183));
        assert_eq!(host_port("::1"), ("::1", 2181));
    }

    #[test]
    fn a_closed_port_is_refused_and_an_open_one_connects() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let open = listener.local_addr().unwrap().to_string();
        assert!(dial(&open, Duration::from_secs(1)).is_ok());
        drop(listener);
        assert_eq!(dial(&open, Duration::from_secs(1)).unwrap_err(), ConnectCause::Refused);
    }

    #[test]
    fn an_unknown_name_does_not_resolve() {
        assert_eq!(
            dial("no-such-host.invalid:2181", Duration::from_secs(1)).unwrap_err(),
            ConnectCause::NameNotResolved
        );
    }

    #[test]
    fn the_address_tried_names_the_port_assumed() {
        assert_eq!(with_port("127.0.0.1"), "127.0.0.1:2181");
        assert_eq!(with_port("zk:2182"), "zk:2182");
        assert_eq!(with_port("::1"), "[::1]:2181");
    }
}
