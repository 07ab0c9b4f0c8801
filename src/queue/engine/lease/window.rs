//! A window of leases at once: its locks created in multis
//! ([`Leases::take`]), and the leases of those not handed over released
//! together ([`Leases::let_go_all`]). One lease's life is in the parent
//! module.

use std::collections::HashMap;

use super::{Lease, Leases};
use crate::client::{CreateMode, Created, Opts, Session, Stat, MULTI_READ};
use crate::error::{Error, Result};
use crate::path;
use crate::queue::core::Core;

impl Leases {
    /// Takes leases on the items named (in order): their locks are created
    /// in multis (one transaction for a window), pipelined. A lock another
    /// consumer holds fails its multi alone: it is left out and the others
    /// are sent again without it, until most of a window proves held
    /// elsewhere and the rest go out as single creates. A failure ends
    /// nothing early, so every lock created is either taken or, when its
    /// creation's outcome is unknown (a lost reply: then every lock of its
    /// multi is recovered by its token), kept as an orphan.
    pub(in crate::queue::engine) fn take<T: Send + 'static>(
        &self,
        core: &Core<T>,
        lock_dir: &str,
        names: Vec<String>,
    ) -> Result<Taken> {
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
            items: HashMap::new(),
            failure: None,
        };
        // A server answers a multi's creates without their stats (it takes a
        // create2 in a multi for a plain create): the locks are read back,
        // each beside its item, in one request for a window.
        let unread: Vec<usize> = (0..nodes.len())
            .filter(|&i| results[i].is_ok() && stats[i].is_none())
            .collect();
        let locks = unread.iter().map(|&i| (names[i].as_str(), nodes[i].0.as_str()));
        let mut created = stats;
        let read = self.read_created(core, locks, &token, session, &mut taken.failure)?;
        for (&i, (stat, item)) in unread.iter().zip(read) {
            created[i] = stat;
            if let Some(item) = item {
                taken.items.insert(names[i].clone(), item);
            }
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
                self.held.lock().insert(name.clone(), false);
                taken.leases.push((name, lease));
            }
        }
        Ok(taken)
    }

    /// The stats of the locks created with `token` in `session` (a multi's
    /// creates come without), each read back beside its item (`locks` names
    /// each item and its lock's path) in one multi-read for a window, and
    /// checked to hold `token`, so a lease names its own lock's creation.
    /// Per lock, its stat (`None` for a lock not ours any more, or not read
    /// now: then it is kept as an orphan) and, for a lock ours, its item's
    /// read.
    fn read_created<'a, T: Send + 'static>(
        &self,
        core: &Core<T>,
        locks: impl Iterator<Item = (&'a str, &'a str)>,
        token: &[u8],
        session: Session,
        failure: &mut Option<Error>,
    ) -> Result<Vec<(Option<Stat>, Option<ItemRead>)>> {
        let paths: Vec<String> = locks
            .flat_map(|(name, lock)| [lock.to_owned(), path::join(&core.path, name)])
            .collect();
        if paths.is_empty() {
            return Ok(Vec::new());
        }
        // The same session reads after its creates: it sees them, or later.
        // A lock is a token, so a request of locks and items carries as
        // many items as one of items alone.
        let fenced = Opts::new().fenced(session);
        let mut reads = core
            .client
            .read_many_sized_with(&paths, 2 * MULTI_READ, fenced)?
            .into_iter();
        let mut out = Vec::with_capacity(paths.len() / 2);
        for lock_path in paths.into_iter().step_by(2) {
            let (lock, item) = (reads.next(), reads.next());
            let (lock, item) = match (lock, item) {
                (Some(lock), Some(item)) => (lock, item),
                // One result per path read.
                _ => (Err(Error::Closed), Err(Error::Closed)),
            };
            out.push(match lock {
                Ok((data, stat)) if data == token => (Some(stat), Some(item)),
                // Deleted (or replaced) since: not ours any more.
                Ok(_) | Err(Error::NoNode { .. }) => (None, None),
                Err(e) => {
                    self.orphan_created(lock_path, token, session);
                    failure.get_or_insert(e);
                    (None, None)
                }
            });
        }
        Ok(out)
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

    /// Releases the leases of a window at once, as [`let_go`](Self::let_go)
    /// does one: the locks still ours (one multi-read of their stats) are
    /// deleted in multis fenced to their session, each at its version; a
    /// lock whose fate stays unknown becomes an orphan; then the items are
    /// forgotten.
    pub(in crate::queue::engine) fn let_go_all<T: Send + 'static>(&self, core: &Core<T>, leases: Vec<(String, Lease)>) {
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
            self.unreleased(core, lease);
        }
        // Released: they may be taken again from the same listing.
        self.free(leases.iter().map(|(name, _)| name.as_str()), false);
    }
}

/// The leases [`Leases::take`] took.
pub(in crate::queue::engine) struct Taken {
    /// The items locked, in order, each with its lease.
    pub(in crate::queue::engine) leases: Vec<(String, Lease)>,
    /// The items another consumer held the lock of.
    pub(in crate::queue::engine) held_elsewhere: Vec<String>,
    /// The items locked whose data and stat were read with their locks, by
    /// name, as read just after their locks were found ours.
    pub(in crate::queue::engine) items: HashMap<String, ItemRead>,
    /// The first failure met, if any.
    pub(in crate::queue::engine) failure: Option<Error>,
}

/// An item's data and stat, or why it could not be read.
pub(in crate::queue::engine) type ItemRead = Result<(Vec<u8>, Stat)>;
