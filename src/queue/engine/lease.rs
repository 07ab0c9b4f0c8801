//! The lease of a lock-safe consumer on an item, from taking to settling.
//!
//! A consumer takes a lease by creating the ephemeral lock node
//! `<lock_path>/<item name>` holding an owner token (a window's locks in one
//! multi, [`Leases::take`]); while it holds the
//! lease, the item stays in the queue. The lease ends in one multi fenced on
//! the lock ([`Lease::fence`]) that acknowledges the item (deletes it),
//! requeues it or moves it to the dead-letter path, or in a release: the lock
//! alone is deleted, and another consumer may take the item. One reading of
//! a fenced multi's result ([`Fenced`], [`item_decides`]) serves the single
//! and the batched acknowledge alike.
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
use crate::client::{CreateMode, Created, Op, Opts, Session, Stat};
use crate::error::{Error, Result};
use crate::path;
use crate::queue::core::Core;
use crate::queue::stats::QueueCounters;

/// How soon orphaned locks that could not be deleted are tried again.
const ORPHAN_RETRY: Duration = Duration::from_millis(500);

/// The leases one engine holds, and its orphaned locks.
pub(super) struct Leases {
    /// Items locked by this consumer and not yet settled (acknowledged,
    /// released or requeued), so no item is processed twice at once by this
    /// queue.
    held: Mutex<HashSet<String>>,
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
            held: Mutex::new(HashSet::new()),
            freed: Condvar::new(),
            settled: Mutex::new(HashSet::new()),
            orphans: Mutex::new(Vec::new()),
        }
    }

    /// Whether this consumer holds a lease on the item named.
    pub(super) fn holds(&self, name: &str) -> bool {
        self.held.lock().contains(name)
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
    /// leases may be taken. Its locks are the leases held and the orphans of
    /// its current session: an orphan's lock may still be on the server, so
    /// it keeps its place in the window until it is known gone, and orphans
    /// in the way are settled meanwhile. For the scanner, the one thread that
    /// takes leases and settles orphans.
    pub(super) fn room<T: Send + 'static>(&self, core: &Core<T>, window: usize, stopping: impl Fn() -> bool) -> usize {
        let mut settle_at = Instant::now();
        loop {
            let mut held = self.held.lock();
            // Counted after the leases: a lease let go becomes an orphan
            // before it leaves `held`, so no lock is missed in between.
            let orphans = self.orphans_of(core.client.session());
            let locks = held.len() + orphans;
            if locks < window || stopping() {
                return window.saturating_sub(locks);
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

    /// Takes leases on the items named (in order): their locks are created
    /// in multis (one transaction for a window), pipelined. A lock another
    /// consumer holds fails its multi alone: it is left out and the others
    /// are sent again without it, until most of a window proves held
    /// elsewhere and the rest go out as single creates. A failure ends
    /// nothing early, so every lock created is either taken or, when its
    /// creation's outcome is unknown (a lost reply: then every lock of its
    /// multi is recovered by its token), kept as an orphan.
    pub(super) fn take<T: Send + 'static>(&self, core: &Core<T>, lock_dir: &str, names: Vec<String>) -> Result<Taken> {
        let session = core.client.session();
        let token = Lease::token(core);
        let nodes: Vec<(String, Vec<u8>)> = names.iter().map(|n| (path::join(lock_dir, n), token.clone())).collect();
        // Fenced: a lease names the session its lock was created in, so the
        // creates must not go out in a newer one (a create waiting for a
        // connection while the session expires would leave a live lock that
        // the lease, counted lost with the old session, never deletes).
        let opts = Opts::new()
            .mode(CreateMode::Ephemeral)
            .acl(&core.options.acl)
            .fenced(session);
        let Created { results, stats, .. } = core.client.create_in_multis_with(&nodes, opts)?;
        let mut taken = Taken {
            leases: Vec::with_capacity(names.len()),
            held_elsewhere: Vec::new(),
            failure: None,
        };
        // A multi's creates come without their stats: read back.
        let unread: Vec<usize> = (0..nodes.len())
            .filter(|&i| results[i].is_ok() && stats[i].is_none())
            .collect();
        let paths = unread.iter().map(|&i| nodes[i].0.clone()).collect();
        let mut created = stats;
        for (i, stat) in unread
            .iter()
            .zip(self.read_created(core, paths, &token, session, &mut taken.failure)?)
        {
            created[*i] = stat;
        }
        let mut ensured = false;
        for (((name, (lock_path, _)), result), stat) in names.into_iter().zip(nodes).zip(results).zip(created) {
            let lease = match (result, stat) {
                (Ok(_), stat) => stat.map(|stat| Lease::created(lock_path, &stat, session)),
                // Held by another consumer.
                (Err(Error::NodeExists { .. }), _) => {
                    taken.held_elsewhere.push(name.clone());
                    None
                }
                (Err(Error::NoNode { .. }), _) => {
                    if !std::mem::replace(&mut ensured, true) {
                        if let Err(e) = core.ensure_nodes() {
                            taken.failure.get_or_insert(e);
                        }
                    }
                    None
                }
                // The reply was lost: the lock is ours if it holds our token.
                (Err(e), _) if e.is_retryable() => self.recover(core, lock_path, &token, session, &mut taken.failure),
                (Err(e), _) => {
                    taken.failure.get_or_insert(e);
                    None
                }
            };
            if let Some(lease) = lease {
                self.held.lock().insert(name.clone());
                taken.leases.push((name, lease));
            }
        }
        Ok(taken)
    }

    /// The stats of the locks at `paths`, created with `token` in `session`
    /// (a multi's creates come without): read back in one multi-read and
    /// checked to hold `token`, so a lease names its own lock's creation.
    /// `None` for a lock not ours any more, or not read now: then it is kept
    /// as an orphan.
    fn read_created<T: Send + 'static>(
        &self,
        core: &Core<T>,
        paths: Vec<String>,
        token: &[u8],
        session: Session,
        failure: &mut Option<Error>,
    ) -> Result<Vec<Option<Stat>>> {
        if paths.is_empty() {
            return Ok(Vec::new());
        }
        // The same session reads after its creates: it sees them, or later.
        let reads = core.client.read_many_with(&paths, Opts::new().fenced(session))?;
        Ok(paths
            .into_iter()
            .zip(reads)
            .map(|(path, read)| match read {
                Ok((data, stat)) if data == token => Some(stat),
                // Deleted (or replaced) since: not ours any more.
                Ok(_) | Err(Error::NoNode { .. }) => None,
                Err(e) => {
                    self.orphan_created(path, token, session);
                    failure.get_or_insert(e);
                    None
                }
            })
            .collect())
    }

    /// The lease of a lock created at `path` with `token` in `session` whose
    /// creation's outcome is unknown, if it is ours; if that cannot be told
    /// now, the lock is kept as an orphan and the failure recorded.
    fn recover<T: Send + 'static>(
        &self,
        core: &Core<T>,
        path: String,
        token: &[u8],
        session: Session,
        failure: &mut Option<Error>,
    ) -> Option<Lease> {
        match Lease::recover(core, path.clone(), token, session) {
            Ok(lease) => lease,
            Err(e) => {
                self.orphan_created(path, token, session);
                failure.get_or_insert(e);
                None
            }
        }
    }

    /// Releases a lease: deletes the lock if it is still ours, and forgets the
    /// item. A lock that could not be deleted (its fate unknown) becomes an
    /// orphan, deleted on a later pass; it keeps the lease's place in the
    /// window until then (it becomes an orphan before the lease is freed).
    pub(super) fn let_go<T: Send + 'static>(&self, core: &Core<T>, name: &str, lease: &Lease) {
        // A newer session means the lock went with the old one.
        if !lease.release(core) && core.client.session() == lease.session {
            log::warn!("lock {} could not be released; it is retried", lease.path);
            self.orphans.lock().push(Orphan {
                path: lease.path.clone(),
                czxid: Some(lease.czxid),
                token: None,
                session: lease.session,
            });
        }
        // Released: it may be taken again from the same listing.
        self.free([name], false);
    }

    /// Releases the leases of a window at once, as [`let_go`](Self::let_go)
    /// does one: the locks still ours (one multi-read of their stats) are
    /// deleted in multis fenced to their session, each at its version; a
    /// lock whose fate stays unknown becomes an orphan; then the items are
    /// forgotten.
    pub(super) fn let_go_all<T: Send + 'static>(&self, core: &Core<T>, leases: Vec<(String, Lease)>) {
        if leases.len() <= 1 {
            leases.iter().for_each(|(name, lease)| self.let_go(core, name, lease));
            return;
        }
        let paths: Vec<String> = leases.iter().map(|(_, lease)| lease.path.clone()).collect();
        let found = core
            .client
            .stats_many(&paths)
            .unwrap_or_else(|e| vec![Err(e); paths.len()]);
        let mut ours: Vec<&Lease> = Vec::new();
        let mut unsettled: Vec<&Lease> = Vec::new();
        for ((_, lease), stat) in leases.iter().zip(found) {
            match stat {
                Ok(Some(stat)) if !lease.replaced(Some(&stat)) => ours.push(lease),
                // Gone, or another holder's now.
                Ok(_) => {}
                Err(e) => {
                    log::debug!("cannot check lock {}: {e}", lease.path);
                    unsettled.push(lease);
                }
            }
        }
        // Taken together, in one session.
        let mut by_session: HashMap<Session, Vec<&Lease>> = HashMap::new();
        ours.into_iter()
            .for_each(|lease| by_session.entry(lease.session).or_default().push(lease));
        for (session, locks) in by_session {
            let deletes: Vec<(String, Option<i32>)> = locks.iter().map(|l| (l.path.clone(), Some(l.version))).collect();
            let fenced = Opts::new().fenced(session);
            let deleted = core
                .client
                .delete_in_multis_with(&deletes, fenced)
                .unwrap_or_else(|e| vec![Err(e); deletes.len()]);
            for (lease, result) in locks.into_iter().zip(deleted) {
                match result {
                    Ok(()) | Err(Error::NoNode { .. } | Error::SessionExpired) => {}
                    // Still ours, at another version, or its fate unknown.
                    Err(e) => {
                        log::debug!("cannot release lock {}: {e}", lease.path);
                        unsettled.push(lease);
                    }
                }
            }
        }
        for lease in unsettled {
            // A newer session means the lock went with the old one.
            if core.client.session() == lease.session {
                log::warn!("lock {} could not be released; it is retried", lease.path);
                self.orphans.lock().push(Orphan {
                    path: lease.path.clone(),
                    czxid: Some(lease.czxid),
                    token: None,
                    session: lease.session,
                });
            }
        }
        // Released: they may be taken again from the same listing.
        self.free(leases.iter().map(|(name, _)| name.as_str()), false);
    }

    /// Keeps the lock at `path`, created with `token` in session `session`
    /// with an unknown outcome, for deletion on a later pass.
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

/// The leases [`Leases::take`] took.
pub(super) struct Taken {
    /// The items locked, in order, each with its lease.
    pub(super) leases: Vec<(String, Lease)>,
    /// The items another consumer held the lock of.
    pub(super) held_elsewhere: Vec<String>,
    /// The first failure met, if any.
    pub(super) failure: Option<Error>,
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
/// (checked inside the multi), in the same session (the multi is never
/// retried in a newer one). A new holder's lock at the same path also starts
/// at version 0, so the version alone would not tell them apart.
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
    /// the lock's check first (the multi fails at index 0 if the lock changed),
    /// the lock's delete last.
    pub(super) fn fence(&self, ops: impl IntoIterator<Item = Op>) -> Vec<Op> {
        let mut fenced = vec![Op::check(&self.path, self.version)];
        fenced.extend(ops);
        fenced.push(Op::delete(&self.path, Some(self.version)));
        fenced
    }

    /// The operations that acknowledge the item at `item_path` and
    /// `item_version`: it is deleted, and the lease ends.
    pub(super) fn acknowledge_ops(&self, item_path: &str, item_version: i32) -> Vec<Op> {
        self.fence([Op::delete(item_path, Some(item_version))])
    }

    /// Runs a fenced multi (see [`fence`](Self::fence)) that ends this lease
    /// on `item_path`, unless the lock was replaced by another holder's (then
    /// nothing of theirs is touched).
    pub(super) fn settle<T: Send + 'static>(&self, core: &Core<T>, item_path: &str, ops: &[Op]) -> Result<()> {
        if self.lost(core.client.exists(&self.path)?.as_ref(), false) {
            return Err(lease_lost(core, item_path));
        }
        match Fenced::of(core.client.multi_with(ops, Opts::new().fenced(self.session)), item_path) {
            Fenced::Applied => Ok(()),
            Fenced::ItemDecides => item_decides(core, item_path, core.client.exists(item_path)?),
            // The caller lets the lease go: the lock is still ours.
            Fenced::ItemRemoved => Err(item_removed(core, item_path)),
            // The caller lets the lease go for another try.
            Fenced::Failed(e) => Err(e),
        }
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
/// checks the lock) says about the claim it ends: the one reading of it, for
/// single and batched acknowledges, requeues and dead-letter moves alike.
pub(super) enum Fenced {
    /// Applied.
    Applied,
    /// The lock check failed, or the session expired. The lease was lost,
    /// unless the item is already gone: then an earlier attempt of this very
    /// multi went through before its reply was lost. [`item_decides`] reads
    /// which.
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
            Err(Error::MultiFailed { index: 0, .. } | Error::SessionExpired) => Fenced::ItemDecides,
            Err(Error::MultiFailed { source, .. }) if matches!(source.as_ref(), Error::NoNode { path } if path == item_path) => {
                Fenced::ItemRemoved
            }
            Err(e) => Fenced::Failed(e),
        }
    }
}

/// After [`Fenced::ItemDecides`]: the item gone (`None`) means the claim was
/// settled; still there, the lease was lost (counted).
pub(super) fn item_decides<T>(core: &Core<T>, item_path: &str, item: Option<Stat>) -> Result<()> {
    match item {
        None => Ok(()),
        Some(_) => Err(lease_lost(core, item_path)),
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
    Error::LeaseLost {
        path: item_path.to_owned(),
    }
}
