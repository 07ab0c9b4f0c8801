//! The session thread: it reads every reply and event of the connection,
//! pings while the callers are quiet, and after a disconnection presents the
//! session to the ensemble's servers, round after round, until one of them
//! reattaches it or says it expired (then it opens a new session).

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::attach::{read_some, Attached};
use super::conn::Conn;
use super::rounds::{round, round_pause, told_why, Patience, Round};
use super::slot::{Failure, RawReply};
use super::watches::WatchLists;
use super::{Link, LinkEvent};
use crate::client::transport::Stream;
use crate::client::wire::{
    Code, FrameReader, ReplyHeader, Request, WatchEvent, XID_AUTH, XID_PING, XID_SET_WATCHES, XID_WATCH_EVENT,
};
use crate::client::ServerFailure;
use crate::error::{Error, Result};

/// The largest `SetWatches` request sent (the server's packet limit is far
/// above): more watches go in several.
const SET_WATCHES_BYTES: usize = 128 * 1024;

/// Why a connection ended.
enum End {
    /// It dropped, stalled or broke; why.
    Lost(String),
    /// The server refused the session's authentication.
    AuthFailed,
}

/// The session thread's life: serve the connection, and after it drops
/// reconnect, until the link closes.
pub(super) fn run(link: Arc<Link>, mut conn: Arc<Conn>, mut stream: Stream, mut reader: FrameReader) {
    loop {
        let end = serve(&link, &conn, &mut stream, &mut reader);
        conn.kill();
        let closed = {
            let mut state = link.state.lock();
            if state.conn.as_ref().is_some_and(|c| Arc::ptr_eq(c, &conn)) {
                state.conn = None;
            }
            if matches!(end, End::AuthFailed) {
                state.auth_failed = true;
            }
            link.changed.notify_all();
            state.closed
        };
        let failure = if closed {
            Failure::Closed
        } else {
            Failure::ConnectionLoss
        };
        conn.fail_all(&link.watches, &failure);
        if closed {
            return;
        }
        match end {
            End::AuthFailed => {
                log::error!("zookeeper refused the session's authentication; the client stops");
                link.watches.ended();
                (link.on_event)(LinkEvent::AuthFailed);
                return;
            }
            End::Lost(why) => {
                log::debug!("zookeeper connection lost: {why}");
                link.watches.disconnected();
                (link.on_event)(LinkEvent::Suspended);
            }
        }
        match reconnect(&link) {
            Some((next, next_stream, next_reader)) => {
                conn = next;
                stream = next_stream;
                reader = next_reader;
            }
            None => return,
        }
    }
}

/// Rounds over the servers until one serves the session (or a new one after
/// an expiry), or the link closes.
fn reconnect(link: &Link) -> Option<(Arc<Conn>, Stream, FrameReader)> {
    let mut patience = Patience::new(link.config.session_timeout, link.config.servers.len());
    // The TLS refusals logged: each once per outage.
    let mut refused_tls: Vec<ServerFailure> = Vec::new();
    loop {
        if link.is_closed() {
            return None;
        }
        let started = Instant::now();
        match round(link, None, &patience) {
            Round::Attached(attached) => match link.install(attached, false) {
                Ok(installed) => return Some(installed),
                Err(Error::Closed) => return None,
                Err(e) => log::debug!("cannot use a new zookeeper connection: {e}"),
            },
            Round::Expired => {
                link.expire();
                continue;
            }
            Round::Failed(failures) => {
                log::debug!("no zookeeper server took the session: {failures:?}");
                // No retry mends a certificate: the operator must. (A server
                // closing the handshake may only be restarting.)
                let refused = failures
                    .iter()
                    .filter(|f| told_why(f.cause()) && f.cause().is_definite());
                for failure in refused {
                    if !refused_tls.contains(failure) {
                        log::warn!("zookeeper server {failure}");
                        refused_tls.push(failure.clone());
                    }
                }
                patience.after(&failures);
                link.state.lock().failures = failures;
            }
        }
        let pause = round_pause(started);
        let mut state = link.state.lock();
        if !state.closed {
            link.changed.wait_for(&mut state, pause);
        }
    }
}

impl Link {
    /// Makes `attached` the session's connection: authentication and (for a
    /// reattached session) the watches are sent first, then callers may write.
    pub(super) fn install(&self, attached: Attached, first: bool) -> Result<(Arc<Conn>, Stream, FrameReader)> {
        let Attached {
            stream,
            reader,
            response,
            asked,
        } = attached;
        let read_half = stream.try_clone().map_err(|e| Error::spawn("session", e))?;
        let reattached = {
            let state = self.state.lock();
            !first && !state.lost && state.session_id == response.session_id
        };
        let conn =
            Arc::new(Conn::new(stream, asked, Arc::clone(&self.waited)).map_err(|e| Error::spawn("session", e))?);
        let mut prime = Vec::new();
        for (scheme, auth) in self.auth.lock().iter() {
            Request::SetAuth { scheme, auth }.encode(XID_AUTH, &self.config.chroot, &mut prime);
        }
        if reattached {
            let zxid = self.last_zxid.load(std::sync::atomic::Ordering::Relaxed);
            for chunk in chunks(self.watches.lists(), SET_WATCHES_BYTES) {
                Request::SetWatches {
                    relative_zxid: zxid,
                    data: &chunk.data,
                    exist: &chunk.exist,
                    child: &chunk.child,
                    persistent: &chunk.persistent,
                    recursive: &chunk.recursive,
                }
                .encode(XID_SET_WATCHES, &self.config.chroot, &mut prime);
            }
        }
        if !prime.is_empty() {
            let deadline = Instant::now() + Duration::from_secs(1);
            let written = conn
                .writer_until(deadline)
                .is_some_and(|mut writer| conn.write(&mut writer, &prime, deadline));
            if !written {
                return Err(Error::Timeout {
                    operation: "set_watches",
                    after: Duration::from_secs(1),
                });
            }
        }
        let event = {
            let mut state = self.state.lock();
            if state.closed {
                // Closed while this connection was being made: it never serves.
                conn.kill();
                return Err(Error::Closed);
            }
            let event = if state.lost {
                state.epoch += 1;
                state.lost = false;
                Some(LinkEvent::NewSession)
            } else if first {
                None
            } else {
                Some(LinkEvent::Reconnected)
            };
            state.conn = Some(Arc::clone(&conn));
            state.session_id = response.session_id;
            state.password = response.password;
            state.negotiated = Duration::from_millis(response.timeout_ms.max(1).unsigned_abs().into());
            state.failures.clear();
            self.changed.notify_all();
            event
        };
        if let Some(event) = event {
            (self.on_event)(event);
        }
        Ok((conn, read_half, reader))
    }

    /// A server said the session expired: its watches are gone, and the next
    /// round opens a new session.
    fn expire(&self) {
        {
            let mut state = self.state.lock();
            state.lost = true;
            state.session_id = 0;
            state.password = vec![0; 16];
            self.changed.notify_all();
        }
        self.watches.ended();
        (self.on_event)(LinkEvent::Expired);
    }
}

/// Reads the connection until it ends: replies go to their callers, events to
/// the watches; a ping goes out when nothing was written for a third of the
/// session timeout, and a server silent for two thirds of it counts as lost.
fn serve(link: &Link, conn: &Conn, stream: &mut Stream, reader: &mut FrameReader) -> End {
    let negotiated = link.state.lock().negotiated;
    let ping_every = negotiated / 3;
    let silent_limit = negotiated * 2 / 3;
    let tick = (ping_every / 2).clamp(Duration::from_millis(10), Duration::from_secs(1));
    let mut last_heard = Instant::now();
    loop {
        loop {
            match reader.next_frame() {
                Ok(Some(frame)) => {
                    last_heard = Instant::now();
                    if let Some(end) = handle(link, conn, frame) {
                        return end;
                    }
                }
                Ok(None) => break,
                Err(e) => return End::Lost(e.to_string()),
            }
        }
        if conn.is_dead() || link.is_closed() {
            return End::Lost("the connection was given up".into());
        }
        if conn.since_last_send() >= ping_every {
            ping(link, conn, tick);
        }
        if last_heard.elapsed() >= silent_limit {
            return End::Lost(format!("no answer for {} ms", last_heard.elapsed().as_millis()));
        }
        // Wakes by the moment the silence would count as lost, not a tick
        // later: the rest of the session timeout is what the holders of
        // anything (a lock, leadership) have to hear of the loss before the
        // server can give it to another.
        let silence_ends = silent_limit.saturating_sub(last_heard.elapsed());
        let wait = tick.min(silence_ends).max(Duration::from_millis(1));
        if let Err(e) = stream.set_read_timeout(wait) {
            return End::Lost(e.to_string());
        }
        if let Err(why) = read_some(reader, stream) {
            return End::Lost(why);
        }
    }
}

/// Handles one frame from the server.
fn handle(link: &Link, conn: &Conn, frame: Vec<u8>) -> Option<End> {
    let (header, body_at) = match ReplyHeader::decode(&frame) {
        Ok((header, body)) => (header, frame.len() - body.len()),
        Err(e) => return Some(End::Lost(e.to_string())),
    };
    if header.zxid > 0 {
        link.saw_zxid(header.zxid);
    }
    let body = frame.get(body_at..).unwrap_or_default();
    match header.xid {
        XID_WATCH_EVENT => match WatchEvent::decode(body, &link.config.chroot) {
            Ok(event) => link.watches.dispatch(&event),
            Err(e) => return Some(End::Lost(e.to_string())),
        },
        XID_PING => conn.ping_answered(),
        XID_AUTH if header.err == Code::AUTH_FAILED => return Some(End::AuthFailed),
        XID_AUTH => {}
        XID_SET_WATCHES => {
            if !header.err.is_ok() {
                log::warn!("zookeeper did not set the session's watches again: {}", header.err);
            }
        }
        xid => conn.deliver(
            &link.watches,
            xid,
            RawReply {
                err: header.err,
                frame,
                body_at,
            },
        ),
    }
    None
}

/// Sends a ping unless a caller is writing (which keeps the session alive too).
fn ping(link: &Link, conn: &Conn, within: Duration) {
    let mut frame = Vec::new();
    Request::Ping.encode(XID_PING, &link.config.chroot, &mut frame);
    let deadline = Instant::now() + within;
    if let Some(mut writer) = conn.writer_until(Instant::now() + Duration::from_millis(10)) {
        conn.ping_written(&mut writer, &frame, deadline);
    }
}

/// One of the lists of [`WatchLists`].
type ListField = fn(&mut WatchLists) -> &mut Vec<String>;

/// Splits the watch lists into `SetWatches` requests of at most about
/// `limit` bytes of paths each.
fn chunks(lists: WatchLists, limit: usize) -> Vec<WatchLists> {
    let mut out = vec![WatchLists::default()];
    let mut size = 0;
    let groups: [(Vec<String>, ListField); 5] = [
        (lists.data, |l| &mut l.data),
        (lists.exist, |l| &mut l.exist),
        (lists.child, |l| &mut l.child),
        (lists.persistent, |l| &mut l.persistent),
        (lists.recursive, |l| &mut l.recursive),
    ];
    for (paths, field) in groups {
        for path in paths {
            if size + path.len() + 4 > limit && size > 0 {
                out.push(WatchLists::default());
                size = 0;
            }
            size += path.len() + 4;
            if let Some(last) = out.last_mut() {
                field(last).push(path);
            }
        }
    }
    out.retain(|l| !l.is_empty());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watch_lists_are_split_into_requests_of_bounded_size() {
        let lists = WatchLists {
            child: (0..10).map(|i| format!("/q{i}")).collect(),
            recursive: vec!["/r".into()],
            ..WatchLists::default()
        };
        let chunks = chunks(lists, 20);
        // Each path costs its length and 4 bytes: two of "/qN" fill 20.
        assert_eq!(chunks.len(), 5);
        assert_eq!(chunks[0].child, ["/q0", "/q1"]);
        assert_eq!(chunks[4].child, ["/q8", "/q9"]);
        assert_eq!(chunks[4].recursive, ["/r"]);
        assert!(super::chunks(WatchLists::default(), 20).is_empty());
    }
}
