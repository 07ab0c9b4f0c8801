//! Plain-mode claims a window at a time: the window's items are read with
//! pipelined requests, deleted with pipelined versioned deletes, and handed to
//! the workers in order.

use crossbeam_channel::Sender;

use super::process::decode;
use super::{finish, Control, Work};
use crate::error::{Error, Result};
use crate::path;
use crate::queue::core::Core;

/// Claims the items named (in order) and hands those this consumer won to
/// the workers, in order; returns how many it handed over.
///
/// Claimed items are already deleted, so they are handed over even while the
/// queue is stopping: the workers run until the scanner is done.
pub(super) fn window<T: Send + 'static>(
    core: &Core<T>,
    control: &Control,
    tx: &Sender<Work<T>>,
    names: Vec<String>,
) -> Result<usize> {
    let paths: Vec<String> = names.iter().map(|n| path::join(&core.path, n)).collect();
    let reads = core.client.get_data_many(&paths)?;
    let mut claimable = Vec::with_capacity(names.len());
    for ((name, item_path), read) in names.into_iter().zip(paths).zip(reads) {
        let (data, stat) = match read {
            Ok(found) => found,
            // Taken by another consumer since the listing.
            Err(Error::NoNode { .. }) => continue,
            Err(e) => return Err(e),
        };
        match decode(core, &item_path, &data) {
            Ok(decoded) => claimable.push((name, item_path, stat.version, decoded.values)),
            Err(corrupt) => {
                if let Err(e) = finish::dead_letter(core, control, &name, &data, stat.version, None, corrupt) {
                    log::warn!("{item_path}: {e}");
                    core.tell_error(&e);
                }
            }
        }
    }
    let deletes: Vec<(String, Option<i32>)> = claimable.iter().map(|(_, p, v, _)| (p.clone(), Some(*v))).collect();
    let results = core.client.delete_many(&deletes)?;
    let mut handed = 0;
    for ((name, item_path, _, values), deleted) in claimable.into_iter().zip(results) {
        match deleted {
            Ok(()) => {}
            // Another consumer claimed it first.
            Err(Error::NoNode { .. } | Error::BadVersion { .. }) => continue,
            Err(e) if e.is_retryable() => {
                log::warn!("{item_path}: the claiming delete's outcome is unknown ({e}); consuming it, another consumer may too");
            }
            Err(e) => {
                log::warn!("{item_path}: {e}");
                core.tell_error(&e);
                continue;
            }
        }
        if tx.send(Work::Claimed { name, values }).is_err() {
            log::error!("{item_path}: claimed, but no worker is left to consume it");
            continue;
        }
        handed += 1;
    }
    Ok(handed)
}
