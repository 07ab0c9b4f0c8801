//! The items a prefetching [`SimpleQueue`](super::SimpleQueue) handle has
//! claimed ahead (deleted from ZooKeeper) and not yet handed out.

use std::collections::VecDeque;
use std::time::Instant;

use parking_lot::{Mutex, MutexGuard};

use super::SimpleQueue;
use crate::error::Result;

#[derive(Debug, Default)]
pub(super) struct Ahead {
    /// Claimed items, oldest first.
    items: Mutex<VecDeque<Vec<u8>>>,
    /// Held while a window is claimed, so one handle's windows do not
    /// interleave and its items keep their order.
    claiming: Mutex<()>,
}

impl Ahead {
    /// The oldest claimed item; with `remove`, handed out.
    pub(super) fn first(&self, remove: bool) -> Option<Vec<u8>> {
        let mut items = self.items.lock();
        if remove {
            items.pop_front()
        } else {
            items.front().cloned()
        }
    }

    pub(super) fn len(&self) -> usize {
        self.items.lock().len()
    }

    /// Appends items claimed in order.
    pub(super) fn extend(&self, claimed: impl IntoIterator<Item = Vec<u8>>) {
        self.items.lock().extend(claimed);
    }

    /// Takes every claimed item out, oldest first.
    pub(super) fn drain(&self) -> Vec<Vec<u8>> {
        self.items.lock().drain(..).collect()
    }

    /// Puts items back at the front, in their order (they stay the oldest).
    pub(super) fn restore_front(&self, items: Vec<Vec<u8>>) {
        let mut held = self.items.lock();
        for item in items.into_iter().rev() {
            held.push_front(item);
        }
    }

    /// The right to claim a window, waiting at most until `deadline` for a
    /// thread that is claiming one; `None` if the deadline passed first.
    pub(super) fn claim_turn(&self, deadline: Option<Instant>) -> Option<MutexGuard<'_, ()>> {
        match deadline {
            Some(deadline) => self.claiming.try_lock_until(deadline),
            None => Some(self.claiming.lock()),
        }
    }
}

/// The claimed items of a handle, as its users see them.
impl SimpleQueue {
    /// Hands the items this handle claimed ahead (see
    /// [`SimpleQueueBuilder::prefetch`](super::SimpleQueueBuilder::prefetch)) and has not returned from a take
    /// back to the queue, as new items at its tail, and returns how many.
    /// Dropping the handle does the same and logs what it did. Items that
    /// could not be put back stay with the handle and the error is returned.
    ///
    /// # Errors
    /// The first error of the puts; connection errors leave the outcome of
    /// their items unknown (they stay with the handle and may also have been
    /// stored).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = zk_queue::SimpleQueue::builder(&client, "/jobs").prefetch(32).build()?;
    /// let first = queue.take()?;
    /// let returned = queue.release_prefetched()?;
    /// println!("{returned} items handed back");
    /// # Ok(())
    /// # }
    /// ```
    pub fn release_prefetched(&self) -> Result<usize> {
        let items = self.ahead.drain();
        if items.is_empty() {
            return Ok(0);
        }
        let results = match self.put_all(&items) {
            Ok(results) => results,
            Err(e) => {
                self.ahead.restore_front(items);
                return Err(e);
            }
        };
        let mut kept = Vec::new();
        let mut first_error = None;
        let mut returned = 0;
        for (item, result) in items.into_iter().zip(results) {
            match result {
                Ok(_) => returned += 1,
                Err(e) => {
                    first_error.get_or_insert(e);
                    kept.push(item);
                }
            }
        }
        self.ahead.restore_front(kept);
        match first_error {
            Some(e) => Err(e),
            None => Ok(returned),
        }
    }

    /// How many items this handle claimed ahead and holds for its next
    /// takes (always 0 without a [`prefetch`](super::SimpleQueueBuilder::prefetch)).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = zk_queue::SimpleQueue::builder(&client, "/jobs").prefetch(32).build()?;
    /// println!("{} items held", queue.prefetched());
    /// # Ok(())
    /// # }
    /// ```
    pub fn prefetched(&self) -> usize {
        self.ahead.len()
    }
}

impl Drop for SimpleQueue {
    /// Hands claimed-ahead items back to the queue (see
    /// [`SimpleQueue::release_prefetched`]), logging what it did.
    fn drop(&mut self) {
        let held = self.ahead.len();
        if held == 0 {
            return;
        }
        match self.release_prefetched() {
            Ok(n) => log::info!("{}: handed {n} prefetched items back to the queue", self.dir),
            Err(e) => log::error!(
                "{}: could not hand {} of {held} prefetched items back to the queue: {e}; unless that was a lost reply, they are lost",
                self.dir,
                self.ahead.len()
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hands_out_in_order_and_restores_at_the_front() {
        let ahead = Ahead::default();
        ahead.extend([b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]);
        assert_eq!(ahead.first(false).as_deref(), Some(&b"a"[..]), "peek keeps it");
        assert_eq!(ahead.first(true).as_deref(), Some(&b"a"[..]));
        let rest = ahead.drain();
        assert_eq!(rest, [b"b".to_vec(), b"c".to_vec()]);
        assert_eq!(ahead.len(), 0);
        ahead.extend([b"d".to_vec()]);
        ahead.restore_front(rest);
        let order: Vec<Vec<u8>> = std::iter::from_fn(|| ahead.first(true)).collect();
        assert_eq!(order, [b"b".to_vec(), b"c".to_vec(), b"d".to_vec()]);
    }

    #[test]
    fn a_claim_turn_waits_no_longer_than_its_deadline() {
        let ahead = Ahead::default();
        let held = ahead.claim_turn(None).unwrap();
        assert!(ahead.claim_turn(Some(Instant::now())).is_none());
        drop(held);
        assert!(ahead.claim_turn(Some(Instant::now())).is_some());
    }
}
