//! [`Backoff`]: the pauses of every loop that retries until it succeeds or
//! is told to stop (a consumer's scanner, a waiting `SimpleQueue` call, the
//! session renewal). Requests retried a bounded number of times follow a
//! [`RetryPolicy`](crate::RetryPolicy) instead.

use std::time::Duration;

/// Pauses that start at `first` and double after each failure, up to `max`;
/// a success starts them over.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Backoff {
    first: Duration,
    max: Duration,
    next: Duration,
}

impl Backoff {
    pub(crate) const fn new(first: Duration, max: Duration) -> Backoff {
        Backoff {
            first,
            max,
            next: first,
        }
    }

    /// The pause to make now; the next one is twice as long, up to the cap.
    pub(crate) fn pause(&mut self) -> Duration {
        let pause = self.next;
        self.next = (self.next * 2).min(self.max);
        pause
    }

    /// After a success: the next pause is the first one again.
    pub(crate) fn reset(&mut self) {
        self.next = self.first;
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
}
