//! The slow way to a lease, Curator's own (`internalAcquire1Lease`): hold
//! the semaphore's lock (a [`Mutex`](crate::recipes::Mutex) at
//! `<path>/locks`), create the lease, list the leases until at most
//! `max_leases` are listed, waking on every change of them, then let go of
//! the lock.
//!
//! Holding the lock while it waits, the participant keeps every other one
//! from creating a lease meanwhile, so at most one lease beyond those held
//! exists: the first release lets it hold. A lease create whose reply was
//! lost is found again by its protected prefix after a `sync`. A lease
//! that goes while it waits (its session expired), or a lock whose hold is
//! in doubt, sends the participant round again from the start; whatever
//! it gives up is deleted.

use std::time::Instant;

use super::lease::Held;
use super::Semaphore;
use crate::client::{CreateMode, Opts, Session};
use crate::error::{Error, Result};
use crate::path;
use crate::recipes::lock::{Leftover, Nodes};
use crate::recipes::names::{self, LEASE};
use crate::sync::Latch;

/// What one round under the lock came to.
enum Round {
    Held(Held),
    /// The deadline passed first.
    TimedOut,
    /// The lease or the lock was lost: start again.
    Again,
}

/// Waits (until `deadline`) for a lease the slow way.
pub(super) fn acquire(semaphore: &Semaphore, deadline: Option<Instant>) -> Result<Option<Held>> {
    loop {
        let guard = match deadline {
            None => semaphore.locks.lock()?,
            Some(deadline) => {
                let left = deadline.saturating_duration_since(Instant::now());
                match semaphore.locks.lock_timeout(left)? {
                    Some(guard) => guard,
                    None => return Ok(None),
                }
            }
        };
        let session = semaphore.client.session();
        let mut lease = Lease::new(semaphore, session, deadline);
        let round = lease.round(&|| guard.is_held());
        match deadline {
            // Letting go of the lock waits no longer than the call may.
            Some(deadline) => guard.release_by(deadline),
            None => drop(guard),
        }
        match round {
            Ok(Round::Held(held)) => return Ok(Some(held)),
            Ok(Round::TimedOut) => {
                lease.give_up();
                return Ok(None);
            }
            Ok(Round::Again) => lease.give_up(),
            // A new session: its lock and lease went with the old one.
            Err(Error::SessionExpired) if semaphore.client.session() != session => lease.give_up(),
            Err(e) => {
                lease.give_up();
                return Err(e);
            }
        }
    }
}

/// One lease node being created and waited for, in one session.
struct Lease<'a> {
    semaphore: &'a Semaphore,
    session: Session,
    deadline: Option<Instant>,
    prefix: String,
    /// The node, once created; whether a create's outcome was unknown.
    node: Option<String>,
    unknown: bool,
}

impl<'a> Lease<'a> {
    fn new(semaphore: &'a Semaphore, session: Session, deadline: Option<Instant>) -> Lease<'a> {
        Lease {
            semaphore,
            session,
            deadline,
            prefix: names::protected_prefix(),
            node: None,
            unknown: false,
        }
    }

    fn opts(&self) -> Opts<'a> {
        Opts::new().fenced(self.session).until(self.deadline)
    }

    /// Creates the lease and waits for its turn while `locked` says the
    /// semaphore's lock is held.
    fn round(&mut self, locked: &dyn Fn() -> bool) -> Result<Round> {
        let node = self.create()?;
        let semaphore = self.semaphore;
        let client = &semaphore.client;
        let name = path::name(&node).to_owned();
        loop {
            let latch = Latch::new();
            let _states = client.wake_on_state_change(&latch);
            let (children, _, _watch) = match client.watch_children(&semaphore.leases_path, &latch, self.opts()) {
                Ok(listing) => listing,
                Err(Error::NoNode { .. } | Error::SessionExpired) => return Ok(Round::Again),
                Err(e) => return Err(e),
            };
            if !children.contains(&name) || !locked() {
                log::info!(
                    "semaphore {}: {node} or the lock was lost; trying again",
                    semaphore.path
                );
                return Ok(Round::Again);
            }
            if children.len() <= semaphore.max_leases {
                return self.confirm(&node);
            }
            if !latch.wait_until(self.deadline) {
                return Ok(Round::TimedOut);
            }
        }
    }

    /// Creates the lease node, or finds the one a create whose reply was
    /// lost made.
    fn create(&mut self) -> Result<String> {
        let semaphore = self.semaphore;
        let client = &semaphore.client;
        let wanted = path::join(&semaphore.leases_path, &names::node_name(&self.prefix, LEASE));
        loop {
            let opts = self
                .opts()
                .once()
                .mode(CreateMode::EphemeralSequential)
                .acl(&semaphore.acl);
            match client.create_with(&wanted, &semaphore.data, opts) {
                Ok((created, _)) => return Ok(self.node.insert(created).clone()),
                Err(Error::NoNode { .. }) => semaphore.ensure_parents(self.deadline)?,
                Err(e) if e.is_retryable() && !matches!(e, Error::SessionExpired) => {
                    self.unknown = true;
                    if let Some(found) = self.find()? {
                        log::info!(
                            "semaphore {}: a create's reply was lost; its node is {found}",
                            semaphore.path
                        );
                        let found = path::join(&semaphore.leases_path, &found);
                        return Ok(self.node.insert(found).clone());
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// The name of this lease's node, if the leases have one, after a `sync`.
    fn find(&self) -> Result<Option<String>> {
        let (client, leases) = (&self.semaphore.client, &self.semaphore.leases_path);
        client.sync(leases, self.opts())?;
        match client.get_children_with(leases, self.opts()) {
            Ok((children, _)) => Ok(children.into_iter().find(|name| name.starts_with(&self.prefix))),
            Err(Error::NoNode { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The lease's turn came: watches its node, so the holder hears of its
    /// loss, and reads its creation zxid.
    fn confirm(&mut self, node: &str) -> Result<Round> {
        let client = &self.semaphore.client;
        let lost = Latch::new();
        let states = client.wake_on_state_change(&lost);
        let (_, stat, watch) = match client.watch_data(node, &lost.chained(), self.opts()) {
            Ok(read) => read,
            Err(Error::NoNode { .. } | Error::SessionExpired) => return Ok(Round::Again),
            Err(e) => return Err(e),
        };
        if lost.is_open() || !client.is_live(self.session) || !client.state().is_connected() {
            return Ok(Round::Again);
        }
        self.node = None;
        Ok(Round::Held(Held {
            node: node.to_owned(),
            session: self.session,
            czxid: stat.czxid,
            lost,
            _watch: watch,
            _states: states,
        }))
    }

    /// Deletes whatever this lease may have left.
    fn give_up(&self) {
        let nodes = match &self.node {
            Some(node) if !self.unknown => Nodes::Known(node.clone()),
            Some(_) => Nodes::Prefixed(self.prefix.clone()),
            None if self.unknown => Nodes::Prefixed(self.prefix.clone()),
            None => return,
        };
        let leftover = Leftover {
            lock_path: self.semaphore.leases_path.clone(),
            session: self.session,
            nodes,
        };
        leftover.release(&self.semaphore.client, self.deadline);
    }
}
