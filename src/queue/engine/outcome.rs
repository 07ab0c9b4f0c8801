//! How a claimed item ends when it is not acknowledged: requeued (its
//! failed attempts counted) or moved to the dead-letter path, each in one
//! multi, fenced on the item's lease if it has one.

use std::time::SystemTime;

use super::lease::Lease;
use super::Control;
use crate::client::{CreateMode, Op};
use crate::codec::{encode_frame, trailer, Death};
use crate::error::{Error, Result};
use crate::naming::item_prefix;
use crate::path;
use crate::queue::core::Core;
use crate::queue::stats::QueueCounters;
use crate::queue::ConsumeError;

/// The longest reason a dead letter records, in bytes.
const MAX_REASON: usize = 4096;

/// What an item carries from node to node when it is put back.
#[derive(Clone, Copy)]
pub(super) struct Story {
    /// Failed deliveries so far.
    pub(super) attempts: u32,
    /// Its first put, epoch milliseconds.
    pub(super) put_at: i64,
}

impl Story {
    /// The trailer recording this story.
    fn trailer(self) -> trailer::Trailer {
        trailer::Trailer {
            attempts: self.attempts,
            put_at: Some(self.put_at),
            ..trailer::Trailer::default()
        }
    }
}

/// A delivery the consumer failed.
pub(super) struct Failure<'a> {
    /// The records not consumed yet, the failed one first.
    pub(super) remaining: &'a [&'a [u8]],
    /// Its story, this failure counted.
    pub(super) story: Story,
    /// Why the consumer failed.
    pub(super) cause: &'a ConsumeError,
}

/// Puts the records not yet consumed back into the queue under the item's own
/// prefix (keeping its priority, delay or id), or moves them to the
/// dead-letter path once `attempts` reaches the limit.
pub(super) fn requeue<T: Send + 'static>(
    core: &Core<T>,
    control: &Control,
    name: &str,
    item_version: i32,
    lease: &Lease,
    failure: Failure,
) -> Result<()> {
    let Failure {
        remaining,
        story,
        cause,
    } = failure;
    let attempts = story.attempts;
    if core.options.max_attempts.is_some_and(|max| attempts >= max) {
        log::info!("{}/{name} failed on attempt {attempts}, its last: {cause}", core.path);
        let death = Death {
            reason: trailer::cut(&cause.to_string(), MAX_REASON).to_owned(),
            died_at: SystemTime::now(),
            source: core.path.clone(),
            original_name: name.to_owned(),
        };
        let dying = trailer::Trailer {
            death: Some(death),
            ..story.trailer()
        };
        let data = item_data(remaining, &dying)?;
        let reason = Error::AttemptsExhausted {
            path: path::join(&core.path, name),
            attempts,
        };
        return dead_letter(core, control, name, &data, item_version, Some(lease), reason);
    }
    let pause = core.options.redelivery_backoff.nth_jittered(attempts);
    let backing_off = trailer::Trailer {
        not_before: (!pause.is_zero()).then(|| {
            let at = SystemTime::now().checked_add(pause).unwrap_or(SystemTime::now());
            trailer::epoch_millis(at)
        }),
        ..story.trailer()
    };
    let data = item_data(remaining, &backing_off)?;
    put_back(core, name, item_version, lease, data)?;
    QueueCounters::bump(&core.counters.requeued);
    // An expected failure, retried: worth a line, not an operator's attention.
    log::info!(
        "{}/{name} failed on attempt {attempts} and was requeued, due again in {pause:?}: {cause}",
        core.path
    );
    Ok(())
}

/// Gives back the records of a multi-record item its taker released after
/// acknowledging the first ones: they go back under the item's own prefix,
/// their failed attempts unchanged.
pub(super) fn release_rest<T: Send + 'static>(
    core: &Core<T>,
    name: &str,
    item_version: i32,
    lease: &Lease,
    remaining: &[&[u8]],
    story: Story,
) -> Result<()> {
    let data = item_data(remaining, &story.trailer())?;
    put_back(core, name, item_version, lease, data)?;
    log::debug!("{}/{name}: {} released records put back", core.path, remaining.len());
    Ok(())
}

/// The data of an item of `records` that records `recorded`.
fn item_data(records: &[&[u8]], recorded: &trailer::Trailer) -> Result<Vec<u8>> {
    let mut data = encode_frame(records.iter().copied()).map_err(Error::encoding)?;
    trailer::append(&mut data, recorded);
    Ok(data)
}

/// Replaces item `name` with a new node of `data` under the same prefix
/// (keeping its priority, delay or id), at the end of the queue, in one
/// multi fenced on its lease.
fn put_back<T: Send + 'static>(
    core: &Core<T>,
    name: &str,
    item_version: i32,
    lease: &Lease,
    data: Vec<u8>,
) -> Result<()> {
    let item_path = path::join(&core.path, name);
    let ops = lease.fence([
        Op::delete(&item_path, Some(item_version)),
        Op::create_with_acl(
            path::join(&core.path, item_prefix(name)),
            data,
            CreateMode::PersistentSequential,
            core.options.acl.clone(),
        ),
    ]);
    lease.settle(core, &item_path, &ops)
}

/// Moves an item that cannot be consumed to the dead-letter path under its
/// own prefix (so it keeps its priority, delay or id there), in one multi
/// with its deletion; without a dead-letter path the item is left in place,
/// never deleted. `data` is what the dead letter holds: the item's frame with
/// its story, or an undecodable item's bytes unchanged.
pub(super) fn dead_letter<T: Send + 'static>(
    core: &Core<T>,
    control: &Control,
    name: &str,
    data: &[u8],
    item_version: i32,
    lease: Option<&Lease>,
    reason: Error,
) -> Result<()> {
    let item_path = path::join(&core.path, name);
    let Some(dead_letters) = &core.options.dead_letter_path else {
        control.skip(name);
        if let Some(lease) = lease {
            // Kept for a later pass if it cannot be deleted now.
            control.leases.let_go(core, name, lease);
        }
        log::error!("{item_path} cannot be consumed and is left in place (no dead-letter path): {reason}");
        core.tell_error(&reason);
        return Ok(());
    };
    let move_ops = [
        Op::create_with_acl(
            path::join(dead_letters, item_prefix(name)),
            data.to_vec(),
            CreateMode::PersistentSequential,
            core.options.acl.clone(),
        ),
        Op::delete(&item_path, Some(item_version)),
    ];
    let ops = match lease {
        Some(lease) => lease.fence(move_ops),
        None => Vec::from(move_ops),
    };
    let create_index = usize::from(lease.is_some());
    let attempt = || match lease {
        Some(lease) => lease.settle(core, &item_path, &ops),
        None => core.client.multi(&ops).map(|_| ()),
    };
    let mut moved = attempt();
    if matches!(&moved, Err(Error::MultiFailed { index, source }) if *index == create_index && source.is_no_node()) {
        // The dead-letter node was deleted under the consumer: create it again.
        log::warn!("dead-letter path {dead_letters} is missing; creating it again");
        core.ensure_nodes()?;
        moved = attempt();
    }
    if moved.is_ok() {
        QueueCounters::bump(&core.counters.dead_lettered);
        log::warn!("moved {item_path} to {dead_letters}: {reason}");
        core.tell_error(&reason);
    }
    moved
}
