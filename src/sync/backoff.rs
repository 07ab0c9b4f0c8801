//! [`Backoff`]: the pauses of every loop that retries until it succeeds or
//! is told to stop (a consumer's scanner, a waiting `SimpleQueue` call, the
//! session renewal), and of a failed item's redeliveries. Requests retried a
//! bounded number of times follow a [`RetryPolicy`](crate::client::RetryPolicy)
//! instead.

use std::time::Duration;

/// Pauses that start at `first` and double after each failure, up to `max`;
/// a success starts them over.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Backoff {
    first: Duration,
    max: Duration,
    next: Duration,
    /// Failures in a row: pauses made since the last reset.
    failures: u32,
}

impl Backoff {
    pub(crate) const fn new(first: Duration, max: Duration) -> Backoff {
        Backoff {
            first,
            max,
            next: first,
            failures: 0,
        }
    }

    /// The pause to make now; the next one is twice as long, up to the cap.
    pub(crate) fn pause(&mut self) -> Duration {
        self.failures = self.failures.saturating_add(1);
        let pause = self.next;
        self.next = (self.next * 2).min(self.max);
        pause
    }

    /// After a success: the next pause is the first one again.
    pub(crate) fn reset(&mut self) {
        self.next = self.first;
        self.failures = 0;
    }

    /// The level to log the latest failure at: a passing fault is a
    /// warning; one that persists (a third failure in a row) is an error.
    pub(crate) fn log_level(&self) -> log::Level {
        if self.failures >= 3 {
            log::Level::Error
        } else {
            log::Level::Warn
        }
    }

    /// The pause after the `failures`-th failure in a row (1 for the first)
    /// when nothing remembers the pauses before: the first pause doubled
    /// `failures - 1` times, up to the cap. Zero for no failure.
    pub(crate) fn nth(&self, failures: u32) -> Duration {
        let Some(doublings) = failures.checked_sub(1) else {
            return Duration::ZERO;
        };
        let factor = 2u32.checked_pow(doublings.min(31)).unwrap_or(u32::MAX);
        self.first.checked_mul(factor).unwrap_or(self.max).min(self.max)
    }

    /// [`nth`](Self::nth) with equal jitter: a random pause between half of
    /// it and all of it, so items that failed together come back apart.
    pub(crate) fn nth_jittered(&self, failures: u32) -> Duration {
        let pause = self.nth(failures);
        let half = pause / 2;
        let spread = u64::try_from((pause - half).as_nanos()).unwrap_or(u64::MAX);
        half + Duration::from_nanos(fastrand::u64(..=spread))
    }

    /// The first pause and the cap.
    pub(crate) fn bounds(&self) -> (Duration, Duration) {
        (self.first, self.max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_double_up_to_the_cap_and_start_over_after_a_reset() {
        let ms = Duration::from_millis;
        let mut backoff = Backoff::new(ms(50), ms(300));
        let pauses: Vec<Duration> = (0..5).map(|_| backoff.pause()).collect();
        assert_eq!(pauses, [ms(50), ms(100), ms(200), ms(300), ms(300)]);
        backoff.reset();
        assert_eq!(backoff.pause(), ms(50));
    }

    #[test]
    fn the_nth_pause_doubles_up_to_the_cap_and_jitter_keeps_at_least_half() {
        let ms = Duration::from_millis;
        let backoff = Backoff::new(ms(100), ms(1_000));
        let pauses: Vec<Duration> = (0..6).map(|n| backoff.nth(n)).collect();
        assert_eq!(pauses, [ms(0), ms(100), ms(200), ms(400), ms(800), ms(1_000)]);
        assert_eq!(backoff.nth(u32::MAX), ms(1_000), "no overflow");
        let huge = Backoff::new(Duration::MAX, Duration::MAX);
        assert_eq!(huge.nth(40), Duration::MAX);
        for n in 1..8 {
            let full = backoff.nth(n);
            let jittered = backoff.nth_jittered(n);
            assert!(
                full / 2 <= jittered && jittered <= full,
                "{n}: {jittered:?} of {full:?}"
            );
        }
        assert_eq!(
            Backoff::new(Duration::ZERO, Duration::ZERO).nth_jittered(3),
            Duration::ZERO
        );
    }
}
