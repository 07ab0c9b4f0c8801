//! Whether a plain consumer keeps its arrivals watch, measured by whose
//! deletes it hears of.
//!
//! A persistent recursive watch tells its consumer of every create and
//! delete under the queue. A consumer alone hears of its own deletes only,
//! and saves a listing per pass. Competing consumers each hear of every
//! other consumer's deletes too, which cost them more than the listings
//! saved (four competing plain consumers lost a quarter to a half of their
//! rate that way). So a consumer keeps the watch while the deletes it hears
//! of are mostly its own: once more than a quarter of a sample of
//! [`SAMPLE`] deletes were another's, it gives the watch up (listing with a
//! one-shot child watch instead) and tries it again after [`FIRST_PAUSE`],
//! doubling the pause (with some jitter, so that competing consumers do not
//! all try at once) up to [`MAX_PAUSE`] while the competition lasts.

use std::time::{Duration, Instant};

/// Deletes heard of before a consumer judges whose they were.
pub(super) const SAMPLE: u64 = 32;

/// The first pause before a consumer that gave its watch up tries it again.
pub(super) const FIRST_PAUSE: Duration = Duration::from_secs(30);

/// The longest pause before it tries again.
pub(super) const MAX_PAUSE: Duration = Duration::from_secs(600);

/// What a consumer does with its arrivals watch after a pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    /// Keep it.
    Keep,
    /// Give it up: others delete under the queue too.
    GiveUp,
}

/// A consumer's count of deletes heard of and made, and when it may watch
/// again.
#[derive(Debug)]
pub(super) struct Contention {
    /// Deletes heard of when the sample began.
    heard_from: u64,
    /// This consumer's own deletes since the sample began.
    own: u64,
    /// The pause before the next try, once the watch is given up.
    pause: Duration,
    /// When the watch may be tried again; `None`: now.
    retry_at: Option<Instant>,
}

impl Contention {
    pub(super) fn new() -> Contention {
        Contention {
            heard_from: 0,
            own: 0,
            pause: FIRST_PAUSE,
            retry_at: None,
        }
    }

    /// Whether the consumer may keep (or register) the watch now.
    pub(super) fn may_watch(&self) -> bool {
        self.retry_at.is_none_or(|at| Instant::now() >= at)
    }

    /// Starts a sample on a watch (new, or registered again) that has heard
    /// of `heard` deletes so far.
    pub(super) fn watching(&mut self, heard: u64) {
        self.heard_from = heard;
        self.own = 0;
        self.retry_at = None;
    }

    /// Records a pass that deleted `own` items, on a watch that has heard of
    /// `heard` deletes since it began; says whether to keep the watch.
    pub(super) fn after_pass(&mut self, heard: u64, own: usize) -> Verdict {
        self.own += own as u64;
        let sampled = heard.saturating_sub(self.heard_from);
        if sampled < SAMPLE {
            return Verdict::Keep;
        }
        let others = sampled.saturating_sub(self.own);
        if others.saturating_mul(4) <= sampled {
            // Alone (or nearly): the next give-up pauses the shortest time.
            self.pause = FIRST_PAUSE;
            self.watching(heard);
            return Verdict::Keep;
        }
        let jitter = self.pause.mul_f64(fastrand::f64() / 4.0);
        self.retry_at = Instant::now().checked_add(self.pause + jitter);
        self.pause = (self.pause * 2).min(MAX_PAUSE);
        Verdict::GiveUp
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_consumer_that_hears_only_its_own_deletes_keeps_the_watch() {
        let mut contention = Contention::new();
        contention.watching(0);
        for pass in 1..=100u64 {
            // Its own delete events come before the deletes' replies.
            assert_eq!(contention.after_pass(pass * 3, 3), Verdict::Keep);
        }
        assert!(contention.may_watch());
    }

    #[test]
    fn others_deleting_more_than_a_quarter_make_a_consumer_give_the_watch_up_for_a_growing_pause() {
        let mut contention = Contention::new();
        contention.watching(0);
        // Half the deletes heard of are another consumer's.
        let mut heard = 0;
        let mut verdict = Verdict::Keep;
        for _ in 0..SAMPLE {
            heard += 2;
            verdict = contention.after_pass(heard, 1);
            if verdict == Verdict::GiveUp {
                break;
            }
        }
        assert_eq!(verdict, Verdict::GiveUp);
        assert!(heard >= SAMPLE, "judged on {heard} deletes only");
        assert!(!contention.may_watch());
        assert_eq!(contention.pause, FIRST_PAUSE * 2);
        // Tried again (once the pause is over) and still competing: a longer
        // pause, up to the longest.
        for _ in 0..10 {
            contention.watching(0);
            assert_eq!(contention.after_pass(SAMPLE, 0), Verdict::GiveUp);
        }
        assert_eq!(contention.pause, MAX_PAUSE);
    }

    #[test]
    fn a_few_deletes_by_others_are_not_competition() {
        let mut contention = Contention::new();
        contention.watching(0);
        // A quarter exactly: an operator removing an item now and then.
        assert_eq!(contention.after_pass(SAMPLE, (SAMPLE * 3 / 4) as usize), Verdict::Keep);
        assert!(contention.may_watch());
    }
}
