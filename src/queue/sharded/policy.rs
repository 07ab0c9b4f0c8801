//! When a sharded queue adds a shard, and which shard a put goes to.
//!
//! Curator's `QueueSharderPolicies` and `QueueSharder`: a shard at or past
//! the threshold asks for a new shard, which only the elected leader adds,
//! up to the maximum. Curator's producers prefer shards until they pass the
//! threshold and again once a check finds them at half of it; this crate's
//! pick from what each shard holds as the producer reckons it (the latest
//! count plus its own puts since), so a shard drained below the threshold
//! takes puts again at the next check.

use std::time::Duration;

use crate::error::{Error, Result};

/// How a producer picks the shard of a put.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ShardChoice {
    /// The shard with the fewest items as this handle reckons them (the
    /// count at the latest check plus its own puts since).
    LeastLoaded,
    /// A random shard under the threshold (as this handle reckons it), or a
    /// random shard if none is: what Curator's `getQueue` does with its
    /// preferred shards.
    Random,
}

/// A sharded queue's policy: Curator's `QueueSharderPolicies` (same
/// defaults), and how puts pick a shard.
///
/// ```
/// use std::time::Duration;
/// use zk_queue::{ShardChoice, ShardPolicy};
/// let policy = ShardPolicy::new()
///     .threshold(5_000)
///     .check_interval(Duration::from_secs(5))
///     .max_shards(20)
///     .choice(ShardChoice::Random);
/// assert_eq!(policy.max_shards_value(), 20);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use]
pub struct ShardPolicy {
    threshold: usize,
    check_interval: Duration,
    max_shards: usize,
    choice: ShardChoice,
}

impl Default for ShardPolicy {
    fn default() -> Self {
        ShardPolicy::new()
    }
}

impl ShardPolicy {
    /// Curator's defaults: threshold 10,000, a check every 30 s, at most
    /// 10 shards; puts go to the least loaded shard.
    ///
    /// ```
    /// let policy = zk_queue::ShardPolicy::new();
    /// assert_eq!(policy.threshold_value(), 10_000);
    /// ```
    pub const fn new() -> ShardPolicy {
        ShardPolicy {
            threshold: 10_000,
            check_interval: Duration::from_secs(30),
            max_shards: 10,
            choice: ShardChoice::LeastLoaded,
        }
    }

    /// Items in a shard at which a new shard is wanted (Curator's
    /// `newQueueThreshold`). Defaults to 10,000; must be positive.
    ///
    /// ```
    /// let policy = zk_queue::ShardPolicy::new().threshold(1_000);
    /// assert_eq!(policy.threshold_value(), 1_000);
    /// ```
    pub const fn threshold(mut self, items: usize) -> Self {
        self.threshold = items;
        self
    }

    /// How often the shards are counted (Curator's `thresholdCheckMs`).
    /// Defaults to 30 s; must not be zero. A sharded queue of this crate also
    /// counts when its own puts push a shard to the threshold, and finds new
    /// shards the moment they are created.
    ///
    /// ```
    /// use std::time::Duration;
    /// let policy = zk_queue::ShardPolicy::new().check_interval(Duration::from_secs(1));
    /// assert_eq!(policy.check_interval_value(), Duration::from_secs(1));
    /// ```
    pub const fn check_interval(mut self, interval: Duration) -> Self {
        self.check_interval = interval;
        self
    }

    /// The most shards the leader adds up to (Curator's `maxQueues`).
    /// Defaults to 10; must be positive.
    ///
    /// ```
    /// let policy = zk_queue::ShardPolicy::new().max_shards(30);
    /// assert_eq!(policy.max_shards_value(), 30);
    /// ```
    pub const fn max_shards(mut self, shards: usize) -> Self {
        self.max_shards = shards;
        self
    }

    /// How a put picks its shard. Defaults to [`ShardChoice::LeastLoaded`].
    ///
    /// ```
    /// use zk_queue::{ShardChoice, ShardPolicy};
    /// let policy = ShardPolicy::new().choice(ShardChoice::Random);
    /// assert_eq!(policy.choice_value(), ShardChoice::Random);
    /// ```
    pub const fn choice(mut self, choice: ShardChoice) -> Self {
        self.choice = choice;
        self
    }

    /// The threshold set.
    ///
    /// ```
    /// assert_eq!(zk_queue::ShardPolicy::new().threshold_value(), 10_000);
    /// ```
    pub const fn threshold_value(&self) -> usize {
        self.threshold
    }

    /// The check interval set.
    ///
    /// ```
    /// use std::time::Duration;
    /// assert_eq!(zk_queue::ShardPolicy::new().check_interval_value(), Duration::from_secs(30));
    /// ```
    pub const fn check_interval_value(&self) -> Duration {
        self.check_interval
    }

    /// The maximum number of shards set.
    ///
    /// ```
    /// assert_eq!(zk_queue::ShardPolicy::new().max_shards_value(), 10);
    /// ```
    pub const fn max_shards_value(&self) -> usize {
        self.max_shards
    }

    /// The shard choice set.
    ///
    /// ```
    /// use zk_queue::{ShardChoice, ShardPolicy};
    /// assert_eq!(ShardPolicy::new().choice_value(), ShardChoice::LeastLoaded);
    /// ```
    pub const fn choice_value(&self) -> ShardChoice {
        self.choice
    }

    pub(super) fn validate(&self) -> Result<()> {
        let invalid = |what: &str| Err(Error::InvalidArgument(what.to_owned()));
        if self.threshold == 0 {
            return invalid("the shard threshold must be positive");
        }
        if self.check_interval.is_zero() {
            return invalid("the shard check interval must not be zero");
        }
        if self.max_shards == 0 {
            return invalid("the maximum number of shards must be positive");
        }
        Ok(())
    }

    /// Whether a shard counted at `items` asks for a new shard.
    pub(super) fn full(&self, items: usize) -> bool {
        items >= self.threshold
    }

    /// The shard a put goes to, of shards reckoned at `loads` items (at
    /// least one); `roll` is a random number.
    pub(super) fn pick(&self, loads: &[usize], roll: usize) -> usize {
        match self.choice {
            ShardChoice::LeastLoaded => (0..loads.len()).min_by_key(|&i| loads[i]).unwrap_or(0),
            ShardChoice::Random => {
                let under: Vec<usize> = (0..loads.len()).filter(|&i| !self.full(loads[i])).collect();
                match under.is_empty() {
                    true => roll % loads.len().max(1),
                    false => under[roll % under.len()],
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shard_is_full_at_the_threshold() {
        let policy = ShardPolicy::new().threshold(10);
        assert!(!policy.full(9) && policy.full(10) && policy.full(11));
    }

    #[test]
    fn puts_go_to_the_least_loaded_shard_or_a_random_one_under_the_threshold() {
        let least = ShardPolicy::new().threshold(10);
        assert_eq!(least.pick(&[7, 3, 9], 0), 1);
        assert_eq!(least.pick(&[12, 15, 11], 5), 2);
        let random = least.choice(ShardChoice::Random);
        for roll in 0..10 {
            assert_eq!(random.pick(&[12, 4, 10], roll), 1, "only one is under the threshold");
        }
        let picked: std::collections::HashSet<usize> = (0..10).map(|roll| random.pick(&[12, 13, 10], roll)).collect();
        assert_eq!(picked.len(), 3, "all full: any of them");
    }

    #[test]
    fn a_policy_without_room_or_time_is_refused() {
        assert!(ShardPolicy::new().threshold(0).validate().is_err());
        assert!(ShardPolicy::new().max_shards(0).validate().is_err());
        assert!(ShardPolicy::new().check_interval(Duration::ZERO).validate().is_err());
        assert!(ShardPolicy::new().validate().is_ok());
    }
}
