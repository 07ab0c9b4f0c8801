//! One TCP connection of a session: the writing half, shared by every
//! caller (each writes its own requests, under a lock it waits for only
//! until its deadline), and the requests in flight, answered by the reader.

use std::collections::{HashMap, VecDeque};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Mutex, MutexGuard};

use super::slot::{Failure, RawReply, Slot};
use super::watches::{WatchReg, Watches};
use crate::client::transport::Stream;

/// A request in flight: where its answer goes and the watch it sets.
pub(super) struct InFlight {
    pub(super) slot: Arc<Slot>,
    pub(super) watch: Option<WatchReg>,
}

/// One connection.
pub(super) struct Conn {
    writer: Mutex<Stream>,
    /// The same socket, for shutting it down while a writer holds the lock.
    socket: TcpStream,
    in_flight: Mutex<Requests>,
    /// When each ping in flight was about to be written; the server answers
    /// them in order.
    pings: Mutex<VecDeque<Instant>>,
    /// The latest moment the server is known to have heard from the session
    /// at or after, in nanoseconds since `opened`: when the newest answered
    /// request was about to be written.
    vouched: AtomicU64,
    /// The session's time with a request in flight, in nanoseconds, shared
    /// by its connections.
    waited: Arc<AtomicU64>,
    dead: AtomicBool,
    /// When the handshake was about to be written.
    opened: Instant,
    /// When something was last written, in milliseconds since `opened`.
    last_send: AtomicU64,
}

/// The requests in flight, and since when one has been without a break.
#[derive(Default)]
struct Requests {
    /// Each request, with when it was noted (before it was written).
    by_xid: HashMap<i32, (InFlight, Instant)>,
    busy_since: Option<Instant>,
}

impl Conn {
    /// A connection whose handshake was about to be written at `asked`.
    /// Adds its time with a request in flight to `waited`.
    pub(super) fn new(stream: Stream, asked: Instant, waited: Arc<AtomicU64>) -> std::io::Result<Conn> {
        Ok(Conn {
            socket: stream.socket().try_clone()?,
            writer: Mutex::new(stream),
            in_flight: Mutex::new(Requests::default()),
            pings: Mutex::new(VecDeque::new()),
            vouched: AtomicU64::new(0),
            waited,
            dead: AtomicBool::new(false),
            opened: asked,
            last_send: AtomicU64::new(0),
        })
    }

    /// The writing half, if it can be had by `deadline`.
    pub(super) fn writer_until(&self, deadline: Instant) -> Option<MutexGuard<'_, Stream>> {
        self.writer.try_lock_until(deadline)
    }

    /// Whether the connection was given up.
    pub(super) fn is_dead(&self) -> bool {
        self.dead.load(Ordering::Acquire)
    }

    /// Notes a request whose frame is about to be written; gives it back if
    /// the connection is already given up (its requests were failed).
    pub(super) fn expect(&self, xid: i32, in_flight: InFlight) -> Result<(), InFlight> {
        let mut requests = self.in_flight.lock();
        // Checked under the map's lock: `fail_all` marks the connection dead
        // before it drains the map, so no request is left behind.
        if self.is_dead() {
            return Err(in_flight);
        }
        let now = Instant::now();
        requests.busy_since.get_or_insert(now);
        requests.by_xid.insert(xid, (in_flight, now));
        Ok(())
    }

    /// Writes whole frames with the writer held, by `deadline`. A write that
    /// fails or does not finish in time leaves the stream unusable: the
    /// connection is given up, and its requests fail.
    pub(super) fn write(&self, writer: &mut Stream, frames: &[u8], deadline: Instant) -> bool {
        match writer.write_all_by(frames, deadline) {
            Ok(()) => {
                self.last_send
                    .store(self.opened.elapsed().as_millis() as u64, Ordering::Relaxed);
                true
            }
            Err(e) => {
                log::debug!("writing to zookeeper failed: {e}");
                self.kill();
                false
            }
        }
    }

    /// How long ago something was last written.
    pub(super) fn since_last_send(&self) -> Duration {
        let last = Duration::from_millis(self.last_send.load(Ordering::Relaxed));
        self.opened.elapsed().saturating_sub(last)
    }

    /// Writes a ping, noting when it was about to be written.
    pub(super) fn ping_written(&self, writer: &mut Stream, frame: &[u8], deadline: Instant) {
        let mut pings = self.pings.lock();
        pings.push_back(Instant::now());
        if !self.write(writer, frame, deadline) {
            pings.pop_back();
        }
    }

    /// The oldest ping in flight was answered.
    pub(super) fn ping_answered(&self) {
        let written = self.pings.lock().pop_front();
        if let Some(written) = written {
            self.vouch(written);
        }
    }

    /// The server answered a request about to be written at `written`: it
    /// heard from the session no earlier.
    fn vouch(&self, written: Instant) {
        self.vouched
            .fetch_max(nanos(written.saturating_duration_since(self.opened)), Ordering::Relaxed);
    }

    /// How long ago the server surely last heard from the session: it
    /// cannot have expired it before the session timeout has passed since.
    pub(super) fn since_vouched(&self) -> Duration {
        let vouched = Duration::from_nanos(self.vouched.load(Ordering::Relaxed));
        self.opened.elapsed().saturating_sub(vouched)
    }

    /// The request answered by `xid`, no longer in flight.
    pub(super) fn answered(&self, xid: i32) -> Option<InFlight> {
        let (in_flight, written) = {
            let mut requests = self.in_flight.lock();
            let answered = requests.by_xid.remove(&xid)?;
            if requests.by_xid.is_empty() {
                self.idle(&mut requests);
            }
            answered
        };
        self.vouch(written);
        Some(in_flight)
    }

    /// No request is in flight any more: the time since the first of them
    /// was noted counts as waited.
    fn idle(&self, requests: &mut Requests) {
        if let Some(since) = requests.busy_since.take() {
            self.waited.fetch_add(nanos(since.elapsed()), Ordering::Relaxed);
        }
    }

    /// Hands a reply to its request's caller, setting its watch first.
    pub(super) fn deliver(&self, watches: &Watches, xid: i32, reply: RawReply) {
        match self.answered(xid) {
            Some(InFlight { slot, watch }) => {
                if let Some(watch) = watch {
                    watches.answered(watch, reply.err);
                }
                slot.fill(Ok(reply));
            }
            None => log::debug!("a reply to an unknown request ({xid}) was dropped"),
        }
    }

    /// Gives the connection up: the reader's next read fails, and so does
    /// every later write.
    pub(super) fn kill(&self) {
        self.dead.store(true, Ordering::Release);
        // Unblocks the reader, and a writer stuck on a full buffer.
        let _ = self.socket.shutdown(Shutdown::Both);
    }

    /// Fails every request still in flight with `failure`.
    pub(super) fn fail_all(&self, watches: &Watches, failure: &Failure) {
        self.dead.store(true, Ordering::Release);
        let drained: Vec<InFlight> = {
            let mut requests = self.in_flight.lock();
            self.idle(&mut requests);
            requests.by_xid.drain().map(|(_, (f, _))| f).collect()
        };
        for InFlight { slot, watch } in drained {
            if let Some(watch) = watch {
                watches.unanswered(watch);
            }
            slot.fill(Err(failure.clone()));
        }
    }
}

/// `duration` in whole nanoseconds (saturating).
fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}
