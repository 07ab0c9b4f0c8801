//! [`DeliverAt`]: when a delay queue's item is due.

use std::time::{SystemTime, UNIX_EPOCH};

use crate::error::{Error, Result};

/// When a [`DelayQueue`](crate::DelayQueue) item is due: epoch milliseconds, as Curator stores it.
///
/// ```
/// use std::time::{Duration, UNIX_EPOCH};
/// use zk_queue::DeliverAt;
/// let at = DeliverAt::from(UNIX_EPOCH + Duration::from_millis(1_700_000_000_000));
/// assert_eq!(at.epoch_millis(), 1_700_000_000_000);
/// assert!(DeliverAt::from_epoch_millis(0).is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct DeliverAt(i64);

impl DeliverAt {
    /// A due time in epoch milliseconds; it must be positive (as Curator requires).
    ///
    /// ```
    /// use zk_queue::DeliverAt;
    /// let at = DeliverAt::from_epoch_millis(1_900_000_000_000)?;
    /// assert_eq!(at.epoch_millis(), 1_900_000_000_000);
    /// assert!(DeliverAt::from_epoch_millis(-1).is_err());
    /// # Ok::<(), zk_queue::Error>(())
    /// ```
    pub fn from_epoch_millis(millis: i64) -> Result<DeliverAt> {
        if millis <= 0 {
            return Err(Error::InvalidArgument(format!(
                "a delivery time must be a positive epoch in milliseconds, not {millis}"
            )));
        }
        Ok(DeliverAt(millis))
    }

    /// Now, by this machine's clock: due at once. Curator's delay queues
    /// compare due times with the consumer's clock, and so does this crate.
    ///
    /// ```
    /// use std::time::SystemTime;
    /// use zk_queue::DeliverAt;
    /// let now = DeliverAt::now();
    /// assert!(now <= DeliverAt::from(SystemTime::now()));
    /// ```
    pub fn now() -> DeliverAt {
        DeliverAt::from(SystemTime::now())
    }

    /// `delay` from now, by this machine's clock.
    ///
    /// ```
    /// use std::time::Duration;
    /// use zk_queue::DeliverAt;
    /// let later = DeliverAt::after(Duration::from_secs(60));
    /// assert!(later.epoch_millis() - DeliverAt::now().epoch_millis() > 59_000);
    /// ```
    pub fn after(delay: std::time::Duration) -> DeliverAt {
        SystemTime::now()
            .checked_add(delay)
            .map_or(DeliverAt(i64::MAX), DeliverAt::from)
    }

    /// The due time in epoch milliseconds.
    ///
    /// ```
    /// use std::time::{Duration, UNIX_EPOCH};
    /// use zk_queue::DeliverAt;
    /// let at = DeliverAt::from(UNIX_EPOCH + Duration::from_secs(2));
    /// assert_eq!(at.epoch_millis(), 2_000);
    /// ```
    pub fn epoch_millis(self) -> i64 {
        self.0
    }
}

impl From<SystemTime> for DeliverAt {
    /// Times before the epoch (or its first millisecond) count as due at once.
    fn from(time: SystemTime) -> DeliverAt {
        let millis = time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis());
        DeliverAt(i64::try_from(millis).unwrap_or(i64::MAX).max(1))
    }
}
