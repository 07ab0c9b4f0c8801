//! Deleting every item of a queue, pipelined (and locked first, under a lock
//! path).

use super::lock::Locker;
use super::{Purged, RawQueue};
use crate::error::{Error, Result};
use crate::inspect::ItemName;
use crate::path;

/// Requests per pipelined batch.
const CHUNK: usize = 1_000;

/// Deletes every item of `queue` that `wanted` picks and no lock-safe
/// consumer holds.
pub(super) fn run(queue: &RawQueue, wanted: impl Fn(&ItemName) -> bool) -> Result<Purged> {
    let names: Vec<String> = queue
        .listing()?
        .items
        .into_iter()
        .filter(|item| wanted(item))
        .map(|item| item.name)
        .collect();
    let locker = Locker::of(queue, None)?;
    let mut purged = Purged::default();
    let mut failure = None;
    for chunk in names.chunks(CHUNK) {
        let free: Vec<&String> = match &locker {
            Some(locker) => lock_chunk(locker, chunk, &mut purged, &mut failure)?,
            None => chunk.iter().collect(),
        };
        let items: Vec<(String, Option<i32>)> = free.iter().map(|name| (path::join(&queue.path, name), None)).collect();
        for result in queue.client.delete_many(&items)? {
            match result {
                Ok(()) => purged.deleted += 1,
                Err(Error::NoNode { .. }) => {}
                Err(e) => {
                    failure.get_or_insert(e);
                }
            }
        }
        if let Some(locker) = &locker {
            let locks: Vec<(String, Option<i32>)> = free.iter().map(|name| (locker.node(name), None)).collect();
            for ((lock, _), result) in locks.iter().zip(queue.client.delete_many(&locks)?) {
                if let Err(e) = result.or_else(|e| {
                    if matches!(e, Error::NoNode { .. }) {
                        Ok(())
                    } else {
                        Err(e)
                    }
                }) {
                    log::warn!("cannot delete lock {lock}; it stays until this session ends: {e}");
                }
            }
        }
    }
    match failure {
        Some(e) => Err(e),
        None => Ok(purged),
    }
}

/// Locks the items `chunk`, pipelined; returns the ones locked, and counts
/// the ones another holder has.
fn lock_chunk<'n>(
    locker: &Locker,
    chunk: &'n [String],
    purged: &mut Purged,
    failure: &mut Option<Error>,
) -> Result<Vec<&'n String>> {
    let mut free = Vec::new();
    for (name, result) in chunk.iter().zip(locker.lock_many(chunk)?) {
        match result {
            Ok(()) => free.push(name),
            Err(Error::NodeExists { .. }) => purged.held += 1,
            Err(e) => {
                failure.get_or_insert(e);
            }
        }
    }
    Ok(free)
}
