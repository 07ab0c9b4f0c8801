//! Claiming one window of a pass, in the queue's mode.

use crossbeam_channel::Sender;

use crate::error::Result;
use crate::queue::core::Core;
use crate::queue::engine::claim::{self, Claimed, ReadAhead};
use crate::queue::engine::{Control, Work};
use crate::queue::stats::QueueCounters;

/// Claims a window of items in the queue's mode; a plain window uses (and
/// takes out) the items of `read_ahead` it claims instead of reading them,
/// and reads the items of `next` into it while its deletes commit.
pub(super) fn claim_window<T: Send + 'static>(
    core: &Core<T>,
    control: &Control,
    tx: &Sender<Work<T>>,
    names: Vec<String>,
    read_ahead: &mut ReadAhead,
    next: Vec<String>,
) -> Result<Claimed> {
    let claimed = match &core.options.lock_path {
        Some(lock_dir) => claim::locked_window(core, control, tx, lock_dir, names),
        None => claim::window(core, control, tx, names, read_ahead, next),
    }?;
    QueueCounters::add(&core.counters.claims_lost, claimed.lost);
    Ok(claimed)
}
