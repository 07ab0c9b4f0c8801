//! The scanner: lists the queue (and, lock-safe, the lock directory) with a
//! watch each, and claims the items of a listing in order, a window at a
//! time, until the listing is done; then it waits for a watch, a connection
//! change, a due item or the rescan interval.
//!
//! A lock-safe consumer also picks up abandoned items during a long pass:
//! an item whose lock it saw in a listing of the lock directory, or met when
//! its own claim found the item locked, and which stayed when that lock
//! vanished (its holder crashed or its session expired), whether the pass
//! went by it, jumped over it or has it ahead; and an item its pass jumped
//! over (competing consumers spread their claims) that nobody locked within
//! [`ABANDONED_CHECK`], such as one whose holder died before the pass listed
//! the locks. When the lock directory changes, or jumped items come due,
//! the scanner looks (listing the directory again at most once per
//! [`ABANDONED_CHECK`]) before its next window, and claims such items first.

use std::collections::{HashMap, HashSet, VecDeque};
use std::time::{Duration, Instant};

use crossbeam_channel::Sender;

use super::claim::{self, Claimed};
use super::kept::Kept;
use super::spread::{self, Next};
use super::{Control, Work, MAX_BACKOFF, POLL};
use crate::client::{Arrivals, ChildWatch, Opts, Stat};
use crate::error::{Error, Result};
use crate::naming::{delay_epoch, is_item, Kind};
use crate::path;
use crate::queue::core::Core;
use crate::queue::DeliverAt;
use crate::sync::{earliest, Backoff, Gate, Latch};

/// The most items of one listing a pass keeps; it lists again for the rest.
pub(super) const MAX_PENDING: usize = 2_048;

/// How often, at most, a pass lists the lock directory again for abandoned
/// items: half a second, so that a busy consumer takes them within a second
/// of their locks vanishing, the items it has in hand included.
pub(super) const ABANDONED_CHECK: Duration = Duration::from_millis(500);

pub(super) fn scan_loop<T: Send + 'static>(core: &Core<T>, control: &Control, tx: Sender<Work<T>>) {
    let mut backoff = Backoff::new(POLL, MAX_BACKOFF);
    let mut kept = Kept::new();
    while !control.stopping() {
        let latch = Latch::new();
        *control.wake.lock() = latch.clone();
        if control.stopping() {
            break;
        }
        // Connection changes (and a new session) wake the scanner to list again.
        let _guard = core.client.wake_on_state_change(&latch);
        match scan(core, control, &tx, &latch, &mut kept) {
            Ok(pass) => {
                backoff.reset();
                // Also list again after a while: ZooKeeper drops some watch
                // events (see `QueueBuilder::rescan_interval`). An interval
                // too long to add means never.
                let rescan_at = Instant::now().checked_add(core.options.rescan_interval);
                latch.wait_until(earliest(pass.wake_at, rescan_at));
            }
            Err(e) => {
                let pause = backoff.pause();
                log::log!(
                    backoff.log_level(),
                    "queue {}: {e}; scanning again in {pause:?}",
                    core.path
                );
                core.tell_error(&e);
                latch.wait_until(Some(Instant::now() + pause));
            }
        }
    }
}

/// The outcome of one pass: the watches to keep while waiting, and when to
/// scan again at the latest.
struct Pass {
    _watches: Vec<ChildWatch>,
    wake_at: Option<Instant>,
}

fn scan<T: Send + 'static>(
    core: &Core<T>,
    control: &Control,
    tx: &Sender<Work<T>>,
    latch: &Latch,
    kept: &mut Kept,
) -> Result<Pass> {
    let now = || Some(Instant::now());
    // A queue or lock node deleted under the consumer (by an operator, or
    // reaped as an empty container) is created again, and listed at once.
    let recreated = || -> Result<Pass> {
        core.ensure_nodes()?;
        Ok(Pass {
            _watches: Vec::new(),
            wake_at: now(),
        })
    };
    // Items this consumer settles from now on may still be named.
    control.leases.listing();
    // Items a plain consumer expects to list next are read with the listing.
    let expected = kept.expected(core);
    let mut read_ahead = ReadAhead::new();
    // A sharded queue's shards take turns to hold a whole listing.
    let mut gate_pass = None;
    let (names, mut watches, listed) = match kept.arrived_instead_of_listing(core) {
        Some(arrived) => (arrived, Vec::new(), false),
        None => {
            // Items created from now on arrive by name.
            kept.restart_arrivals(core);
            let paths: Vec<String> = expected.iter().map(|name| path::join(&core.path, name)).collect();
            gate_pass = core.options.listing_gate.as_deref().map(Gate::enter);
            let started = Instant::now();
            let listing = match core
                .client
                .watch_children_reading(&core.path, latch, Opts::new(), &paths)
            {
                Err(Error::NoNode { .. }) => return recreated(),
                other => other?,
            };
            kept.listed(&listing.children);
            log::trace!(
                "queue {}: listed {} children in {:?}, {} expected read with them",
                core.path,
                listing.children.len(),
                started.elapsed(),
                listing.read.iter().filter(|read| read.is_ok()).count()
            );
            read_ahead.extend(
                expected
                    .into_iter()
                    .zip(listing.read)
                    .filter_map(|(name, read)| Some((name, read.ok()?))),
            );
            (listing.children, vec![listing.watch], true)
        }
    };
    if let Some(arrivals) = &kept.arrivals {
        arrivals.wake_on_arrival(latch);
    }
    let (arrivals, spread) = (kept.arrivals.as_ref(), &mut kept.spread);
    // Orphans left are tried again soon; deleting one fires the lock watch.
    let mut wake_at = control.leases.settle_orphans(core);
    let mut locks = match &core.options.lock_path {
        // Watching the locks picks up an item the moment its holder dies.
        Some(lock_path) => match LockView::list(core, lock_path, latch)? {
            Some(view) => Some(view),
            None => return recreated(),
        },
        None => None,
    };
    let mut items: Vec<String> = names.into_iter().filter(|n| is_item(n)).collect();
    core.kind.sort(&mut items);
    if listed {
        control.deferred.keep_only(&items.iter().map(String::as_str).collect());
    }
    // A pass keeps the head of a long listing and lists again when done
    // with it: a consumer's memory does not grow with its backlog (nor a
    // sharded consumer's with its shards).
    let mut whole = true;
    if items.len() > MAX_PENDING {
        items.truncate(MAX_PENDING);
        items.shrink_to_fit();
        whole = false;
        wake_at = now();
    }
    drop(gate_pass);

    // At least one item per listing, so a steady stream of puts cannot
    // starve the consumer (Curator's livelock with 0).
    let refresh_after = (core.kind == Kind::Priority).then(|| core.options.min_items_before_refresh.max(1));
    // Plain mode claims a window at a time; a priority queue's window ends
    // where it may have to look again.
    let window = refresh_after.map_or(core.options.claim_window, |n| n.min(core.options.claim_window));
    let now_ms = DeliverAt::now().epoch_millis();
    // Lock-safe: never more locks on the server than the claim window (the
    // leases held, and orphaned locks not yet known gone).
    let lock_safe = locks.is_some();
    let room = || {
        if lock_safe {
            control
                .leases
                .room(core, core.options.claim_window, || control.stopping())
                .max(1)
        } else {
            window
        }
    };
    let mut limit = spread.window(window).min(room());
    let mut handed = 0;
    let mut batch = Vec::with_capacity(window);
    // The items this pass knows of, so an arrival it listed is not taken
    // twice.
    let mut seen: HashSet<String> = match arrivals {
        Some(_) => items.iter().cloned().collect(),
        None => HashSet::new(),
    };
    let mut pending = VecDeque::from(items);
    // Competing consumers start their windows in different places (see
    // `spread`); one claiming alone takes the listing in order.
    let mut jump = spread.spreading();
    loop {
        if jump && batch.is_empty() {
            jump = false;
            let range = spread::range(core.kind, pending.iter(), now_ms);
            let skip = spread.skip(range, limit);
            if skip > 0 {
                // Left to the next listing, which comes at once; a lock-safe
                // pass takes them itself if nobody did within a check.
                let skipped = pending.drain(..skip);
                if let Some(view) = &mut locks {
                    view.jumped_over(skipped);
                }
                wake_at = now();
                whole = false;
            }
        }
        let Some(name) = pending.pop_front() else {
            break;
        };
        if control.stopping() {
            whole = false;
            break;
        }
        if core.kind == Kind::Delay {
            let due = delay_epoch(&name);
            if due > now_ms {
                // Sorted by due time: nothing after this is due either.
                let due_at = Instant::now() + Duration::from_millis((due - now_ms).unsigned_abs());
                wake_at = earliest(wake_at, Some(due_at));
                whole = false;
                break;
            }
        }
        if refresh_after.is_some_and(|n| handed >= n) {
            // Look again for more urgent items: those created since the
            // listing take their places in it, or, without arrivals (or
            // with one missed), the queue is listed again if it changed.
            match arrivals.and_then(Arrivals::take) {
                Some(arrived) => {
                    pending.push_front(name);
                    merge(core.kind, &mut pending, &mut seen, arrived);
                    handed = 0;
                    continue;
                }
                None if latch.is_open() => {
                    wake_at = now();
                    whole = false;
                    break;
                }
                None => {}
            }
        }
        if batch.is_empty() {
            if let Some(view) = &mut locks {
                // Items whose holders are gone since come first: they were
                // ahead of this one, or will be taken in this pass anyway.
                let abandoned = view.abandoned(core, control, latch)?;
                if !abandoned.is_empty() {
                    pending.push_front(name);
                    for item in abandoned.into_iter().rev() {
                        pending.push_front(item);
                    }
                    continue;
                }
            }
        }
        if locks.as_ref().is_some_and(|view| view.is_locked(&name)) || control.skipped.lock().contains(&name) {
            continue;
        }
        if control.leases.holds(&name) || control.leases.settled_lately(&name) || control.deferred.holds_back(&name) {
            continue;
        }
        batch.push(name);
        if batch.len() >= limit {
            let tried = batch.len();
            let claimed = claim_window(core, control, tx, std::mem::take(&mut batch), &mut read_ahead)?;
            if let Some(view) = &mut locks {
                view.also_locked(&claimed.held_elsewhere);
            }
            handed += claimed.handed;
            match spread.after(tried, claimed.lost, window) {
                Next::Continue => {}
                Next::Jump => jump = true,
                Next::Relist => {
                    wake_at = now();
                    whole = false;
                    break;
                }
            }
            limit = spread.window(window).min(room());
        }
    }
    if !batch.is_empty() && !control.stopping() {
        let tried = batch.len();
        let claimed = claim_window(core, control, tx, batch, &mut read_ahead)?;
        spread.after(tried, claimed.lost, window);
    }
    // Wake for the first item backing off, once it is due.
    let next_due = control.deferred.next_due();
    wake_at = earliest(wake_at, next_due);
    // Nothing left behind: the next pass may take the arrivals instead of
    // listing the queue again.
    kept.whole = whole && next_due.is_none() && !control.stopping();
    watches.extend(locks.map(|view| view.watch));
    Ok(Pass {
        _watches: watches,
        wake_at,
    })
}

/// What a lock-safe pass knows of the lock directory: the locks of its
/// latest listing, and the directory's watch with a latch of its own (which
/// also wakes the scanner's wait).
struct LockView {
    lock_path: String,
    locked: HashSet<String>,
    /// Items the pass jumped over (see `spread`), with when.
    jumped: Vec<(String, Instant)>,
    changed: Latch,
    watch: ChildWatch,
    checked_at: Instant,
}

impl LockView {
    /// Lists the lock directory with a watch; `None` if it does not exist.
    fn list<T: Send + 'static>(core: &Core<T>, lock_path: &str, latch: &Latch) -> Result<Option<LockView>> {
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
    fn is_locked(&self, name: &str) -> bool {
        self.locked.contains(name)
    }

    /// Notes items the pass jumped over, left to the other consumers.
    fn jumped_over(&mut self, names: impl Iterator<Item = String>) {
        let now = Instant::now();
        self.jumped.extend(names.map(|name| (name, now)));
    }

    /// Notes items found locked by another consumer since the listing (a
    /// claim met their locks): should those locks vanish with the items
    /// left behind, they are abandoned too.
    fn also_locked(&mut self, names: &[String]) {
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
    fn abandoned<T: Send + 'static>(
        &mut self,
        core: &Core<T>,
        control: &Control,
        latch: &Latch,
    ) -> Result<Vec<String>> {
        let due = |at: &Instant| at.elapsed() >= ABANDONED_CHECK;
        let jumped_due = self.jumped.first().is_some_and(|(_, at)| due(at));
        if !(self.changed.is_open() || jumped_due) || !due(&self.checked_at) {
            return Ok(Vec::new());
        }
        let mut vanished = Vec::new();
        if self.changed.is_open() {
            let Some(fresh) = LockView::list(core, &self.lock_path, latch)? else {
                return Ok(Vec::new());
            };
            // The watch replaced had fired: nothing is lost with it.
            let LockView {
                locked, changed, watch, ..
            } = fresh;
            self.watch = watch;
            vanished.extend(self.locked.iter().filter(|name| !locked.contains(*name)).cloned());
            (self.locked, self.changed) = (locked, changed);
        }
        self.checked_at = Instant::now();
        // Items jumped over that nobody locked within a check: no other
        // consumer is taking them (their holder may have died before this
        // pass listed the locks). Those locked since count as locked.
        let (old, young): (Vec<_>, Vec<_>) = std::mem::take(&mut self.jumped)
            .into_iter()
            .partition(|(_, at)| due(at));
        self.jumped = young;
        vanished.extend(
            old.into_iter()
                .map(|(name, _)| name)
                .filter(|name| !self.locked.contains(name)),
        );
        vanished.retain(|name| !control.leases.holds(name) && !control.leases.settled_lately(name));
        vanished.sort();
        vanished.dedup();
        if vanished.is_empty() {
            return Ok(vanished);
        }
        core.kind.sort(&mut vanished);
        // An acknowledged item went with its lock; an abandoned one stayed.
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
}

/// Puts the items `arrived` into their places in `pending` (sorted for
/// `kind`), leaving out those the pass already knows of.
fn merge(kind: Kind, pending: &mut VecDeque<String>, seen: &mut HashSet<String>, arrived: Vec<String>) {
    for name in arrived {
        if is_item(&name) && seen.insert(name.clone()) {
            let key = kind.order_key(&name);
            let at = pending.partition_point(|p| kind.order_key(p) < key);
            pending.insert(at, name);
        }
    }
}

/// Items read with the listing, by name: their data and stat.
pub(super) type ReadAhead = HashMap<String, (Vec<u8>, Stat)>;

/// Claims a window of items in the queue's mode; a plain window uses (and
/// takes out) the items of `read_ahead` it claims instead of reading them.
fn claim_window<T: Send + 'static>(
    core: &Core<T>,
    control: &Control,
    tx: &Sender<Work<T>>,
    names: Vec<String>,
    read_ahead: &mut ReadAhead,
) -> Result<Claimed> {
    match &core.options.lock_path {
        Some(lock_dir) => claim::locked_window(core, control, tx, lock_dir, names),
        None => claim::window(core, control, tx, names, read_ahead),
    }
}
