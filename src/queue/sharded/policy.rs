//! When a sharded queue adds a shard, and which shard a put goes to.
//!
//! Curator's `QueueSharderPolicies` and `QueueSharder`: a shard at or past
//! the threshold asks for a new shard, which only the elected leader adds,
//! up to the maximum. Curator's producers prefer shards until they pass the
//! threshold and again once a check finds them at half of it, and put into
//! full shards when none is preferred; this crate's pick among the shards
//! that have room as the producer reckons it (the latest count plus its own
//! puts since, counted again every `puts_per_count` puts), and never put
//! into a shard without room (see `room`).

use std::time::Duration;

use crate::error::{Error, Result};

/// How a producer picks the shard of a put.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ShardChoice {
    /// The shard with the fewest items as this handle reckons them (the
    /// count at the latest check plus its own puts since).
    LeastLoaded,
    /// A random shard under the threshold (as this handle reckons it), as
    /// Curator's `getQueue` picks among its preferred shards (but never,
    /// as Curator's does when none is preferred, a full one).
    Random,
}

/// What a put does when every shard is full and the maximum number of
/// shards is reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WhenFull {
    /// It fails at once: `put` with [`Error::Full`](crate::Error::Full),
    /// `put_timeout` and `try_put` with [`PutError::Full`](crate::PutError::Full),
    /// which gives the item back.
    Refuse,
    /// It waits for a consumer to make room (or, until the maximum, for a
    /// new shard): `put` without end, `put_timeout` until its deadline, then
    /// as [`Refuse`](Self::Refuse); `try_put` never waits.
    Wait,
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
    puts_per_count: usize,
    when_full: WhenFull,
    run_for_leader: bool,
}

impl Default for ShardPolicy {
    fn default() -> Self {
        ShardPolicy::new()
    }
}

impl ShardPolicy {
    /// Curator's defaults: threshold 10,000, a check every 30 s, at most
    /// 10 shards; and this crate's: puts go to the least loaded shard, a
    /// shard is counted again after 64 of this handle's puts to it, a put
    /// into a full queue is refused, and the handle runs for leader.
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
            puts_per_count: 64,
            when_full: WhenFull::Refuse,
            run_for_leader: true,
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
    /// counts a shard when its puts need a fresh count (see
    /// [`puts_per_count`](Self::puts_per_count)), its leader checks when a
    /// follower asks for a shard, and it finds new shards the moment they
    /// are created.
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

    /// How many of this handle's puts a shard may take between two counts
    /// of it (one `exists`, reading its number of children). Defaults to
    /// 64; must be positive. It bounds what producers that put at once can
    /// overfill a shard by: with `n` handles putting into a shard together,
    /// it holds at most `threshold + (n - 1) * puts_per_count` item nodes
    /// (see [`ShardedQueue`](crate::ShardedQueue)); a single producer keeps
    /// to the threshold. Smaller is tighter and costs a count more often
    /// (and, with background puts, a wait for this handle's puts in flight
    /// to that shard).
    ///
    /// ```
    /// let policy = zk_queue::ShardPolicy::new().puts_per_count(16);
    /// assert_eq!(policy.puts_per_count_value(), 16);
    /// ```
    pub const fn puts_per_count(mut self, puts: usize) -> Self {
        self.puts_per_count = puts;
        self
    }

    /// What a put does when every shard is full and the maximum number of
    /// shards is reached. Defaults to [`WhenFull::Refuse`].
    ///
    /// ```
    /// use zk_queue::{ShardPolicy, WhenFull};
    /// let policy = ShardPolicy::new().when_full(WhenFull::Wait);
    /// assert_eq!(policy.when_full_value(), WhenFull::Wait);
    /// ```
    pub const fn when_full(mut self, when_full: WhenFull) -> Self {
        self.when_full = when_full;
        self
    }

    /// Whether this handle runs for leader (the one sharder that adds
    /// shards). Defaults to `true`, as every Curator `QueueSharder` does. A
    /// handle that does not (a consumer, say, that should leave shard
    /// keeping to the producers) never leads; its puts that find every
    /// shard full ask the leader for a shard and wait for it, as any
    /// follower's do.
    ///
    /// ```
    /// let policy = zk_queue::ShardPolicy::new().run_for_leader(false);
    /// assert!(!policy.run_for_leader_value());
    /// ```
    pub const fn run_for_leader(mut self, run: bool) -> Self {
        self.run_for_leader = run;
        self
    }

    /// The puts per count set.
    ///
    /// ```
    /// assert_eq!(zk_queue::ShardPolicy::new().puts_per_count_value(), 64);
    /// ```
    pub const fn puts_per_count_value(&self) -> usize {
        self.puts_per_count
    }

    /// What a put does at the maximum, as set.
    ///
    /// ```
    /// use zk_queue::{ShardPolicy, WhenFull};
    /// assert_eq!(ShardPolicy::new().when_full_value(), WhenFull::Refuse);
    /// ```
    pub const fn when_full_value(&self) -> WhenFull {
        self.when_full
    }

    /// Whether this handle runs for leader, as set.
    ///
    /// ```
    /// assert!(zk_queue::ShardPolicy::new().run_for_leader_value());
    /// ```
    pub const fn run_for_leader_value(&self) -> bool {
        self.run_for_leader
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
        if self.puts_per_count == 0 {
            return invalid("the puts per count must be positive");
        }
        Ok(())
    }

    /// Whether a shard counted at `items` asks for a new shard.
    pub(super) fn full(&self, items: usize) -> bool {
        items >= self.threshold
    }

    /// The shard a put goes to, of shards reckoned at `loads` items, among
    /// those `open` to it; `None` if none is. `roll` is a random number.
    pub(super) fn pick(&self, loads: &[usize], open: &[bool], roll: usize) -> Option<usize> {
        let open: Vec<usize> = (0..loads.len()).filter(|&i| open.get(i) == Some(&true)).collect();
        match self.choice {
            ShardChoice::LeastLoaded => open.into_iter().min_by_key(|&i| loads[i]),
            ShardChoice::Random => open.get(roll % open.len().max(1)).copied(),
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
    fn puts_go_to_the_least_loaded_open_shard_or_a_random_open_one() {
        let least = ShardPolicy::new().threshold(10);
        assert_eq!(least.pick(&[7, 3, 9], &[true, true, true], 0), Some(1));
        assert_eq!(least.pick(&[7, 3, 9], &[true, false, true], 0), Some(0));
        assert_eq!(least.pick(&[7, 3, 9], &[false, false, false], 0), None);
        let random = least.choice(ShardChoice::Random);
        for roll in 0..10 {
            assert_eq!(random.pick(&[12, 4, 10], &[false, true, false], roll), Some(1));
        }
        let picked: std::collections::HashSet<Option<usize>> =
            (0..10).map(|roll| random.pick(&[1, 2, 3], &[true; 3], roll)).collect();
        assert_eq!(picked.len(), 3, "all open: any of them");
    }

    #[test]
    fn a_policy_without_room_or_time_is_refused() {
        assert!(ShardPolicy::new().threshold(0).validate().is_err());
        assert!(ShardPolicy::new().max_shards(0).validate().is_err());
        assert!(ShardPolicy::new().puts_per_count(0).validate().is_err());
        assert!(ShardPolicy::new().check_interval(Duration::ZERO).validate().is_err());
        assert!(ShardPolicy::new().validate().is_ok());
    }
}
