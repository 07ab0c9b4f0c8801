//! A one-shot latch that a watcher opens and a blocked caller waits on.

use std::sync::Arc;
use std::time::Instant;

use crossbeam_channel::{Receiver, Sender};
use parking_lot::{Condvar, Mutex};

/// A latch: closed when made, opened once by [`Latch::open`], waited on with a
/// deadline. Clones share the same state.
///
/// Opening never blocks (it takes an uncontended lock for a moment), so
/// watcher callbacks may call it: they only signal.
#[derive(Clone, Default)]
pub(crate) struct Latch {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    open: Mutex<bool>,
    cond: Condvar,
    /// Opened with this one.
    also: Option<Latch>,
    /// The senders of [`Latch::receiver`]s, dropped (disconnecting their
    /// receivers) when the latch opens.
    senders: Mutex<Vec<Sender<()>>>,
    /// Opened when this one opens (see [`Latch::forward_to`]).
    followers: Mutex<Vec<Latch>>,
}

impl Latch {
    pub(crate) fn new() -> Latch {
        Latch::default()
    }

    /// A new latch whose opening also opens this one: a signal of its own
    /// that still wakes this latch's waiters.
    pub(crate) fn chained(&self) -> Latch {
        Latch {
            inner: Arc::new(Inner {
                also: Some(self.clone()),
                ..Inner::default()
            }),
        }
    }

    /// Opens the latch (and the one it is [chained](Self::chained) to) and
    /// wakes every waiter.
    pub(crate) fn open(&self) {
        *self.inner.open.lock() = true;
        self.inner.cond.notify_all();
        self.inner.senders.lock().clear();
        if let Some(also) = &self.inner.also {
            also.open();
        }
        // Taken out first: no lock is held while the followers open.
        let followers = std::mem::take(&mut *self.inner.followers.lock());
        for follower in followers {
            follower.open();
        }
    }

    /// Opens `follower` when this latch opens (at once if it is open): a
    /// latch made elsewhere that must also wake on this one's signal. The
    /// followers already open are forgotten here, so a long-lived latch
    /// followed by one latch per wait keeps only those still waiting.
    pub(crate) fn forward_to(&self, follower: &Latch) {
        let mut followers = self.inner.followers.lock();
        // Checked with the followers locked: an opening after this takes it.
        if self.is_open() {
            drop(followers);
            follower.open();
            return;
        }
        followers.retain(|f| !f.is_open());
        followers.push(follower.clone());
    }

    /// A channel that carries nothing and disconnects when the latch opens
    /// (at once if it is open), for callers that select over several
    /// signals.
    pub(crate) fn receiver(&self) -> Receiver<()> {
        let (sender, receiver) = crossbeam_channel::bounded(0);
        let mut senders = self.inner.senders.lock();
        // Checked with the senders locked: an opening after this drops it.
        if !self.is_open() {
            senders.push(sender);
        }
        receiver
    }

    /// Whether the latch is open.
    pub(crate) fn is_open(&self) -> bool {
        *self.inner.open.lock()
    }

    /// Waits until the latch is open or the deadline passes; returns whether it
    /// is open. Spurious wake-ups are absorbed by re-checking the flag.
    pub(crate) fn wait_until(&self, deadline: Option<Instant>) -> bool {
        let mut open = self.inner.open.lock();
        while !*open {
            match deadline {
                None => self.inner.cond.wait(&mut open),
                Some(d) => {
                    if self.inner.cond.wait_until(&mut open, d).timed_out() {
                        return *open;
                    }
                }
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_chained_latch_opens_its_parent_but_not_the_other_way() {
        let parent = Latch::new();
        let child = parent.chained();
        parent.open();
        assert!(!child.is_open());
        let (parent, child) = (Latch::new(), Latch::new().chained());
        let linked = parent.chained();
        linked.open();
        assert!(parent.is_open() && linked.is_open() && !child.is_open());
    }

    #[test]
    fn a_follower_opens_with_the_latch_it_follows_and_at_once_after() {
        let (leader, follower) = (Latch::new(), Latch::new());
        leader.forward_to(&follower);
        assert!(!follower.is_open());
        leader.open();
        assert!(follower.is_open());
        let late = Latch::new();
        leader.forward_to(&late);
        assert!(late.is_open());
        let unrelated = Latch::new();
        let other = Latch::new();
        unrelated.forward_to(&other);
        other.open();
        assert!(!unrelated.is_open(), "forwarding goes one way");
    }

    #[test]
    fn a_receiver_disconnects_when_the_latch_opens_and_at_once_after() {
        let l = Latch::new();
        let before = l.receiver();
        assert_eq!(before.try_recv(), Err(crossbeam_channel::TryRecvError::Empty));
        l.open();
        assert_eq!(before.recv(), Err(crossbeam_channel::RecvError));
        assert_eq!(l.receiver().recv(), Err(crossbeam_channel::RecvError));
    }

    #[test]
    fn wait_returns_false_at_the_deadline_when_never_opened() {
        let l = Latch::new();
        let start = Instant::now();
        assert!(!l.wait_until(Some(start + Duration::from_millis(30))));
        assert!(start.elapsed() >= Duration::from_millis(30));
    }

    #[test]
    fn open_from_another_thread_wakes_the_waiter() {
        let l = Latch::new();
        let l2 = l.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            l2.open();
        });
        assert!(l.wait_until(Some(Instant::now() + Duration::from_secs(10))));
        t.join().unwrap();
        assert!(l.wait_until(Some(Instant::now())), "stays open");
    }
}
