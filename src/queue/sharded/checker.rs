//! The checker thread of a sharded queue: adopts the shards other sharders
//! add (it watches the queue path, so at once), counts every shard's items
//! at each check, and, while this handle's latch leads, adds a shard when
//! one is full (Curator's rule, at most once per check interval) or every
//! shard is (so that puts keep finding room), up to the maximum. A handle
//! that runs for leader also watches the leader path's data, which a
//! follower sets to ask for a shard, and checks at once when it changes.

use std::time::{Duration, Instant};

use super::shards::Shards;
use crate::client::{ChildWatch, DataWatch, Opts};
use crate::error::Result;
use crate::sync::{Backoff, Latch};

/// The first pause after a failed check, doubling up to the check interval
/// or [`LAST_PAUSE`], whichever is shorter.
const FIRST_PAUSE: Duration = Duration::from_millis(100);

/// The longest pause after a failed check: until the next check succeeds,
/// this handle sets no watch, so (leading) it does not hear a follower ask
/// for a shard.
const LAST_PAUSE: Duration = Duration::from_secs(2);

pub(super) fn run<T: Send + 'static>(shards: &Shards<T>) {
    let interval = shards.policy.check_interval_value();
    let mut backoff = Backoff::new(FIRST_PAUSE.min(interval), interval.min(LAST_PAUSE));
    let mut warned_max = false;
    while !shards.stopping() {
        let latch = Latch::new();
        *shards.wake.lock() = latch.clone();
        if shards.stopping() {
            break;
        }
        match check(shards, &latch, &mut warned_max) {
            Ok(_watch) => {
                backoff.reset();
                latch.wait_until(Instant::now().checked_add(interval));
            }
            Err(e) => {
                let pause = backoff.pause();
                log::log!(
                    backoff.log_level(),
                    "sharded queue {}: checking the shards: {e}; again in {pause:?}",
                    shards.path
                );
                latch.wait_until(Some(Instant::now() + pause));
            }
        }
    }
}

/// The watches a check leaves: on the queue path's children, and (for a
/// handle that runs for leader) on the leader path's data.
type Watches = (ChildWatch, Option<DataWatch>);

/// One check.
fn check<T: Send + 'static>(shards: &Shards<T>, latch: &Latch, warned_max: &mut bool) -> Result<Watches> {
    let (names, _, watch) = shards.client.watch_children(&shards.path, latch, Opts::new())?;
    // Set before counting, so that a request made meanwhile wakes the next.
    let requests = match &shards.latch {
        Some(_) => Some(shards.client.watch_exists(&shards.leader_path, latch, Opts::new())?.1),
        None => None,
    };
    shards.adopt(&names)?;
    let known = shards.all();
    shards.recount(&known, None)?;
    let policy = &shards.policy;
    // Curator's rule adds at most one shard per check interval, however
    // often this handle checks (it also checks when shards appear).
    let one_full =
        known.iter().any(|shard| policy.full(shard.counted())) && !shards.added_within(policy.check_interval_value());
    let all_full = known.iter().all(|shard| policy.full(shard.load()));
    if (one_full || all_full) && shards.leads() {
        if known.len() >= policy.max_shards_value() {
            if !*warned_max {
                log::warn!(
                    "sharded queue {}: the maximum of {} shards is reached and a shard is full; consider a higher maximum",
                    shards.path,
                    policy.max_shards_value()
                );
                *warned_max = true;
            }
        } else {
            shards.add(known.len())?;
        }
    }
    Ok((watch, requests))
}
