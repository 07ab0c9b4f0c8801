//! Retry policies with Apache Curator's names and semantics, and [`Retry`],
//! the retries of one request under the client's policy.
//!
//! A policy is asked after each failed attempt whose error is retryable
//! ([`Error::is_retryable`](crate::Error::is_retryable): connection loss, no
//! answer in time, a replaced session). ZooKeeper's answers such as `NoNode`,
//! `NodeExists` or `BadVersion` are never retried: they are results.

use std::fmt;
use std::time::{Duration, Instant};

use super::{Session, ZkClient};
use crate::error::{Error, Result};

/// Decides whether, and after how long a sleep, a failed request is tried again.
///
/// `retry_count` is the number of retries already made (0 after the first
/// failure); `elapsed` is the time since the first attempt started.
///
/// ```
/// use std::time::Duration;
/// use zk_queue::{client::{RetryNTimes, RetryPolicy}};
/// let policy = RetryNTimes::new(2, Duration::from_millis(10));
/// assert_eq!(policy.allow_retry(0, Duration::ZERO), Some(Duration::from_millis(10)));
/// assert_eq!(policy.allow_retry(2, Duration::ZERO), None);
/// ```
pub trait RetryPolicy: Send + Sync + fmt::Debug {
    /// The sleep before the next attempt, or `None` to give up.
    fn allow_retry(&self, retry_count: u32, elapsed: Duration) -> Option<Duration>;
}

/// Retries up to `max_retries` times, sleeping a random multiple of
/// `base_sleep` that grows exponentially with each retry, capped at
/// `max_sleep`: Curator's `ExponentialBackoffRetry`.
///
/// ```
/// use std::time::Duration;
/// use zk_queue::{client::{ExponentialBackoffRetry, RetryPolicy}};
/// let policy = ExponentialBackoffRetry::new(Duration::from_millis(100), 3)
///     .max_sleep(Duration::from_millis(250));
/// let sleep = policy.allow_retry(2, Duration::ZERO).unwrap();
/// assert!(sleep >= Duration::from_millis(100) && sleep <= Duration::from_millis(250));
/// assert_eq!(policy.allow_retry(3, Duration::ZERO), None);
/// ```
#[derive(Clone, Debug)]
pub struct ExponentialBackoffRetry {
    base_sleep: Duration,
    max_retries: u32,
    max_sleep: Duration,
}

impl ExponentialBackoffRetry {
    /// Curator caps the retry count at 29 so the multiplier cannot overflow.
    const MAX_RETRIES_LIMIT: u32 = 29;

    /// A policy of at most `max_retries` retries (capped at 29) with sleeps
    /// based on `base_sleep`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use zk_queue::{client::{ExponentialBackoffRetry, RetryPolicy}};
    /// let policy = ExponentialBackoffRetry::new(Duration::from_millis(100), 3);
    /// assert!(policy.allow_retry(2, Duration::ZERO).is_some());
    /// assert!(policy.allow_retry(3, Duration::ZERO).is_none());
    /// ```
    pub fn new(base_sleep: Duration, max_retries: u32) -> Self {
        ExponentialBackoffRetry {
            base_sleep,
            max_retries: max_retries.min(Self::MAX_RETRIES_LIMIT),
            max_sleep: Duration::MAX,
        }
    }

    /// Caps each sleep. Defaults to no cap.
    ///
    /// ```
    /// use std::time::Duration;
    /// use zk_queue::{client::{ExponentialBackoffRetry, RetryPolicy}};
    /// let policy = ExponentialBackoffRetry::new(Duration::from_secs(1), 10).max_sleep(Duration::from_secs(2));
    /// assert!(policy.allow_retry(9, Duration::ZERO) <= Some(Duration::from_secs(2)));
    /// ```
    pub fn max_sleep(mut self, max_sleep: Duration) -> Self {
        self.max_sleep = max_sleep;
        self
    }
}

impl RetryPolicy for ExponentialBackoffRetry {
    fn allow_retry(&self, retry_count: u32, _elapsed: Duration) -> Option<Duration> {
        if retry_count >= self.max_retries {
            return None;
        }
        // As Curator: base * max(1, random in [0, 2^(retry + 1))).
        let bound = 1u32 << (retry_count + 1).min(Self::MAX_RETRIES_LIMIT + 1);
        let factor = fastrand::u32(0..bound).max(1);
        Some(self.base_sleep.saturating_mul(factor).min(self.max_sleep))
    }
}

/// Retries `n` times with a fixed sleep between attempts: Curator's `RetryNTimes`.
///
/// ```
/// use std::time::Duration;
/// use zk_queue::{client::{RetryNTimes, RetryPolicy}};
/// let policy = RetryNTimes::new(1, Duration::from_millis(5));
/// assert!(policy.allow_retry(0, Duration::ZERO).is_some());
/// assert!(policy.allow_retry(1, Duration::ZERO).is_none());
/// ```
#[derive(Clone, Debug)]
pub struct RetryNTimes {
    n: u32,
    sleep: Duration,
}

impl RetryNTimes {
    /// At most `n` retries, `sleep` apart.
    ///
    /// ```
    /// use std::time::Duration;
    /// use zk_queue::{client::{RetryNTimes, RetryPolicy}};
    /// let policy = RetryNTimes::new(3, Duration::from_millis(50));
    /// assert_eq!(policy.allow_retry(2, Duration::ZERO), Some(Duration::from_millis(50)));
    /// assert_eq!(policy.allow_retry(3, Duration::ZERO), None);
    /// ```
    pub fn new(n: u32, sleep: Duration) -> Self {
        RetryNTimes { n, sleep }
    }
}

impl RetryPolicy for RetryNTimes {
    fn allow_retry(&self, retry_count: u32, _elapsed: Duration) -> Option<Duration> {
        (retry_count < self.n).then_some(self.sleep)
    }
}

/// Retries once: Curator's `RetryOneTime`.
///
/// ```
/// use std::time::Duration;
/// use zk_queue::{client::{RetryOneTime, RetryPolicy}};
/// let policy = RetryOneTime::new(Duration::from_millis(5));
/// assert!(policy.allow_retry(0, Duration::ZERO).is_some());
/// assert!(policy.allow_retry(1, Duration::ZERO).is_none());
/// ```
#[derive(Clone, Debug)]
pub struct RetryOneTime(RetryNTimes);

impl RetryOneTime {
    /// One retry after `sleep`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use zk_queue::{client::{RetryOneTime, RetryPolicy}};
    /// let policy = RetryOneTime::new(Duration::from_millis(50));
    /// assert_eq!(policy.allow_retry(0, Duration::ZERO), Some(Duration::from_millis(50)));
    /// ```
    pub fn new(sleep: Duration) -> Self {
        RetryOneTime(RetryNTimes::new(1, sleep))
    }
}

impl RetryPolicy for RetryOneTime {
    fn allow_retry(&self, retry_count: u32, elapsed: Duration) -> Option<Duration> {
        self.0.allow_retry(retry_count, elapsed)
    }
}

/// Retries until `max_elapsed` has passed since the first attempt, `sleep`
/// apart: Curator's `RetryUntilElapsed`.
///
/// ```
/// use std::time::Duration;
/// use zk_queue::{client::{RetryPolicy, RetryUntilElapsed}};
/// let policy = RetryUntilElapsed::new(Duration::from_secs(1), Duration::from_millis(10));
/// assert!(policy.allow_retry(50, Duration::from_millis(500)).is_some());
/// assert!(policy.allow_retry(0, Duration::from_secs(1)).is_none());
/// ```
#[derive(Clone, Debug)]
pub struct RetryUntilElapsed {
    max_elapsed: Duration,
    sleep: Duration,
}

impl RetryUntilElapsed {
    /// Retries while less than `max_elapsed` has passed.
    ///
    /// ```
    /// use std::time::Duration;
    /// use zk_queue::{client::{RetryPolicy, RetryUntilElapsed}};
    /// let policy = RetryUntilElapsed::new(Duration::from_secs(10), Duration::from_millis(50));
    /// assert_eq!(policy.allow_retry(0, Duration::from_secs(9)), Some(Duration::from_millis(50)));
    /// assert_eq!(policy.allow_retry(0, Duration::from_secs(10)), None);
    /// ```
    pub fn new(max_elapsed: Duration, sleep: Duration) -> Self {
        RetryUntilElapsed { max_elapsed, sleep }
    }
}

impl RetryPolicy for RetryUntilElapsed {
    fn allow_retry(&self, _retry_count: u32, elapsed: Duration) -> Option<Duration> {
        (elapsed < self.max_elapsed).then_some(self.sleep)
    }
}

/// Retries without end, `sleep` apart: Curator's `RetryForever`. Each attempt
/// still has its own deadline, so a call never hangs on one request; it keeps
/// trying while the ensemble is away.
///
/// ```
/// use std::time::Duration;
/// use zk_queue::{client::{RetryForever, RetryPolicy}};
/// let policy = RetryForever::new(Duration::from_millis(10));
/// assert!(policy.allow_retry(u32::MAX, Duration::MAX).is_some());
/// ```
#[derive(Clone, Debug)]
pub struct RetryForever {
    sleep: Duration,
}

impl RetryForever {
    /// Retries forever, `sleep` apart.
    ///
    /// ```
    /// use std::time::Duration;
    /// use zk_queue::{client::{RetryForever, RetryPolicy}};
    /// let policy = RetryForever::new(Duration::from_millis(50));
    /// assert_eq!(policy.allow_retry(1_000, Duration::ZERO), Some(Duration::from_millis(50)));
    /// ```
    pub fn new(sleep: Duration) -> Self {
        RetryForever { sleep }
    }
}

impl RetryPolicy for RetryForever {
    fn allow_retry(&self, _retry_count: u32, _elapsed: Duration) -> Option<Duration> {
        Some(self.sleep)
    }
}

/// The retries of one request (or of one batch of puts) under the client's
/// [`RetryPolicy`]: when it started, the deadline no pause may pass, and how
/// many retries it made. Made once per request; after each retryable
/// failure, [`pause`](Retry::pause) decides whether to try again, counts the
/// retry and waits.
pub(crate) struct Retry<'a> {
    client: &'a ZkClient,
    /// Named in the log line of each retry.
    operation: &'static str,
    started: Instant,
    deadline: Option<Instant>,
    retries: u32,
}

impl<'a> Retry<'a> {
    /// The retries of an `operation` of `client` starting now, pausing never
    /// past `deadline` (`None`: no deadline but the policy's).
    pub(crate) fn new(client: &'a ZkClient, operation: &'static str, deadline: Option<Instant>) -> Retry<'a> {
        Retry {
            client,
            operation,
            started: Instant::now(),
            deadline,
            retries: 0,
        }
    }

    /// The time since the request started.
    pub(crate) fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// Decides by the retry policy whether a retryable `err`, met in session
    /// `session`, may be retried: if so, counts the retry and waits as the
    /// policy says (after an expiry, first for a new session), but not past
    /// the deadline nor `until`; if not, returns the error to give up with.
    pub(crate) fn pause(&mut self, err: Error, session: Session, until: Option<Instant>) -> Result<()> {
        let shared = &self.client.shared;
        if shared.is_closed() {
            return Err(Error::Closed);
        }
        let Some(sleep) = shared.config.retry.allow_retry(self.retries, self.started.elapsed()) else {
            return Err(err);
        };
        self.retries += 1;
        log::debug!("{} failed: {err}; retry {} in {sleep:?}", self.operation, self.retries);
        let deadline = crate::sync::earliest(self.deadline, until);
        let cap = |at: Instant| deadline.map_or(at, |d| at.min(d));
        if matches!(err, Error::SessionExpired) {
            let wait = shared.config.connection_timeout;
            shared.wait_for_new_session(session, cap(Instant::now() + wait));
        }
        std::thread::sleep(cap(Instant::now() + sleep).saturating_duration_since(Instant::now()));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exponential_backoff_grows_within_curators_bounds() {
        let base = Duration::from_millis(10);
        let policy = ExponentialBackoffRetry::new(base, 100);
        assert_eq!(policy.max_retries, 29, "capped like Curator");
        for retry in 0..10u32 {
            let upper = base * ((1u32 << (retry + 1)) - 1).max(1);
            for _ in 0..50 {
                let s = policy.allow_retry(retry, Duration::ZERO).unwrap();
                assert!(
                    s >= base && s <= upper,
                    "retry {retry}: {s:?} not in [{base:?}, {upper:?}]"
                );
            }
        }
        assert!(policy.allow_retry(29, Duration::ZERO).is_none());
    }

    #[test]
    fn exponential_backoff_respects_max_sleep() {
        let policy = ExponentialBackoffRetry::new(Duration::from_millis(10), 20).max_sleep(Duration::from_millis(15));
        for _ in 0..100 {
            assert!(policy.allow_retry(15, Duration::ZERO).unwrap() <= Duration::from_millis(15));
        }
    }

    #[test]
    fn policies_are_object_safe() {
        let policies: Vec<Box<dyn RetryPolicy>> = vec![
            Box::new(RetryNTimes::new(3, Duration::ZERO)),
            Box::new(RetryOneTime::new(Duration::ZERO)),
            Box::new(RetryUntilElapsed::new(Duration::from_secs(1), Duration::ZERO)),
            Box::new(RetryForever::new(Duration::ZERO)),
        ];
        let allowed: Vec<bool> = policies
            .iter()
            .map(|p| p.allow_retry(1, Duration::ZERO).is_some())
            .collect();
        assert_eq!(allowed, [true, false, true, true]);
    }
}
