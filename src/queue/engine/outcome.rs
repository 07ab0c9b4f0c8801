//! How a claimed item ends: acknowledged (deleted), put back (requeued, its
//! failed attempts counted, or the records a taker released given back), or
//! moved to the dead-letter path.
//!
//! An [`End`] names the operations on the item that end its claim, and what
//! follows once they are applied (counters, logs, the consumer told). A
//! lock-safe consumer's ends, fenced on the item's lease
//! ([`Lease::fence`]), go to the acknowledger (`ack`), which sends many
//! items' in one multi; a plain consumer's only end besides its claiming
//! delete, an undecodable item's move ([`dead_letter`]), is one multi of its
//! own.

use std::time::{Duration, SystemTime};

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

/// How the claim on an item ends.
pub(super) enum End {
    /// Consumed: the item is deleted.
    Acknowledge,
    /// Failed: the item is replaced by a node of `data` (its records not
    /// consumed, with its story and its not-before time) under its own
    /// prefix, at the end of the queue.
    Requeue {
        data: Vec<u8>,
        /// Failed deliveries, this one included.
        attempts: u32,
        /// The back-off recorded in `data`.
        pause: Duration,
        /// Why the consumer failed.
        cause: String,
    },
    /// Released by its taker after its first records were acknowledged: the
    /// item is replaced by a node of `data` (the other `records`, their
    /// failed attempts unchanged) under its own prefix.
    GiveBack { data: Vec<u8>, records: usize },
    /// Cannot be consumed: the item moves to the dead-letter path `to` as a
    /// node of `data` (its frame with its story, or an undecodable item's
    /// bytes unchanged) under its own prefix.
    DeadLetter { to: String, data: Vec<u8>, reason: Error },
}

impl End {
    /// The operations on item `name`, at `item_version`, that end its claim
    /// (without a lease's fence around them). A new node keeps the item's
    /// prefix, so its priority, delay or id.
    pub(super) fn ops<T>(&self, core: &Core<T>, name: &str, item_version: i32) -> Vec<Op> {
        let item_path = path::join(&core.path, name);
        let create = |dir: &str, data: &[u8]| {
            Op::create_with_acl(
                path::join(dir, item_prefix(name)),
                data.to_vec(),
                CreateMode::PersistentSequential,
                core.options.acl.clone(),
            )
        };
        let delete = Op::delete(&item_path, Some(item_version));
        match self {
            End::Acknowledge => vec![delete],
            End::Requeue { data, .. } | End::GiveBack { data, .. } => vec![delete, create(&core.path, data)],
            End::DeadLetter { to, data, .. } => vec![create(to, data), delete],
        }
    }

    /// What the end does to the item, as a past participle for logs.
    pub(super) fn done(&self) -> &'static str {
        match self {
            End::Acknowledge => "acknowledged",
            End::Requeue { .. } => "requeued",
            End::GiveBack { .. } => "given back",
            End::DeadLetter { .. } => "moved to the dead-letter path",
        }
    }

    /// Where among [`ops`](Self::ops) the dead letter is created, if this
    /// end creates one.
    pub(super) fn dead_letter_create(&self) -> Option<usize> {
        matches!(self, End::DeadLetter { .. }).then_some(0)
    }

    /// What follows once the operations ending the claim on item `name`
    /// were applied.
    pub(super) fn applied<T: Send + 'static>(&self, core: &Core<T>, name: &str) {
        let item_path = path::join(&core.path, name);
        match self {
            End::Acknowledge => log::debug!("acknowledged {item_path}"),
            End::Requeue {
                attempts, pause, cause, ..
            } => {
                QueueCounters::bump(&core.counters.requeued);
                core.counters.metrics.requeued(*attempts);
                // An expected failure, retried: worth a line, not an
                // operator's attention.
                log::info!(
                    "{item_path} failed on attempt {attempts} and was requeued, due again in {pause:?}: {cause}"
                );
            }
            End::GiveBack { records, .. } => log::debug!("{item_path}: {records} released records put back"),
            End::DeadLetter { to, reason, .. } => {
                QueueCounters::bump(&core.counters.dead_lettered);
                core.counters.metrics.dead_lettered();
                log::warn!("moved {item_path} to {to}: {reason}");
                core.tell_error(reason);
            }
        }
    }
}

/// How item `name` ends after a failed delivery: requeued with the records
/// not yet consumed under its own prefix (keeping its priority, delay or
/// id), not due again before its back-off, or moved to the dead-letter path
/// once `attempts` reaches the limit. `None`: the limit is reached and there
/// is no dead-letter path, so the item was left in place ([`move_or_leave`]).
pub(super) fn requeue<T: Send + 'static>(
    core: &Core<T>,
    control: &Control,
    name: &str,
    lease: &Lease,
    failure: Failure,
) -> Result<Option<End>> {
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
        return Ok(move_or_leave(core, control, name, Some(lease), data, reason));
    }
    let pause = core.options.redelivery_backoff.nth_jittered(attempts);
    let backing_off = trailer::Trailer {
        not_before: (!pause.is_zero()).then(|| {
            let at = SystemTime::now().checked_add(pause).unwrap_or(SystemTime::now());
            trailer::epoch_millis(at)
        }),
        ..story.trailer()
    };
    Ok(Some(End::Requeue {
        data: item_data(remaining, &backing_off)?,
        attempts,
        pause,
        cause: cause.to_string(),
    }))
}

/// How an item ends whose taker released it after acknowledging its first
/// records: the `remaining` ones go back under the item's own prefix, their
/// failed attempts unchanged.
pub(super) fn give_back(remaining: &[&[u8]], story: Story) -> Result<End> {
    Ok(End::GiveBack {
        data: item_data(remaining, &story.trailer())?,
        records: remaining.len(),
    })
}

/// The data of an item of `records` that records `recorded`.
fn item_data(records: &[&[u8]], recorded: &trailer::Trailer) -> Result<Vec<u8>> {
    let mut data = encode_frame(records.iter().copied()).map_err(Error::encoding)?;
    trailer::append(&mut data, recorded);
    Ok(data)
}

/// The move of item `name`, which cannot be consumed, to the dead-letter
/// path, as a node of `data` (see [`End::DeadLetter`]). Without a dead-letter
/// path the item is left in place, never deleted, and not read again (its
/// lease, if any, let go; a lock that cannot be deleted now is kept for a
/// later pass): then `None`.
pub(super) fn move_or_leave<T: Send + 'static>(
    core: &Core<T>,
    control: &Control,
    name: &str,
    lease: Option<&Lease>,
    data: Vec<u8>,
    reason: Error,
) -> Option<End> {
    if let Some(to) = &core.options.dead_letter_path {
        return Some(End::DeadLetter {
            to: to.clone(),
            data,
            reason,
        });
    }
    control.skip(name);
    if let Some(lease) = lease {
        control.leases.let_go(core, name, lease);
    }
    log::error!(
        "{}/{name} cannot be consumed and is left in place (no dead-letter path): {reason}",
        core.path
    );
    core.tell_error(&reason);
    None
}

/// Moves an undecodable item a plain consumer found to the dead-letter path,
/// in one multi with its deletion (see [`move_or_leave`]); a dead-letter
/// path deleted under the consumer is created again. A lock-safe consumer's
/// moves go through the acknowledger instead, fenced on their leases.
pub(super) fn dead_letter<T: Send + 'static>(
    core: &Core<T>,
    control: &Control,
    name: &str,
    data: &[u8],
    item_version: i32,
    reason: Error,
) -> Result<()> {
    let Some(end) = move_or_leave(core, control, name, None, data.to_vec(), reason) else {
        return Ok(());
    };
    let ops = end.ops(core, name, item_version);
    let create_index = end.dead_letter_create();
    let attempt = || core.client.multi(&ops).map(|_| ());
    let mut moved = attempt();
    if matches!(&moved, Err(Error::MultiFailed { index, source }) if Some(*index) == create_index && source.is_no_node())
    {
        dead_path_missing(&end);
        core.ensure_nodes()?;
        moved = attempt();
    }
    if moved.is_ok() {
        end.applied(core, name);
    }
    moved
}

/// Logs that the dead-letter path of `end` was found missing (deleted under
/// the consumer), before it is created again.
pub(super) fn dead_path_missing(end: &End) {
    if let End::DeadLetter { to, .. } = end {
        log::warn!("dead-letter path {to} is missing; creating it again");
    }
}
