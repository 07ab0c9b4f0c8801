//! Taking items at most once: read, then delete at the version read (with
//! the item's lock, under a lock path).

use std::collections::HashSet;
use std::time::{Duration, Instant};

use super::lock::Locker;
use super::{RawItem, RawQueue, RawTaken, Undecodable};
use crate::client::{Op, Opts};
use crate::error::{Error, Result};
use crate::inspect::{decode_item, ItemName, Kind, Layout, Listing};
use crate::path;
use crate::sync::Latch;
use crate::DeliverAt;

/// What became of one item a take tried.
enum Took {
    Item(RawItem),
    Undecodable(Undecodable),
    Held(String),
    Gone,
}

/// Takes items of `queue` until `max` records, or until nothing is left to
/// take now (`deadline` `None`) or at `deadline`. Items taken before an
/// error are returned, not dropped with it: they are deleted already.
pub(super) fn run(queue: &RawQueue, max: usize, deadline: Option<Instant>) -> Result<RawTaken> {
    let mut taken = RawTaken::default();
    match fill(queue, max, deadline, &mut taken) {
        Ok(()) => Ok(taken),
        Err(e) if !taken.items.is_empty() => {
            log::warn!(
                "{}: stopped taking after {} item(s): {e}",
                queue.path,
                taken.items.len()
            );
            Ok(taken)
        }
        // Connected to a server that answered too late: nothing within the
        // timeout. Otherwise the ensemble is out of reach, and that is the answer.
        Err(e) if deadline.is_some_and(|d| Instant::now() >= d) && queue.client.answered_too_late(&e) => Ok(taken),
        Err(e) => Err(e),
    }
}

/// The work of [`run`], adding to `taken`.
fn fill(queue: &RawQueue, max: usize, deadline: Option<Instant>, taken: &mut RawTaken) -> Result<()> {
    let locker = Locker::of(queue, deadline)?;
    // Every read gives up at the deadline, if there is one.
    let opts = Opts::new().until(deadline);
    let (mut undecodable, mut held) = (HashSet::new(), HashSet::new());
    let mut records = 0;
    while records < max {
        let (names, watch) = match deadline {
            Some(_) => {
                let (names, _, watch) = queue.client.watch_children(&queue.path, &Latch::new(), opts)?;
                (names, Some(watch))
            }
            None => (queue.client.get_children(&queue.path)?.0, None),
        };
        let listing = Listing::of(names, queue.layout);
        let now = DeliverAt::now().epoch_millis();
        let mut next_due = None;
        let mut progressed = false;
        for name in listing.items {
            if records >= max {
                return Ok(());
            }
            if let Some(due) = name.due.filter(|due| name.kind == Kind::Delay && *due > now) {
                // Ordered by due time: no later item is due either.
                next_due = Some(due);
                break;
            }
            if undecodable.contains(&name.name) {
                continue;
            }
            match take_one(queue, locker.as_ref(), listing.layout, name, opts)? {
                Took::Item(item) => {
                    records += item.records.len();
                    progressed = true;
                    taken.items.push(item);
                }
                Took::Undecodable(bad) => {
                    undecodable.insert(bad.name.clone());
                    taken.undecodable.push(bad);
                }
                // Tried again at the next listing: its holder may give it back.
                Took::Held(name) => {
                    if held.insert(name.clone()) {
                        taken.held.push(name);
                    }
                }
                Took::Gone => {}
            }
        }
        if records >= max {
            break;
        }
        if progressed {
            continue;
        }
        let (Some(deadline), Some(watch)) = (deadline, watch) else {
            break;
        };
        let mut until = deadline;
        if let Some(due) = next_due {
            let wait = Duration::from_millis(u64::try_from(due - now).unwrap_or(0));
            until = until.min(Instant::now() + wait);
        }
        let now = Instant::now();
        if now >= deadline {
            break;
        }
        watch.wait_timeout(until.saturating_duration_since(now));
    }
    Ok(())
}

/// Locks item `name` (under a lock path), reads it, then deletes it at the
/// version read, with its lock.
fn take_one(queue: &RawQueue, locker: Option<&Locker>, layout: Layout, name: ItemName, opts: Opts) -> Result<Took> {
    let lock = match locker {
        Some(locker) => match locker.lock(&name.name)? {
            Some(lock) => Some(lock),
            None => return Ok(Took::Held(name.name)),
        },
        None => None,
    };
    let took = read_and_delete(queue, lock.as_deref(), layout, name, opts);
    if let (Some(locker), Some(lock)) = (locker, &lock) {
        if !matches!(took, Ok(Took::Item(_))) {
            locker.unlock(lock);
        }
    }
    took
}

fn read_and_delete(queue: &RawQueue, lock: Option<&str>, layout: Layout, name: ItemName, opts: Opts) -> Result<Took> {
    let node = path::join(&queue.path, &name.name);
    let (data, stat) = match queue.client.get_data_with(&node, opts) {
        Ok(read) => read,
        Err(Error::NoNode { .. }) => return Ok(Took::Gone),
        Err(e) => return Err(e),
    };
    let decoded = match decode_item(layout, &data) {
        Ok(decoded) => decoded,
        Err(error) => return Ok(Took::Undecodable(Undecodable { name: name.name, error })),
    };
    let deleted = match lock {
        // The claim is finished within the request timeout whatever the
        // deadline: given up on, it could delete the item unseen.
        None => queue.client.delete(&node, Some(stat.version)),
        Some(lock) => {
            let ops = [Op::delete(node, Some(stat.version)), Op::delete(lock, None)];
            match queue.client.multi(&ops) {
                Ok(_) => Ok(()),
                Err(Error::MultiFailed { index: 0, source }) => Err(*source),
                // The lock went (with an expired session): the item stays.
                Err(Error::MultiFailed { index: 1, .. }) => return Ok(Took::Gone),
                Err(e) => Err(e),
            }
        }
    };
    match deleted {
        Ok(()) => Ok(Took::Item(RawItem {
            name,
            records: decoded.records,
            attempts: decoded.attempts,
            death: decoded.death,
        })),
        // Taken, or changed, by another client meanwhile.
        Err(Error::NoNode { .. } | Error::BadVersion { .. }) => Ok(Took::Gone),
        Err(e) => Err(e),
    }
}
