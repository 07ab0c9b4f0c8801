//! The items a prefetching [`SimpleQueue`](super::SimpleQueue) handle has
//! claimed ahead (deleted from ZooKeeper) and not yet handed out.

use std::collections::VecDeque;
use std::time::Instant;

use parking_lot::{Mutex, MutexGuard};

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
