//! What a lock-safe pass knows of the lock directory: the locks it listed
//! or met, the items it jumped over, and from those the items abandoned by
//! a consumer that is gone or let them go.

use std::collections::HashSet;
use std::time::Instant;

use super::ABANDONED_CHECK;
use crate::client::{ChildWatch, Opts};
use crate::error::{Error, Result};
use crate::path;
use crate::queue::core::Core;
use crate::queue::engine::Control;
use crate::sync::Latch;

/// What a lock-safe pass knows of the lock directory: the locks of its
/// latest listing, and the directory's watch with a latch of its own (which
/// also wakes the scanner's wait).
pub(super) struct LockView {
    lock_path: String,
    locked: HashSet<String>,
    /// Items the pass jumped over (see `spread`), with when.
    jumped: Vec<(String, Instant)>,
    changed: Latch,
    pub(super) watch: ChildWatch,
    checked_at: Instant,
}

impl LockView {
    /// Lists the lock directory with a watch; `None` if it does not exist.
    pub(super) fn list<T: Send + 'static>(core: &Core<T>, lock_path: &str, latch: &Latch) -> Result<Option<LockView>> {
        let changed = latch.chained();
        match core.client.watch_children(lock_path, &changed, Opts::new()) {
            Err(Error::NoNode { .. }) => Ok(None),
            Err(e) => Err(e),
            Ok((locks, _, watch)) => Ok(Some(LockView {
                lock_path: lock_path.to_owned(),
                locked: locks.into_iter().collect(),
                jumped: Vec::new(),
                changed,
                watch,
                checked_at: Instant::now(),
            })),
        }
    }

    /// Whether the item named is locked (by anyone, this consumer too) as
    /// far as this pass knows.
    pub(super) fn is_locked(&self, name: &str) -> bool {
        self.locked.contains(name)
    }

    /// Notes items the pass jumped over, left to the other consumers.
    pub(super) fn jumped_over(&mut self, names: impl Iterator<Item = String>) {
        let now = Instant::now();
        self.jumped.extend(names.map(|name| (name, now)));
    }

    /// Notes items found locked by another consumer since the listing (a
    /// claim met their locks): should those locks vanish with the items
    /// left behind, they are abandoned too.
    pub(super) fn also_locked(&mut self, names: &[String]) {
        self.locked.extend(names.iter().cloned());
    }

    /// At most once per [`ABANDONED_CHECK`], when the lock directory changed
    /// or items jumped over have waited that long: returns, in the kind's
    /// order, the items still in the queue whose locks vanished since they
    /// were seen (the directory is listed again first; their holder
    /// crashed, lost its session or let them go), and the items jumped over
    /// that nobody locked meanwhile. Whether this pass went by them, jumped
    /// over them or has them still ahead does not matter. Items this
    /// consumer holds or settled are left out; the others are looked up
    /// with one multi-read.
    pub(super) fn abandoned<T: Send + 'static>(
        &mut self,
        core: &Core<T>,
        control: &Control,
        latch: &Latch,
    ) -> Result<Vec<String>> {
        let jumped_due = self.jumped.first().is_some_and(|(_, at)| due(at));
        if !(self.changed.is_open() || jumped_due) || !due(&self.checked_at) {
            return Ok(Vec::new());
        }
        let mut vanished = Vec::new();
        if self.changed.is_open() {
            let Some(unlocked) = self.relist(core, latch)? else {
                return Ok(Vec::new());
            };
            vanished = unlocked;
        }
        self.checked_at = Instant::now();
        vanished.extend(self.jumped_unlocked());
        vanished.retain(|name| !control.leases.holds(name) && !control.leases.settled_lately(name));
        vanished.sort();
        vanished.dedup();
        if vanished.is_empty() {
            return Ok(vanished);
        }
        core.kind.sort(&mut vanished);
        still_there(core, vanished)
    }

    /// Lists the lock directory again (with a new watch); returns the items
    /// whose locks vanished since, or `None` if the directory is gone.
    fn relist<T: Send + 'static>(&mut self, core: &Core<T>, latch: &Latch) -> Result<Option<Vec<String>>> {
        let Some(fresh) = LockView::list(core, &self.lock_path, latch)? else {
            return Ok(None);
        };
        // The watch replaced had fired: nothing is lost with it.
        let LockView {
            locked, changed, watch, ..
        } = fresh;
        self.watch = watch;
        let vanished = self
            .locked
            .iter()
            .filter(|name| !locked.contains(*name))
            .cloned()
            .collect();
        (self.locked, self.changed) = (locked, changed);
        Ok(Some(vanished))
    }

    /// Takes out the items jumped over a check ago or more, and returns
    /// those nobody locked within it: no other consumer is taking them
    /// (their holder may have died before this pass listed the locks).
    /// Those locked since count as locked.
    fn jumped_unlocked(&mut self) -> Vec<String> {
        let (old, young): (Vec<_>, Vec<_>) = std::mem::take(&mut self.jumped)
            .into_iter()
            .partition(|(_, at)| due(at));
        self.jumped = young;
        old.into_iter()
            .map(|(name, _)| name)
            .filter(|name| !self.locked.contains(name))
            .collect()
    }
}

/// Whether a check's time has passed since `at`.
fn due(at: &Instant) -> bool {
    at.elapsed() >= ABANDONED_CHECK
}

/// The items of `vanished` still in the queue, with one multi-read: an
/// acknowledged item went with its lock; an abandoned one stayed.
fn still_there<T: Send + 'static>(core: &Core<T>, vanished: Vec<String>) -> Result<Vec<String>> {
    let paths: Vec<String> = vanished.iter().map(|name| path::join(&core.path, name)).collect();
    let found = core.client.read_many_with(&paths, Opts::new())?;
    let abandoned: Vec<String> = vanished
        .into_iter()
        .zip(found)
        .filter_map(|(name, read)| (!matches!(read, Err(Error::NoNode { .. }))).then_some(name))
        .collect();
    if !abandoned.is_empty() {
        log::info!(
            "queue {}: {} item(s) unlocked by a consumer that is gone or let them go; taking them first",
            core.path,
            abandoned.len()
        );
    }
    Ok(abandoned)
}
