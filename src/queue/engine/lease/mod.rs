//! The lease of a lock-safe consumer on an item, from taking to settling.
//!
//! A consumer takes a lease by creating the ephemeral lock node
//! `<lock_path>/<item name>` holding an owner token (a window's locks in one
//! multi, [`Leases::take`]); while it holds the
//! lease, the item stays in the queue. The lease ends in one multi fenced on
//! the lock ([`Lease::fence`]) that acknowledges the item (deletes it),
//! requeues it or moves it to the dead-letter path (the acknowledger sends
//! many items' in one multi), or in a release: the lock alone is deleted,
//! and another consumer may take the item. One reading of a fenced multi's
//! result ([`Fenced`]) serves every fenced end, single or
//! batched.
//!
//! A window's leases are taken, and those not handed over released,
//! together (`window`).
//!
//! A lock whose fate a lost reply left unknown (its creation, or a release
//! that failed) is never forgotten: it is kept as an orphan and deleted on a
//! later pass, if it is still ours. Until it is known gone it keeps its place
//! in the claim window ([`Leases::room`]), as it may still be on the server:
//! a consumer's locks never outnumber its window.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use super::POLL;
use crate::client::{Op, Opts, Session, Stat};
use crate::error::{Error, Result};
use crate::queue::core::Core;
use crate::queue::stats::QueueCounters;

mod window;

pub(super) use window::{ItemRead, Taken};

/// How soon orphaned locks that could not be deleted are tried again.
const ORPHAN_RETRY: Duration = Duration::from_millis(500);

/// The leases one engine holds, and its orphaned locks.
pub(super) struct Leases {
    /// Items locked by this consumer and not yet settled (acknowledged,
    /// released or requeued), so no item is processed twice at once by this
    /// queue; each with whether its end is on its way to the server
    /// ([`Leases::ending`]).
    held: Mutex<HashMap<String, bool>>,
    /// Signalled whenever leases are freed.
    freed: Condvar,
    /// Items settled since the scanner last began a listing: a listing
    /// begun before their settling may still name them.
    settled: Mutex<HashSet<String>>,
    /// Locks of ours that could not be released, or whose creation's outcome
    /// is unknown: deleted on a later pass, so none outlives its use, and
    /// counted in the window until then.
    orphans: Mutex<Vec<Orphan>>,
}

impl Leases {
    /// No leases held, no orphans.
    pub(super) fn new() -> Leases {
        Leases {
            held: Mutex::new(HashMap::new()),
            freed: Condvar::new(),
            settled: Mutex::new(HashSet::new()),
            orphans: Mutex::new(Vec::new()),
        }
    }

    /// Whether this consumer holds a lease on the item named.
    pub(super) fn holds(&self, name: &str) -> bool {
        self.held.lock().contains_key(name)
    }

    /// Whether this consumer settled the item named since the scanner began
    /// its listing ([`Leases::listing`]): gone, or released to be taken on a
    /// later pass, either way not to be claimed from this listing.
    pub(super) fn settled_lately(&self, name: &str) -> bool {
        self.settled.lock().contains(name)
    }

    /// The scanner begins a listing: the items settled before it are not in
    /// it.
    pub(super) fn listing(&self) {
        self.settled.lock().clear();
    }

    /// Waits until this consumer has fewer than `window` locks that may
    /// exist (or `stopping` says the queue stops) and returns how many more
    /// leases may be taken: at least `want` of them while the ends of
    /// others are on their way to the server (they free room within a
    /// round trip), or as many as there are once none is. Its locks are the
    /// leases held and the orphans of its current session: an orphan's lock may still be on the server, so
    /// it keeps its place in the window until it is known gone, and orphans
    /// in the way are settled meanwhile. For the scanner, the one thread that
    /// takes leases and settles orphans.
    pub(super) fn room<T: Send + 'static>(
        &self,
        core: &Core<T>,
        window: usize,
        want: usize,
        stopping: impl Fn() -> bool,
    ) -> usize {
        let mut settle_at = Instant::now();
        loop {
            let mut held = self.held.lock();
            // Counted after the leases: a lease let go becomes an orphan
            // before it leaves `held`, so no lock is missed in between.
            let orphans = self.orphans_of(core.client.session());
            let room = window.saturating_sub(held.len() + orphans);
            let coming = held.values().any(|ending| *ending);
            if room >= want.max(1) || (room > 0 && !coming) || stopping() {
                return room;
            }
            let now = Instant::now();
            if orphans > 0 && now >= settle_at {
                drop(held);
                settle_at = self.settle_orphans(core).unwrap_or(now);
                continue;
            }
            let wait = match orphans {
                0 => POLL,
                _ => settle_at.saturating_duration_since(now).min(POLL),
            };
            self.freed.wait_for(&mut held, wait);
        }
    }

    /// How many orphaned locks of `session` are kept (those of an earlier
    /// session went with it).
    fn orphans_of(&self, session: Session) -> usize {
        self.orphans.lock().iter().filter(|o| o.session == session).count()
    }

    /// The end of the lease on the item named is on its way to the server:
    /// its place in the window comes free within a round trip.
    pub(super) fn ending(&self, name: &str) {
        if let Some(ending) = self.held.lock().get_mut(name) {
            *ending = true;
        }
    }

    /// The items named are finished: their leases are free.
    pub(super) fn finished<'a>(&self, names: impl IntoIterator<Item = &'a str>) {
        self.free(names, true);
    }

    /// Frees the leases on the items named; `settled`: the items are gone
    /// from the queue (or another holder's), not released for another try.
    fn free<'a>(&self, names: impl IntoIterator<Item = &'a str>, settled: bool) {
        let mut held = self.held.lock();
        let mut lately = self.settled.lock();
        for name in names {
            held.remove(name);
            if settled {
                lately.insert(name.to_owned());
            }
        }
        self.freed.notify_all();
    }

    /// Releases a lease: deletes the lock if it is still ours, and forgets the
    /// item. A lock that could not be deleted (its fate unknown) becomes an
    /// orphan, deleted on a later pass; it keeps the lease's place in the
    /// window until then (it becomes an orphan before the lease is freed).
    pub(super) fn let_go<T: Send + 'static>(&self, core: &Core<T>, name: &str, lease: &Lease) {
        // A newer session means the lock went with the old one.
        if !lease.release(core) {
            self.unreleased(core, lease);
        }
        // Released: it may be taken again from the same listing.
        self.free([name], false);
    }

    /// Keeps the lock at `path`, created with `token` in session `session`
    /// with an unknown outcome, for deletion on a later pass.
    /// Keeps a lease's lock that could not be released as an orphan,
    /// deleted on a later pass, unless a newer session means the lock went
    /// with the old one.
    pub(super) fn unreleased<T: Send + 'static>(&self, core: &Core<T>, lease: &Lease) {
        if core.client.session() != lease.session {
            return;
        }
        log::warn!("lock {} could not be released; it is retried", lease.path);
        self.orphans.lock().push(Orphan {
            path: lease.path.clone(),
            czxid: Some(lease.czxid),
            token: None,
            session: lease.session,
        });
    }

    fn orphan_created(&self, path: String, token: &[u8], session: Session) {
        log::warn!("the creation of lock {path} has an unknown outcome; it is checked again");
        self.orphans.lock().push(Orphan {
            path,
            czxid: None,
            token: Some(token.to_vec()),
            session,
        });
    }

    /// Deletes the orphaned locks that can be settled now; returns when to
    /// try again if some remain.
    pub(super) fn settle_orphans<T: Send + 'static>(&self, core: &Core<T>) -> Option<Instant> {
        let orphans = std::mem::take(&mut *self.orphans.lock());
        if orphans.is_empty() {
            return None;
        }
        let mut left = Vec::new();
        for orphan in orphans {
            if core.client.session() != orphan.session {
                // Its session expired, and its ephemeral locks with it.
                continue;
            }
            let settled = match core.client.get_data(&orphan.path) {
                Ok((data, stat)) if orphan.is(&data, &stat) => {
                    let fenced = Opts::new().fenced(orphan.session);
                    match core.client.delete_with(&orphan.path, Some(stat.version), fenced) {
                        Ok(_) | Err(Error::NoNode { .. } | Error::BadVersion { .. } | Error::SessionExpired) => true,
                        Err(_) => false,
                    }
                }
                // Not ours, or gone.
                Ok(_) | Err(Error::NoNode { .. }) => true,
                Err(_) => false,
            };
            if settled {
                log::info!("orphaned lock {} settled", orphan.path);
            } else {
                left.push(orphan);
            }
        }
        let mut orphans = self.orphans.lock();
        orphans.extend(left);
        (!orphans.is_empty()).then(|| Instant::now() + ORPHAN_RETRY)
    }
}

/// A lock of ours at `path` that must still be deleted: known by its creation
/// zxid, or (when its creation's reply was lost) by the token it holds.
struct Orphan {
    path: String,
    czxid: Option<i64>,
    token: Option<Vec<u8>>,
    session: Session,
}

impl Orphan {
    /// Whether the node read at `path` is this orphan.
    fn is(&self, data: &[u8], stat: &Stat) -> bool {
        match (self.czxid, &self.token) {
            (Some(czxid), _) => stat.czxid == czxid,
            (None, Some(token)) => data == token.as_slice(),
            (None, None) => false,
        }
    }
}

/// A consumer's lease on an item: its lock, the ephemeral node
/// `<lock_path>/<item name>` holding an owner token. Writes that end a claim
/// are fenced three ways: the lock must still be the node this consumer
/// created (its creation zxid, checked just before), at the same version
/// (deleted at that version inside the multi), in the same session (the
/// multi is never retried in a newer one). A new holder's lock at the same
/// path also starts at version 0, so the version alone would not tell them
/// apart.
pub(super) struct Lease {
    path: String,
    version: i32,
    czxid: i64,
    session: Session,
}

impl Lease {
    /// The lease whose lock was created at `path` with `stat`, in `session`.
    fn created(path: String, stat: &Stat, session: Session) -> Lease {
        Lease {
            path,
            version: stat.version,
            czxid: stat.czxid,
            session,
        }
    }

    /// After a lock create whose outcome is unknown (its reply was lost): the
    /// lock is ours if it holds our token and our session is unchanged.
    fn recover<T: Send + 'static>(
        core: &Core<T>,
        path: String,
        token: &[u8],
        session: Session,
    ) -> Result<Option<Lease>> {
        // The server reconnected to may not have applied the create yet.
        core.client.sync(&path, Opts::new().once())?;
        match core.client.get_data(&path) {
            Ok((data, stat)) if data == token && core.client.session() == session => {
                Ok(Some(Lease::created(path, &stat, session)))
            }
            Ok(_) | Err(Error::NoNode { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// A token naming this consumer's session and claim, stored in its locks.
    fn token<T: Send + 'static>(core: &Core<T>) -> Vec<u8> {
        format!(
            "zk-queue {:x} {:016x}",
            core.client.session_id().unwrap_or_default(),
            fastrand::u64(..)
        )
        .into_bytes()
    }

    /// The path of the lock.
    pub(super) fn path(&self) -> &str {
        &self.path
    }

    /// The session the lock was taken in.
    pub(super) fn session(&self) -> Session {
        self.session
    }

    /// Whether the node found at this lock's path now (`None`: no node) is
    /// another holder's lock: then nothing of the claim may be touched.
    pub(super) fn replaced(&self, found: Option<&Stat>) -> bool {
        found.is_some_and(|stat| stat.czxid != self.czxid)
    }

    /// Whether the node found at this lock's path before a multi that ends
    /// the lease (`None`: no node) says the lease is lost: another holder's
    /// lock, or no lock unless `sent_before`, an earlier multi of ours whose
    /// reply was lost, may have deleted it (otherwise it went with an
    /// expired session).
    pub(super) fn lost(&self, found: Option<&Stat>, sent_before: bool) -> bool {
        self.replaced(found) || (found.is_none() && !sent_before)
    }

    /// The operations of a multi that ends this lease with `ops` on the item:
    /// the lock's delete at its version first, then `ops`.
    pub(super) fn fence(&self, ops: impl IntoIterator<Item = Op>) -> Vec<Op> {
        // The fence: a multi is all or nothing, so the item is touched only
        // if the lock is still at the version this consumer created it with.
        // The versioned delete is that check; a `check` of the same lock at
        // the same version beside it would fence nothing more. First, so
        // that a changed lock fails the multi at index 0 ([`Fenced::of`]).
        let mut fenced = vec![Op::delete(&self.path, Some(self.version))];
        fenced.extend(ops);
        fenced
    }

    /// Deletes the lock if it is still ours. Returns whether the lock is
    /// settled (deleted, gone, another holder's, or gone with an expired
    /// session); `false` if it may still be ours.
    fn release<T: Send + 'static>(&self, core: &Core<T>) -> bool {
        match core.client.exists(&self.path) {
            Ok(Some(stat)) if !self.replaced(Some(&stat)) => {}
            // Gone, or another holder's now.
            Ok(_) => return true,
            Err(e) => {
                log::debug!("cannot check lock {}: {e}", self.path);
                return false;
            }
        }
        let fenced = Opts::new().fenced(self.session);
        match core.client.delete_with(&self.path, Some(self.version), fenced) {
            Ok(_) | Err(Error::NoNode { .. } | Error::SessionExpired) => true,
            // Still ours, at another version.
            Err(Error::BadVersion { .. }) => false,
            Err(e) => {
                log::debug!("cannot release lock {}: {e}", self.path);
                false
            }
        }
    }
}

/// What the result of a multi fenced on a lease's lock (its first operation
/// deletes the lock at its version) says about the claim it ends: the one
/// reading of it, for single and batched acknowledges, requeues and
/// dead-letter moves alike.
pub(super) enum Fenced {
    /// Applied.
    Applied,
    /// The lock's versioned delete failed (the lock is gone, or at another
    /// version), or the session expired. The lease was lost, unless the item
    /// is already gone: then an earlier attempt of this very multi went
    /// through before its reply was lost: reading the item tells which.
    ItemDecides,
    /// The lock held, but the item was gone: someone else deleted it while
    /// this consumer held it (removed by id without the lock path, say).
    /// Nothing was applied; the lock is still ours to release.
    ItemRemoved,
    /// Any other failure: the item changed under us, or the request failed.
    Failed(Error),
}

impl Fenced {
    /// Reads the result of a fenced multi on the item at `item_path`.
    pub(super) fn of<R>(result: Result<R>, item_path: &str) -> Fenced {
        match result {
            Ok(_) => Fenced::Applied,
            Err(Error::SessionExpired) => Fenced::ItemDecides,
            Err(Error::MultiFailed { index: 0, source })
                if matches!(source.as_ref(), Error::NoNode { .. } | Error::BadVersion { .. }) =>
            {
                Fenced::ItemDecides
            }
            Err(Error::MultiFailed { source, .. }) if matches!(source.as_ref(), Error::NoNode { path } if path == item_path) => {
                Fenced::ItemRemoved
            }
            Err(e) => Fenced::Failed(e),
        }
    }
}

/// An item removed by someone else while held, counted.
pub(super) fn item_removed<T>(core: &Core<T>, item_path: &str) -> Error {
    QueueCounters::bump(&core.counters.removed_while_held);
    Error::ItemRemoved {
        path: item_path.to_owned(),
    }
}

/// Logs how a claim failed to end and tells the consumer: an item removed
/// while held at info (someone meant it), anything else at warn.
pub(super) fn report<T: Send + 'static>(core: &Core<T>, error: &Error) {
    let level = match error {
        Error::ItemRemoved { .. } => log::Level::Info,
        _ => log::Level::Warn,
    };
    log::log!(level, "queue {}: {error}", core.path);
    core.tell_error(error);
}

/// A lost lease on `item_path`, counted.
pub(super) fn lease_lost<T>(core: &Core<T>, item_path: &str) -> Error {
    QueueCounters::bump(&core.counters.lease_lost);
    core.counters.metrics.lease_lost();
    Error::LeaseLost {
        path: item_path.to_owned(),
    }
}
