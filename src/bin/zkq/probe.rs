//! Failing at once when no server listens: before the client is built,
//! each address of the connect string is tried with a plain TCP connect.
//! If every one refuses the connection (nothing listens there), `zkq`
//! fails at once naming them, instead of retrying for the whole session
//! timeout. An address that accepts, or does not answer within the probe's
//! timeout, or does not resolve, leaves the decision to the client.

use std::io;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

use anyhow::bail;

use crate::four_letter::servers;

/// The longest one probe waits for a TCP connection.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(1);

/// Fails if every server of `connect` refuses a TCP connection; each probe
/// waits at most [`PROBE_TIMEOUT`] (or `timeout` if shorter), and the first
/// accepted connection ends the probing.
pub fn refuse_unreachable(connect: &str, timeout: Duration) -> anyhow::Result<()> {
    let wait = PROBE_TIMEOUT.min(timeout).max(Duration::from_millis(1));
    let mut refused = Vec::new();
    for server in servers(connect) {
        let addrs: Vec<SocketAddr> = match server.to_socket_addrs() {
            Ok(addrs) => addrs.collect(),
            Err(_) => return Ok(()),
        };
        for addr in addrs {
            match TcpStream::connect_timeout(&addr, wait) {
                Ok(_) => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => refused.push(addr.to_string()),
                Err(_) => return Ok(()),
            }
        }
    }
    if refused.is_empty() {
        return Ok(());
    }
    bail!(
        "cannot connect to {connect}: every server refused the connection ({})",
        refused.join(", ")
    )
}
