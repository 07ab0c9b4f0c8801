//! Room for a put: the shard it goes to, never one without room.
//!
//! The rule, for each handle: a put goes into a shard only while the
//! shard's latest count (its number of children, read with one `exists`)
//! plus this handle's puts to it that the count may have missed (those not
//! ended when the count began) is under the threshold, and only while those
//! missed puts are fewer than the policy's `puts_per_count` and the count
//! is younger than [`COUNT_LIFE`], and, for the shard's last
//! `puts_per_count` places, only on a count that began after the put did;
//! otherwise the shard is counted again first (after this handle's
//! background puts to it have landed).
//!
//! The bound: at any moment, take the handle whose latest count of a shard
//! began last. The shard holds at most that count plus that handle's puts
//! the count may have missed (together at most the threshold), plus the
//! other handles' puts that had not ended when that count began. So a
//! handle alone keeps the shard at or under the threshold, and so do
//! handles taking turns: the last places go only on a count that began
//! after the others' puts ended (a new turn more than `COUNT_LIFE` after
//! the last also counts afresh before its first put). Another handle's
//! puts in flight at that count, or made since, are at most its puts since
//! its own latest count (which began earlier), fewer than
//! `puts_per_count`: so with `n` handles putting into one shard at once,
//! it holds at most `threshold + (n - 1) * puts_per_count` nodes.
//!
//! When every shard is full, they are all counted afresh; if still full, a
//! leader adds a shard, a follower asks the leader for one (see
//! `Shards::request`) and waits, counting again now and then, for a new
//! shard or for consumers to make room; at the maximum the policy's
//! `WhenFull` says whether it waits or refuses.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::policy::WhenFull;
use super::shards::{Shard, Shards};
use crate::client::Opts;
use crate::error::{Error, Result};
use crate::naming::QUEUE_PREFIX;
use crate::sync::Backoff;

/// The first pause of a put that waits for room, between two counts,
/// doubling up to [`LAST_PAUSE`] (a new shard ends a pause at once).
const FIRST_PAUSE: Duration = Duration::from_millis(20);

/// The longest pause between two counts of a put that waits for room.
const LAST_PAUSE: Duration = Duration::from_secs(1);

/// How long a count of a shard serves this handle's puts; an older one is
/// taken again first, so that handles taking turns each see the others'.
pub(super) const COUNT_LIFE: Duration = Duration::from_millis(100);

/// How often a waiting follower asks the leader again for the same shard.
const ASK_AGAIN: Duration = Duration::from_secs(1);

/// What a pick found.
enum Pick<T: Send + 'static> {
    /// The shard for the put, the put counted in it.
    Shard(Arc<Shard<T>>),
    /// Shards with room, whose count is too old or has missed
    /// `puts_per_count` of this handle's puts.
    Recount(Vec<Arc<Shard<T>>>),
    /// Every one of this many shards is full as this handle reckons it.
    Full(usize),
}

impl<T: Send + 'static> Shards<T> {
    /// The shard a put goes to, waiting until `deadline` (`None`: without
    /// end) as the module doc says; `None` if there is no room by then, or
    /// at once at the maximum with [`WhenFull::Refuse`].
    ///
    /// # Errors
    /// [`Error::QueueClosed`] once the queue closes; ZooKeeper errors
    /// counting the shards or adding one.
    pub(super) fn room(&self, deadline: Option<Instant>) -> Result<Option<Arc<Shard<T>>>> {
        let mut pause = Backoff::new(FIRST_PAUSE, LAST_PAUSE);
        let mut asked: Option<(usize, Instant)> = None;
        let mut counted = Counted::No;
        let began = Instant::now();
        loop {
            if self.stopping() {
                return Err(Error::QueueClosed);
            }
            match self.pick(began) {
                Pick::Shard(shard) => return Ok(Some(shard)),
                Pick::Recount(shards) if counted == Counted::No => {
                    // Where this handle's puts in flight keep a shard
                    // closed, they are waited for; elsewhere a count that
                    // misses them reckons them anyway (and one that has
                    // them reckons them twice: high, never low).
                    self.settle(&shards, self.policy.puts_per_count_value(), deadline);
                    self.recount(&shards, deadline)?;
                    counted = Counted::Yes;
                    continue;
                }
                Pick::Recount(_) => {}
                Pick::Full(_) if counted != Counted::Settled => {
                    // Before asking for a shard or refusing, every count
                    // is exact: this handle's puts have all landed.
                    let shards = self.all();
                    self.settle(&shards, 1, deadline);
                    self.recount(&shards, deadline)?;
                    counted = Counted::Settled;
                    continue;
                }
                Pick::Full(seen) => match self.grow(seen, &mut asked, deadline)? {
                    Grown::Yes => {
                        counted = Counted::No;
                        continue;
                    }
                    Grown::Refused => return Ok(None),
                    Grown::Waiting => {}
                },
            }
            let changes = self.changes();
            let now = Instant::now();
            if deadline.is_some_and(|deadline| now >= deadline) {
                return Ok(None);
            }
            let until = now + pause.pause();
            self.wait_for_change(changes, deadline.map_or(until, |deadline| deadline.min(until)));
            counted = Counted::No;
        }
    }

    /// Picks the shard of a put that `began` then among those with room,
    /// counting the put in it; deciding and counting are one step, so that
    /// two puts of this handle cannot both take a shard's last place.
    fn pick(&self, began: Instant) -> Pick<T> {
        let _picking = self.picking.lock();
        let shards = self.all();
        let loads: Vec<usize> = shards.iter().map(|shard| shard.load()).collect();
        let room: Vec<bool> = loads.iter().map(|&load| !self.policy.full(load)).collect();
        let per_count = self.policy.puts_per_count_value();
        let threshold = self.policy.threshold_value();
        let open: Vec<bool> = shards
            .iter()
            .zip(&room)
            .zip(&loads)
            .map(|((shard, &room), &load)| {
                let last_places = load.saturating_add(per_count) >= threshold;
                room && shard.uncounted() < per_count
                    && shard.counted_within(COUNT_LIFE)
                    && (!last_places || shard.counted_since(began))
            })
            .collect();
        if let Some(shard) = self
            .policy
            .pick(&loads, &open, fastrand::usize(..))
            .and_then(|at| shards.get(at))
        {
            shard.picked();
            return Pick::Shard(Arc::clone(shard));
        }
        let stale: Vec<Arc<Shard<T>>> = shards
            .iter()
            .zip(room)
            .filter(|(_, room)| *room)
            .map(|(shard, _)| Arc::clone(shard))
            .collect();
        match stale.is_empty() {
            true => Pick::Full(shards.len()),
            false => Pick::Recount(stale),
        }
    }

    /// Waits (until `deadline`) for this handle's background puts to each
    /// of `shards` whose count may miss at least `missed` of them.
    fn settle(&self, shards: &[Arc<Shard<T>>], missed: usize, deadline: Option<Instant>) {
        for shard in shards.iter().filter(|shard| shard.uncounted() >= missed) {
            let left = deadline.map_or(Duration::MAX, |d| d.saturating_duration_since(Instant::now()));
            shard.queue.settle_puts(left);
        }
    }

    /// Every one of `seen` shards is full by a fresh count: a leader adds a
    /// shard, a follower asks the leader for one; at the maximum, the
    /// policy says whether to wait.
    fn grow(&self, seen: usize, asked: &mut Option<(usize, Instant)>, deadline: Option<Instant>) -> Result<Grown> {
        if seen == 0 {
            // None yet: the first one is made at start (as Curator's
            // sharder makes it, by whoever starts); a failure is retried.
            self.add(0)?;
            return Ok(Grown::Yes);
        }
        if seen >= self.policy.max_shards_value() {
            return Ok(match self.policy.when_full_value() {
                WhenFull::Refuse => Grown::Refused,
                _ => Grown::Waiting,
            });
        }
        if self.leads() {
            // The checker adds it: making a shard's queue takes up to the
            // client's request timeout, which the put's deadline may not
            // leave; the put waits for the new shard within its deadline.
            self.wake_checker();
        } else if self.look_for_shards(deadline)? {
            // The checker adopts them; the put waits for that.
        } else if asked.is_none_or(|(shards, at)| shards != seen || at.elapsed() >= ASK_AGAIN) {
            self.request(seen, deadline);
            *asked = Some((seen, Instant::now()));
        }
        Ok(Grown::Waiting)
    }

    /// Lists the queue path (the checker watches it, but waits between
    /// checks after an error) and, if it has shards not known yet, has the
    /// checker adopt them now (making their queues takes up to the client's
    /// request timeout, which the put's deadline may not leave); whether
    /// there were any.
    fn look_for_shards(&self, deadline: Option<Instant>) -> Result<bool> {
        let known = self.all();
        let (names, _) = self.client.get_children_with(&self.path, Opts::new().until(deadline))?;
        let new = names
            .iter()
            .any(|name| name.starts_with(QUEUE_PREFIX) && !known.iter().any(|shard| shard.name == *name));
        if new {
            self.wake_checker();
        }
        Ok(new)
    }
}

/// How a put that waits for room counted the shards since it last waited.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Counted {
    No,
    /// Those it needed counted again.
    Yes,
    /// All of them, once this handle's puts had landed: exactly.
    Settled,
}

/// What a put that found every shard full did about it.
enum Grown {
    /// A shard was added (by this handle or just before).
    Yes,
    /// The maximum is reached and the policy refuses.
    Refused,
    /// It waits: for the leader's shard, or for room.
    Waiting,
}
