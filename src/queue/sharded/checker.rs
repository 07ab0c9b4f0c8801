//! The checker thread of a sharded queue: adopts the shards other sharders
//! add (it watches the queue path, so at once), counts every shard's items
//! at each check, and, while this handle's latch leads, adds a shard when
//! one is full (Curator's rule, at most once per check interval) or every
//! shard is (so that puts keep finding room), up to the maximum.

use std::time::{Duration, Instant};

use super::shards::Shards;
use crate::client::{ChildWatch, Opts};
use crate::error::{Error, Result};
use crate::sync::{Backoff, Latch};

/// The first pause after a failed check, doubling up to the check interval.
const FIRST_PAUSE: Duration = Duration::from_millis(100);

pub(super) fn run<T: Send + 'static>(shards: &Shards<T>) {
    let interval = shards.policy.check_interval_value();
    let mut backoff = Backoff::new(FIRST_PAUSE.min(interval), interval);
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

/// One check. Returns the watch on the queue path's children.
fn check<T: Send + 'static>(shards: &Shards<T>, latch: &Latch, warned_max: &mut bool) -> Result<ChildWatch> {
    let (names, _, watch) = shards.client.watch_children(&shards.path, latch, Opts::new())?;
    shards.adopt(&names)?;
    let known = shards.all();
    let paths: Vec<String> = known.iter().map(|shard| shards.shard_path(&shard.name)).collect();
    let began: Vec<u64> = known.iter().map(|shard| shard.count_begins()).collect();
    for ((shard, stat), ended) in known.iter().zip(shards.client.exists_many(&paths)?).zip(began) {
        match stat {
            Ok(Some(stat)) => shard.counted_at(usize::try_from(stat.num_children).unwrap_or(0), ended),
            // Deleted by an operator: its queue makes it again when it puts.
            Ok(None) | Err(Error::NoNode { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    let policy = &shards.policy;
    // Curator's rule adds at most one shard per check interval, however
    // often this handle checks (it also checks when shards appear).
    let one_full =
        known.iter().any(|shard| policy.full(shard.counted())) && !shards.added_within(policy.check_interval_value());
    let all_full = known.iter().all(|shard| policy.full(shard.load()));
    if (one_full || all_full) && shards.latch.has_leadership() {
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
    Ok(watch)
}
