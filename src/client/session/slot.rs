//! A reply slot: where the reader thread leaves the answer to one request,
//! and where the caller waits for it until its own deadline.

use std::sync::Arc;
use std::time::Instant;

use parking_lot::{Condvar, Mutex};

use crate::client::wire::{Code, ReplyKind};

/// Why a request got no answer from the server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Failure {
    /// The connection was lost with the request in flight (or before it could
    /// be sent whole): the server may or may not have applied it.
    ConnectionLoss,
    /// The deadline passed while a connected server had not answered.
    Timeout,
    /// The deadline passed while no server could be reached: the request was
    /// never sent.
    Unreachable,
    /// The request was fenced to a session that is gone.
    SessionExpired,
    /// The client was closed.
    Closed,
    /// The server refused the session's authentication.
    AuthFailed,
}

/// A reply as the reader thread found it: the header's error code and the
/// body, decoded by the caller.
#[derive(Debug)]
pub(crate) struct RawReply {
    pub(crate) err: Code,
    pub(crate) frame: Vec<u8>,
    pub(crate) body_at: usize,
}

impl RawReply {
    /// The reply's body (after the header).
    pub(crate) fn body(&self) -> &[u8] {
        self.frame.get(self.body_at..).unwrap_or_default()
    }
}

/// One request's slot, shared by its caller and the reader thread.
#[derive(Default)]
pub(crate) struct Slot {
    answer: Mutex<Option<Result<RawReply, Failure>>>,
    filled: Condvar,
}

impl Slot {
    /// Leaves the answer (the first one counts) and wakes the caller.
    pub(crate) fn fill(&self, answer: Result<RawReply, Failure>) {
        let mut slot = self.answer.lock();
        if slot.is_none() {
            *slot = Some(answer);
            self.filled.notify_all();
        }
    }

    /// Waits for the answer until `deadline`; `None` when it passed first.
    fn wait_until(&self, deadline: Instant) -> Option<Result<RawReply, Failure>> {
        let mut slot = self.answer.lock();
        loop {
            if let Some(answer) = slot.take() {
                return Some(answer);
            }
            if self.filled.wait_until(&mut slot, deadline).timed_out() {
                return slot.take();
            }
        }
    }
}

/// A request that was written: the slot its reply lands in, and how to read it.
#[must_use = "a pending request's answer is only known by waiting for it"]
pub(crate) struct Pending {
    pub(super) slot: Arc<Slot>,
    pub(super) kind: ReplyKind,
}

impl Pending {
    /// A request that failed before it was sent.
    pub(crate) fn failed(kind: ReplyKind, failure: Failure) -> Pending {
        let slot = Arc::new(Slot::default());
        slot.fill(Err(failure));
        Pending { slot, kind }
    }

    /// How the reply is decoded.
    pub(crate) fn kind(&self) -> ReplyKind {
        self.kind
    }

    /// Waits for the reply until `deadline`: [`Failure::Timeout`] when the
    /// server did not answer in time.
    pub(crate) fn wait(&self, deadline: Instant) -> Result<RawReply, Failure> {
        self.slot.wait_until(deadline).unwrap_or(Err(Failure::Timeout))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_slot_hands_over_the_first_answer_and_times_out_without_one() {
        let pending = Pending {
            slot: Arc::new(Slot::default()),
            kind: ReplyKind::Empty,
        };
        let soon = Instant::now() + Duration::from_millis(20);
        assert_eq!(pending.wait(soon).unwrap_err(), Failure::Timeout);
        let slot = Arc::clone(&pending.slot);
        std::thread::spawn(move || {
            slot.fill(Err(Failure::ConnectionLoss));
            slot.fill(Err(Failure::Closed));
        });
        let later = Instant::now() + Duration::from_secs(5);
        assert_eq!(pending.wait(later).unwrap_err(), Failure::ConnectionLoss);
    }
}
