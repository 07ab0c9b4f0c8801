//! Claiming one window of a pass, in the queue's mode.

use crossbeam_channel::Sender;

use crate::error::Result;
use crate::queue::core::Core;
use crate::queue::engine::claim::{self, Claimed, ReadAhead};
use crate::queue::engine::{Control, Work};
use crate::queue::stats::QueueCounters;

/// Claims a window of items in the queue's mode; a plain window uses (and
/// takes out) the items of `read_ahead` it claims instead of reading them,
/// reads the items of `next` into it while its deletes commit, and returns
/// the items won for the pass to hand over (a lock-safe window hands its
/// own over).
pub(super) fn claim_window<T: Send + 'static>(
    core: &Core<T>,
    control: &Control,
    tx: &Sender<Work<T>>,
    names: Vec<String>,
    read_ahead: &mut ReadAhead,
    next: Vec<String>,
) -> Result<(Claimed, Vec<Work<T>>)> {
    let (claimed, won) = match &core.options.lock_path {
        Some(lock_dir) => (claim::locked_window(core, control, tx, lock_dir, names)?, Vec::new()),
        None => claim::window(core, control, names, read_ahead, next)?,
    };
    QueueCounters::add(&core.counters.claims_lost, claimed.lost);
    Ok((claimed, won))
}
