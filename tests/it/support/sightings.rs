//! How many samples saw each participant hold (or lead), shared between a
//! checker that samples and the test, which waits until each was seen
//! before it stops the checker: a check that never saw someone hold would
//! prove nothing about them.

use std::sync::atomic::{AtomicU64, Ordering};

pub struct Sightings(Vec<AtomicU64>);

impl Sightings {
    pub fn new(participants: usize) -> Sightings {
        Sightings((0..participants).map(|_| AtomicU64::new(0)).collect())
    }

    /// Counts a sample that saw participant `n` hold, if `held`.
    pub fn saw(&self, n: usize, held: bool) {
        if held {
            self.0[n].fetch_add(1, Ordering::AcqRel);
        }
    }

    /// How many samples saw each hold.
    pub fn counts(&self) -> Vec<u64> {
        self.0.iter().map(|c| c.load(Ordering::Acquire)).collect()
    }

    /// Whether each was seen holding at least once.
    pub fn each_seen(&self) -> bool {
        self.counts().iter().all(|&c| c > 0)
    }
}
