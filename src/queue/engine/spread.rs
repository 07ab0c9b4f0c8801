//! Spreading claims when consumers compete for one queue.
//!
//! Every consumer lists the same children in the same order. Claiming from
//! the head, N consumers would all read and try to delete (or lock) the same
//! first items, and all but one would lose each of them. A consumer that
//! claims alone never loses an item and claims whole windows from the head,
//! in order. Once a window loses a quarter of its items to another consumer:
//! - its windows are halved (down to one item), so that consumers share a
//!   short queue instead of each claiming all of it; clean windows grow them
//!   back by a quarter each;
//! - its next window starts at a random place among the first `windows`
//!   windows of what is left of its listing (the items skipped are left to
//!   the next listing), and it goes on from there while its windows are
//!   clean, so competing consumers settle into different stretches of the
//!   queue. Every lossy window doubles that stretch; eight clean windows in a
//!   row halve it, back to the head when the competition ends;
//! - a second lossy window in a row means others took much of the listing
//!   since it was read: the scanner lists again.
//!
//! A priority queue spreads only over the items of its most urgent priority,
//! a delay queue over the items already due, so the kind's order holds.
//!
//! This crate's consumers registered on one queue do not meet each other
//! this way: each claims its own stripe (`stripes`). Spreading is what
//! remains for the competition they cannot divide the queue with: Curator's
//! consumers (and other crates'), consumers of a queue without a registry
//! (a shard), and the moments before a join or a leave reaches everyone.

use crate::naming::{delay_epoch, item_prefix, Kind};

/// The most windows a jump may land in.
const MAX_WINDOWS: usize = 256;

/// Clean windows in a row after which the stretch is halved.
const CLEAN_TO_NARROW: usize = 8;

/// What the scanner does after a window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Next {
    /// Go on with the next items of the listing.
    Continue,
    /// Start the next window elsewhere in the listing ([`Spread::skip`]).
    Jump,
    /// The listing is stale: list again (and start elsewhere).
    Relist,
}

/// How far a consumer spreads its claims, and how many items it claims at
/// once; kept across passes.
#[derive(Debug)]
pub(super) struct Spread {
    /// The windows a jump may land in; 1 claims from the head.
    windows: usize,
    /// Items claimed at once while competing; `None`: the whole window.
    cap: Option<usize>,
    clean_in_a_row: usize,
    lossy_in_a_row: usize,
}

impl Spread {
    pub(super) fn new() -> Spread {
        Spread {
            windows: 1,
            cap: None,
            clean_in_a_row: 0,
            lossy_in_a_row: 0,
        }
    }

    /// Whether claims start anywhere but the head (another consumer was
    /// seen competing).
    pub(super) fn spreading(&self) -> bool {
        self.windows > 1
    }

    /// How many items to claim at once, of a `window` allowed: fewer while
    /// windows keep losing items, so that competing consumers share a short
    /// queue instead of all claiming its every item.
    pub(super) fn window(&self, window: usize) -> usize {
        self.cap.map_or(window, |cap| cap.min(window)).max(1)
    }

    /// How many of the `range` items that may be taken first to skip before
    /// the next window of `window` items: 0 while claiming alone.
    pub(super) fn skip(&self, range: usize, window: usize) -> usize {
        if self.windows <= 1 || range <= 1 {
            return 0;
        }
        let stretch = self.windows.saturating_mul(window.max(1)).min(range);
        fastrand::usize(0..stretch)
    }

    /// Records a window of `tried` items of which `lost` were taken by
    /// another consumer, out of a `window` allowed; says what to do next.
    pub(super) fn after(&mut self, tried: usize, lost: usize, window: usize) -> Next {
        // A quarter lost (any, for a small window) makes a window lossy.
        if lost == 0 || lost.saturating_mul(4) < tried {
            if let Some(cap) = self.cap {
                let grown = cap + cap / 4 + 1;
                self.cap = (grown < window).then_some(grown);
            }
            self.lossy_in_a_row = 0;
            self.clean_in_a_row += 1;
            if self.clean_in_a_row >= CLEAN_TO_NARROW {
                self.clean_in_a_row = 0;
                self.windows = (self.windows / 2).max(1);
            }
            return Next::Continue;
        }
        self.clean_in_a_row = 0;
        self.windows = self.windows.saturating_mul(2).min(MAX_WINDOWS);
        self.cap = Some((self.window(window) / 2).max(1));
        // Twice in a row: others took much of the listing since.
        self.lossy_in_a_row += 1;
        if self.lossy_in_a_row >= 2 {
            self.lossy_in_a_row = 0;
            Next::Relist
        } else {
            Next::Jump
        }
    }
}

/// How many items at the head of `pending` (sorted for `kind`) a consumer
/// may take in any order without breaking the kind's order: those of the
/// first item's priority, the items already due of a delay queue, all of a
/// plain or id queue.
pub(super) fn range<S: AsRef<str>>(kind: Kind, pending: impl Iterator<Item = S>, now_ms: i64) -> usize {
    match kind {
        Kind::Plain | Kind::Id => pending.count(),
        Kind::Delay => pending.take_while(|n| delay_epoch(n.as_ref()) <= now_ms).count(),
        Kind::Priority => {
            let mut pending = pending.peekable();
            let Some(first) = pending.peek().map(|n| item_prefix(n.as_ref()).to_owned()) else {
                return 0;
            };
            pending.take_while(|n| item_prefix(n.as_ref()) == first).count()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::naming::{delay_prefix, priority_prefix};

    #[test]
    fn a_consumer_that_never_loses_claims_from_the_head_a_whole_window_at_a_time() {
        let mut spread = Spread::new();
        for _ in 0..100 {
            assert_eq!(spread.after(64, 0, 64), Next::Continue);
            assert_eq!(spread.skip(10_000, 64), 0);
            assert_eq!(spread.window(64), 64);
        }
        // A few lost items in a big window are not a reason to move.
        assert_eq!(spread.after(64, 15, 64), Next::Continue);
        assert!(!spread.spreading());
    }

    #[test]
    fn a_lossy_window_halves_the_window_and_widens_the_stretch_and_two_in_a_row_relist() {
        let mut spread = Spread::new();
        assert_eq!(spread.after(64, 16, 64), Next::Jump);
        assert!(spread.spreading());
        assert_eq!(spread.window(64), 32);
        assert_eq!(spread.after(32, 32, 64), Next::Relist);
        assert_eq!((spread.windows, spread.window(64)), (4, 16));
        let skips: Vec<usize> = (0..200).map(|_| spread.skip(10_000, 16)).collect();
        assert!(skips.iter().all(|&s| s < 4 * 16), "{skips:?}");
        assert!(skips.iter().any(|&s| s > 16), "{skips:?}");
        // Even a queue shorter than a window is spread over.
        assert!((0..200).map(|_| spread.skip(10, 16)).any(|s| s > 0));
        for _ in 0..10 {
            spread.after(1, 1, 64);
        }
        assert_eq!(spread.window(64), 1);
        assert_eq!(spread.windows, MAX_WINDOWS);
    }

    #[test]
    fn clean_windows_grow_the_window_and_narrow_the_stretch_back_to_the_head() {
        let mut spread = Spread::new();
        spread.after(64, 64, 64);
        spread.after(32, 32, 64);
        assert!(spread.spreading());
        for _ in 0..CLEAN_TO_NARROW * 2 {
            let window = spread.window(64);
            spread.after(window, 0, 64);
        }
        assert!(!spread.spreading());
        assert_eq!(spread.window(64), 64);
        assert_eq!(spread.skip(10_000, 64), 0);
    }

    #[test]
    fn the_range_keeps_priority_and_due_order() {
        let names = ["queue-0000000001", "queue-0000000002"];
        assert_eq!(range(Kind::Plain, names.iter(), 0), 2);
        let priority = [
            format!("{}0000000001", priority_prefix(1)),
            format!("{}0000000002", priority_prefix(1)),
            format!("{}0000000003", priority_prefix(2)),
        ];
        assert_eq!(range(Kind::Priority, priority.iter(), 0), 2);
        let delay = [
            format!("{}0000000001", delay_prefix(1_000)),
            format!("{}0000000002", delay_prefix(2_000)),
            format!("{}0000000003", delay_prefix(3_000)),
        ];
        assert_eq!(range(Kind::Delay, delay.iter(), 2_000), 2);
        assert_eq!(range(Kind::Priority, std::iter::empty::<&str>(), 0), 0);
    }
}
