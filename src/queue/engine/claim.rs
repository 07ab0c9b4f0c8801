//! Claims a window of items at a time with pipelined requests, and hands the
//! items won to the workers in order. Plain mode reads them and deletes them
//! in multis;
//! lock-safe mode locks and reads them (the locks are prefetched leases: the
//! items are deleted only once consumed).

use std::collections::HashMap;

use crossbeam_channel::{SendTimeoutError, Sender};

use super::lease::{ItemRead, Lease, Taken};
use super::process::decode;
use super::{outcome, Control, Locked, Work, POLL};
use crate::client::{BatchResults, Deleted, Opts, Stat};
use crate::codec::trailer;
use crate::error::{Error, Result};
use crate::path;
use crate::queue::core::Core;
use crate::queue::stats::QueueCounters;

/// Items read ahead (with the listing, or beside the window before), by name:
/// their data and stat.
pub(super) type ReadAhead = HashMap<String, (Vec<u8>, Stat)>;

/// What claiming a window came to.
#[derive(Clone, Debug, Default)]
pub(super) struct Claimed {
    /// Items handed to the workers.
    pub(super) handed: usize,
    /// Items another consumer had taken or held (gone, or locked).
    pub(super) lost: usize,
    /// Lock-safe: the items whose locks another consumer held, so the
    /// scanner knows them locked (and abandoned, if their locks vanish).
    pub(super) held_elsewhere: Vec<String>,
}

/// Claims the items named (in order) and returns those this consumer won,
/// in order, for the pass to hand to the workers ([`hand`]). Items of
/// `read_ahead` (read with the listing, or with the window before) are not
/// read again. The items of `next` (the
/// next window's, as far as the pass knows) are read while this window's
/// deletes commit, into `read_ahead`: a window then takes one round trip,
/// and the items in flight are still this window's alone.
///
/// Claimed items are already deleted, so they are handed over even while the
/// queue is stopping: the workers run until the scanner is done.
pub(super) fn window<T: Send + 'static>(
    core: &Core<T>,
    control: &Control,
    names: Vec<String>,
    read_ahead: &mut ReadAhead,
    next: Vec<String>,
) -> Result<(Claimed, Vec<Work<T>>)> {
    let paths: Vec<String> = names.iter().map(|n| path::join(&core.path, n)).collect();
    let started = std::time::Instant::now();
    let ahead = read_ahead.len();
    let reads = read_window(core, &names, &paths, read_ahead)?;
    let (read_in, window, from_ahead) = (started.elapsed(), paths.len(), ahead - read_ahead.len());
    let mut claimed = Claimed::default();
    let mut claimable = Vec::with_capacity(names.len());
    for ((name, item_path), read) in names.into_iter().zip(paths).zip(reads) {
        let (data, stat) = match read {
            Ok(found) => found,
            // Taken by another consumer since the listing.
            Err(Error::NoNode { .. }) => {
                claimed.lost += 1;
                continue;
            }
            Err(e) => return Err(e),
        };
        if stat.num_children > 0 {
            not_an_item(core, control, &name, &item_path);
            continue;
        }
        match decode(core, &item_path, &data) {
            // Backing off after a failure: left for later, not claimed.
            Ok(decoded) if control.deferred.defer(&name, decoded.trailer.not_before) => {}
            Ok(decoded) => {
                let meta = decoded.meta(&name, stat.ctime);
                claimable.push((name, item_path, stat.version, decoded.values, meta));
            }
            Err(corrupt) => {
                if let Err(e) = outcome::dead_letter(core, control, &name, &data, stat.version, corrupt) {
                    log::warn!("{item_path}: {e}");
                    core.tell_error(&e);
                }
            }
        }
    }
    let deletes: Vec<(String, Option<i32>)> = claimable.iter().map(|(_, p, v, ..)| (p.clone(), Some(*v))).collect();
    // Written before the deletes, so the server answers it without waiting
    // for their commit.
    let reading = core
        .client
        .read_ahead(next.iter().map(|n| path::join(&core.path, n)).collect());
    let results = core.client.delete_in_multis_with(&deletes, Opts::new());
    if let Some(reading) = reading {
        // A node that could not be read is read again when its window comes.
        for (name, read) in next.into_iter().zip(reading.wait(&core.client)) {
            if let Ok(found) = read {
                read_ahead.insert(name, found);
            }
        }
    }
    let results = results?;
    log::trace!(
        "queue {}: window of {}: read in {read_in:?} ({} read ahead), {} deleted in {:?}",
        core.path,
        window,
        from_ahead,
        deletes.len(),
        started.elapsed() - read_in
    );
    let mut won = Vec::with_capacity(claimable.len());
    for ((name, item_path, version, values, meta), deleted) in claimable.into_iter().zip(results) {
        // A delete whose reply was lost may not have reached the server: it
        // is sent again (with retries) before anything is delivered.
        match core.client.settle_batch_delete(&item_path, Some(version), deleted) {
            Ok(Deleted::Yes) => {}
            // Our lost delete, or another consumer's claim.
            Ok(Deleted::Unknown) => log::info!(
                "{item_path}: a claiming delete's reply was lost and the item is gone; delivering it (if another consumer claimed it meanwhile, it is delivered twice)"
            ),
            // Another consumer claimed it first.
            Err(Error::NoNode { .. } | Error::BadVersion { .. }) => {
                claimed.lost += 1;
                continue;
            }
            Err(e) => {
                // Not delivered; still there unless our first delete was
                // applied (then it is lost, as at most once allows).
                log::warn!("{item_path}: the claiming delete failed, so it is not delivered: {e}");
                core.tell_error(&e);
                continue;
            }
        }
        log::debug!("claimed {item_path}");
        won.push(Work::Claimed { name, values, meta });
    }
    Ok((claimed, won))
}

/// Hands an item claimed in plain mode to a worker (waiting for one to be
/// free); whether one took it.
pub(super) fn hand<T: Send + 'static>(core: &Core<T>, tx: &Sender<Work<T>>, work: Work<T>) -> bool {
    // Counted before the hand-over, so the worker's settling comes after.
    QueueCounters::bump(&core.counters.claimed);
    let Err(back) = tx.send(work) else {
        return true;
    };
    if let Work::Claimed { name, .. } = back.0 {
        log::error!(
            "{}: claimed, but no worker is left to consume it",
            path::join(&core.path, &name)
        );
    }
    QueueCounters::bump(&core.counters.settled);
    false
}

/// The data and stats of the items named (at `paths`), in order: those of
/// `read_ahead` taken out of it, the rest read with as few requests as the
/// server allows.
fn read_window<T: Send + 'static>(
    core: &Core<T>,
    names: &[String],
    paths: &[String],
    read_ahead: &mut ReadAhead,
) -> Result<BatchResults<(Vec<u8>, Stat)>> {
    let known: Vec<Option<(Vec<u8>, Stat)>> = names.iter().map(|name| read_ahead.remove(name)).collect();
    let unread: Vec<String> = paths
        .iter()
        .zip(&known)
        .filter(|(_, read)| read.is_none())
        .map(|(p, _)| p.clone())
        .collect();
    let mut fresh = match unread.is_empty() {
        true => Vec::new(),
        false => core.client.read_many_with(&unread, Opts::new())?,
    }
    .into_iter();
    Ok(known
        .into_iter()
        .map(|read| match read {
            Some(found) => Ok(found),
            // One result per path read.
            None => fresh.next().unwrap_or(Err(Error::Closed)),
        })
        .collect())
}

/// Takes leases on the items named (in order), with the locked items read
/// in the request that reads their locks back, and hands them to the
/// workers in order. Leases on items not handed over are released.
pub(super) fn locked_window<T: Send + 'static>(
    core: &Core<T>,
    control: &Control,
    tx: &Sender<Work<T>>,
    lock_dir: &str,
    names: Vec<String>,
) -> Result<Claimed> {
    let tried = names.len();
    // A failure ends nothing early: every lease taken is either handed over
    // or released.
    let Taken {
        leases: locked,
        held_elsewhere,
        mut items,
        failure,
    } = control.leases.take(core, lock_dir, names)?;
    let paths: Vec<String> = locked.iter().map(|(n, _)| path::join(&core.path, n)).collect();
    // Most items were read with their locks; the others (a lock recovered
    // after a lost reply) are read now, once their locks are known ours.
    let known: Vec<Option<ItemRead>> = locked.iter().map(|(name, _)| items.remove(name)).collect();
    let unread: Vec<String> = paths
        .iter()
        .zip(&known)
        .filter(|(_, read)| read.is_none())
        .map(|(p, _)| p.clone())
        .collect();
    let fresh = match unread.is_empty() {
        true => Vec::new(),
        false => match core.client.read_many_with(&unread, Opts::new()) {
            Ok(reads) => reads,
            Err(e) => {
                control.leases.let_go_all(core, locked);
                return Err(e);
            }
        },
    };
    let mut fresh = fresh.into_iter();
    let reads: Vec<ItemRead> = known
        .into_iter()
        .map(|read| read.unwrap_or_else(|| fresh.next().unwrap_or(Err(Error::Closed))))
        .collect();
    // Those not locked were held by another consumer (or failed).
    let mut claimed = Claimed {
        handed: 0,
        lost: tried - locked.len(),
        held_elsewhere,
    };
    // Leases on items not to be handed over, released together.
    let mut released = Vec::new();
    let mut claims = Vec::with_capacity(locked.len());
    for (((name, lease), item_path), read) in locked.into_iter().zip(paths).zip(reads) {
        let (data, stat) = match read {
            Ok(found) => found,
            Err(e) => {
                released.push((name, lease));
                if matches!(e, Error::NoNode { .. }) {
                    // Acknowledged by another consumer since the listing.
                    claimed.lost += 1;
                } else {
                    core.tell_error(&e);
                }
                continue;
            }
        };
        if stat.num_children > 0 {
            not_an_item(core, control, &name, &item_path);
            released.push((name, lease));
            continue;
        }
        if control.deferred.defer(&name, trailer::not_before_of(&data)) {
            // Backing off after a failure: unlocked, left for later.
            released.push((name, lease));
            continue;
        }
        claims.push(Locked {
            name,
            item_path,
            item_version: stat.version,
            ctime: stat.ctime,
            data,
            lease,
        });
    }
    control.leases.let_go_all(core, released);
    let left = hand_over(core, control, tx, claims, &mut claimed);
    control.leases.let_go_all(core, left);
    match failure {
        Some(e) => Err(e),
        None => Ok(claimed),
    }
}

/// Hands the items locked to the workers, in order; returns the leases of
/// those not handed over (the queue is closing).
fn hand_over<T: Send + 'static>(
    core: &Core<T>,
    control: &Control,
    tx: &Sender<Work<T>>,
    claims: Vec<Locked>,
    claimed: &mut Claimed,
) -> Vec<(String, Lease)> {
    let mut left = Vec::new();
    for claim in claims {
        if control.stopping() {
            // Closing: keep order by handing over nothing more.
            left.push((claim.name, claim.lease));
            continue;
        }
        log::debug!("claimed {} (locked)", claim.item_path);
        QueueCounters::bump(&core.counters.claimed);
        let mut work = Work::Locked(claim);
        loop {
            match tx.send_timeout(work, POLL) {
                Ok(()) => {
                    claimed.handed += 1;
                    break;
                }
                Err(SendTimeoutError::Timeout(back)) if !control.stopping() => work = back,
                Err(SendTimeoutError::Timeout(back) | SendTimeoutError::Disconnected(back)) => {
                    if let Work::Locked(claim) = back {
                        left.push((claim.name, claim.lease));
                    }
                    QueueCounters::bump(&core.counters.settled);
                    break;
                }
            }
        }
    }
    left
}

/// Sets aside a node with children: queue items have none, and it could not
/// be deleted, so it is never delivered, moved or touched; the consumer hears
/// of it once.
fn not_an_item<T: Send + 'static>(core: &Core<T>, control: &Control, name: &str, item_path: &str) {
    control.skip(name);
    log::warn!("{item_path} has children, so it is not a queue item; it is left in place");
    core.tell_error(&Error::NotEmpty {
        path: item_path.to_owned(),
    });
}
