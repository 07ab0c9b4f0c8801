//! What the servers tell of their sessions through four-letter words: the
//! leader's `dump` (every session it tracks) and every serving server's
//! `cons` (the sessions it has a connection for).

use std::collections::HashSet;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use zk_queue::inspect::{learners, server_mode, sessions_in_cons, sessions_in_dump, SessionSurvey};

/// The largest reply read; `dump` and `cons` of a busy server stay below.
const MAX_REPLY: u64 = 16 << 20;

/// The sessions as the servers of `connect` tell them, each word within
/// `timeout`, and a line saying how they were found (or why not).
pub fn survey(connect: &str, timeout: Duration) -> (SessionSurvey, String) {
    let servers: Vec<(String, Option<String>)> = servers(connect)
        .into_iter()
        .map(|server| {
            let mode = word(&server, "srvr", timeout)
                .ok()
                .and_then(|r| server_mode(&r).map(str::to_owned));
            (server, mode)
        })
        .collect();
    let serving: Vec<&(String, Option<String>)> = servers.iter().filter(|(_, mode)| mode.is_some()).collect();
    let Some((leader, mode)) = serving
        .iter()
        .find(|(_, mode)| matches!(mode.as_deref(), Some("leader" | "standalone")))
        .copied()
    else {
        return (
            SessionSurvey::default(),
            "unknown: no server of the connect string said it leads (srvr)".to_owned(),
        );
    };
    let mut notes = Vec::new();
    let mut dump = || match word(leader, "dump", timeout) {
        Ok(reply) => sessions_in_dump(&reply).or_else(|| {
            notes.push(format!("dump on {leader}: {}", first_line(&reply)));
            None
        }),
        Err(e) => {
            notes.push(format!("dump on {leader}: {e}"));
            None
        }
    };
    // A live session the server moves to a later expiry bucket while its
    // `dump` is being written can be missing from that one reply (the reply
    // lists the buckets there were when it began): the union of two dumps
    // taken one after the other misses it only if it moved during both.
    let live = dump().map(|mut live| {
        live.extend(dump().unwrap_or_default());
        live
    });
    let expected = match mode.as_deref() {
        Some("standalone") => Some(1),
        _ => word(leader, "mntr", timeout)
            .ok()
            .and_then(|r| learners(&r))
            .map(|l| l + 1),
    };
    let mut connected: Option<HashSet<i64>> = Some(HashSet::new());
    if expected != Some(serving.len()) {
        notes.push(format!(
            "connections unknown: {} of {} serving servers are in the connect string",
            serving.len(),
            expected.map_or("?".to_owned(), |e| e.to_string())
        ));
        connected = None;
    }
    for (server, _) in &serving {
        let Some(all) = connected.as_mut() else { break };
        match word(server, "cons", timeout) {
            Ok(reply) => match sessions_in_cons(&reply) {
                Some(found) => all.extend(found),
                None => {
                    notes.push(format!("cons on {server}: {}", first_line(&reply)));
                    connected = None;
                }
            },
            Err(e) => {
                notes.push(format!("cons on {server}: {e}"));
                connected = None;
            }
        }
    }
    let how = match (&live, &connected) {
        (Some(_), Some(_)) => format!("from dump on {leader} and cons on {} server(s)", serving.len()),
        (Some(_), None) => format!("from dump on {leader}; {}", notes.join("; ")),
        (None, Some(_)) => format!("from cons on {} server(s); {}", serving.len(), notes.join("; ")),
        (None, None) => format!("unknown: {}", notes.join("; ")),
    };
    (SessionSurvey { live, connected }, how)
}

/// The `host:port` servers of a connect string (`host[:port],...[/chroot]`).
pub fn servers(connect: &str) -> Vec<String> {
    connect
        .split(',')
        .filter_map(|entry| {
            let entry = entry.split_once("://").map_or(entry, |(_, rest)| rest);
            let entry = entry.split('/').next().unwrap_or_default().trim();
            if entry.is_empty() {
                return None;
            }
            let has_port = entry.rsplit_once(':').is_some_and(|(host, port)| {
                !port.is_empty()
                    && port.bytes().all(|b| b.is_ascii_digit())
                    && (host.ends_with(']') || !host.contains(':'))
            });
            Some(if has_port {
                entry.to_owned()
            } else {
                format!("{entry}:2181")
            })
        })
        .collect()
}

fn first_line(reply: &str) -> &str {
    reply.lines().next().unwrap_or("empty reply").trim()
}

/// Sends `word` to `server` and reads the whole reply, all within `timeout`.
fn word(server: &str, word: &str, timeout: Duration) -> io::Result<String> {
    let deadline = Instant::now() + timeout;
    let addr: SocketAddr = server
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "name not resolved"))?;
    let mut stream = TcpStream::connect_timeout(&addr, remaining(deadline)?)?;
    stream.set_write_timeout(Some(remaining(deadline)?))?;
    stream.write_all(word.as_bytes())?;
    let mut reply = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        stream.set_read_timeout(Some(remaining(deadline)?))?;
        match stream.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                reply.extend_from_slice(&chunk[..n]);
                if reply.len() as u64 > MAX_REPLY {
                    return Err(io::Error::new(io::ErrorKind::InvalidData, "reply too long"));
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(String::from_utf8_lossy(&reply).into_owned())
}

fn remaining(deadline: Instant) -> io::Result<Duration> {
    match deadline.checked_duration_since(Instant::now()) {
        Some(left) if !left.is_zero() => Ok(left),
        _ => Err(io::Error::new(io::ErrorKind::TimedOut, "timed out")),
    }
}

#[cfg(test)]
mod tests {
    use super::servers;

    #[test]
    fn servers_of_a_connect_string_get_the_default_port() {
        assert_eq!(servers("a:1,b/app,[::1]:3"), ["a:1", "b:2181", "[::1]:3"]);
    }
}
