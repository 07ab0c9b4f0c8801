//! Thread synchronisation used by the blocking calls.

use std::time::Instant;

mod backoff;
mod gate;
mod latch;
mod thread;

pub(crate) use backoff::Backoff;
pub(crate) use gate::{Gate, Pass as GatePass};
pub(crate) use latch::Latch;
pub(crate) use thread::Joiner;

/// The earlier of two optional deadlines, where `None` means never.
pub(crate) fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn earliest_prefers_any_deadline_to_never_and_the_sooner_of_two() {
        let now = Instant::now();
        let later = now + Duration::from_secs(1);
        assert_eq!(earliest(None, None), None);
        assert_eq!(earliest(Some(later), None), Some(later));
        assert_eq!(earliest(None, Some(now)), Some(now));
        assert_eq!(earliest(Some(later), Some(now)), Some(now));
    }
}
