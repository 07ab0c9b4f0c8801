//! Entering a [`DoubleBarrier`], as Curator's `DistributedDoubleBarrier.enter`
//! does, with two of its traps closed.
//!
//! A member creates its ephemeral node (named by its id), then looks at
//! `ready` with a watch. Without `ready`, it counts the member nodes: once
//! there are `member_count`, it creates `ready`, which lets in every member
//! watching it; with fewer, it waits for `ready` to come (or the
//! connection to change) and looks again.
//!
//! A `ready` counts for the member only if it belongs to the member's
//! round:
//! - created after the member's node (a larger creation zxid): the member
//!   was there when its round was counted;
//! - created before, while `member_count` other members are inside: the
//!   member joins a round that is in (Curator lets such a late member in
//!   too).
//!
//! Any other `ready` was left by an earlier round whose members went
//! without leaving (Curator's `leave` is the only place it is deleted); the
//! member deletes it, so it lets in no one of this round early, and counts.
//!
//! A member that stops waiting (its deadline, an error) deletes its node,
//! so the others do not count it; deleting first and then looking at
//! `ready` closes the race with the last member's count: a `ready` created
//! after its node means it was counted, and it creates its node again and
//! is in.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::double::{DoubleBarrier, Member, READY};
use super::ensure_container;
use crate::client::{CreateMode, Opts, Session, WeakClient, TRY_WAIT};
use crate::error::{Error, Result};
use crate::recipes::deadline::{self, unreachable_or};
use crate::sync::{Backoff, Latch};

impl DoubleBarrier {
    /// The one implementation of entering: whether the member is in by
    /// `deadline`.
    pub(super) fn enter_until(&self, deadline: Option<Instant>) -> Result<bool> {
        let started = Instant::now();
        let mut node = self.node.lock();
        match self.entering(&mut node, deadline) {
            Ok(true) => Ok(true),
            Ok(false) if self.client.state().is_connected() => self.withdraw(&mut node),
            Ok(false) => {
                self.abandon(&mut node);
                unreachable_or(&self.client, started, false)
            }
            Err(e) => {
                self.abandon(&mut node);
                Err(deadline::call_error(&self.client, e, started, "double barrier"))
            }
        }
    }

    fn entering(&self, node: &mut Option<Member>, deadline: Option<Instant>) -> Result<bool> {
        let client = &self.client;
        loop {
            let session = client.session();
            // A node of an earlier session went with it.
            node.take_if(|member| member.session != session);
            let member = match *node {
                Some(member) => member,
                None => match self.join(session, deadline) {
                    Ok(member) => *node.insert(member),
                    Err(Error::SessionExpired) if client.session() != session => continue,
                    Err(e) => return Err(e),
                },
            };
            let woken = Latch::new();
            let _states = client.wake_on_state_change(&woken);
            let opts = Opts::new().fenced(session).until(deadline);
            let (ready, _watch) = match client.watch_exists(&self.ready_path, &woken, opts) {
                Ok(read) => read,
                Err(Error::SessionExpired) => continue,
                Err(e) => return Err(e),
            };
            if ready.is_some_and(|ready| ready.czxid > member.czxid) {
                return Ok(true);
            }
            let inside = match self.members(opts) {
                Ok(members) => members,
                Err(Error::SessionExpired) => continue,
                Err(e) => return Err(e),
            };
            match ready {
                Some(ready) => {
                    let others = inside.iter().filter(|name| **name != self.id).count();
                    if others >= self.member_count {
                        return Ok(true);
                    }
                    log::info!(
                        "double barrier {}: `{READY}` was left by an earlier round ({others} other members inside, \
                         {} wanted); deleting it",
                        self.path,
                        self.member_count
                    );
                    match client.delete_with(&self.ready_path, Some(ready.version), opts) {
                        Ok(_) | Err(Error::NoNode { .. } | Error::BadVersion { .. } | Error::SessionExpired) => {}
                        Err(e) => return Err(e),
                    }
                }
                None if inside.len() >= self.member_count => {
                    match client.create_with(&self.ready_path, &self.data, opts.acl(&self.acl)) {
                        Ok(_) => return Ok(true),
                        // Someone else counted first: look at theirs.
                        Err(Error::NodeExists { .. } | Error::SessionExpired) => {}
                        Err(e) => return Err(e),
                    }
                }
                None => {
                    if !woken.wait_until(deadline) {
                        return Ok(false);
                    }
                }
            }
        }
    }

    /// Creates this member's node in `session`, or finds the one a create
    /// whose reply was lost made.
    fn join(&self, session: Session, deadline: Option<Instant>) -> Result<Member> {
        let client = &self.client;
        let opts = Opts::new().fenced(session).until(deadline);
        // A node given up earlier is no longer deleted in the background:
        // the node at this path is the one created now.
        *self.joins.lock() += 1;
        loop {
            let create = opts.mode(CreateMode::Ephemeral).acl(&self.acl);
            match client.create_with(&self.node_path, &self.data, create) {
                Ok((_, stat)) => {
                    return Ok(Member {
                        session,
                        czxid: stat.czxid,
                        deleting: false,
                    })
                }
                // Curator's `creatingParentContainersIfNeeded`.
                Err(Error::NoNode { .. }) => ensure_container(client, &self.path, &self.acl, deadline)?,
                Err(Error::NodeExists { path }) => match client.exists_with(&self.node_path, opts)? {
                    Some(stat) if stat.ephemeral_owner == client.session_id()? => {
                        return Ok(Member {
                            session,
                            czxid: stat.czxid,
                            deleting: false,
                        })
                    }
                    Some(_) => return Err(Error::NodeExists { path }),
                    None => {}
                },
                Err(e) => return Err(e),
            }
        }
    }

    /// Stops waiting at the deadline: deletes this member's node, then
    /// looks whether `ready` came since it was created (the member was
    /// counted: it is in after all, with its node again); one round trip,
    /// given a second (and the grace of an answer in flight).
    fn withdraw(&self, node: &mut Option<Member>) -> Result<bool> {
        let Some(member) = *node else { return Ok(false) };
        let opts = Opts::new()
            .fenced(member.session)
            .until(Some(Instant::now() + TRY_WAIT));
        match self.client.delete_then_exists(&self.node_path, &self.ready_path, opts) {
            Ok(Some(ready)) if ready.czxid > member.czxid => {
                log::info!("double barrier {}: counted as it gave up; in after all", self.path);
                *node = None;
                *node = Some(self.join(member.session, None)?);
                Ok(true)
            }
            Ok(_) | Err(Error::SessionExpired) => {
                *node = None;
                Ok(false)
            }
            Err(e) => {
                log::debug!("double barrier {}: {e}; deleting its node in the background", self.path);
                self.abandon(node);
                Ok(false)
            }
        }
    }

    /// Deletes this member's node in the background, if it may exist.
    fn abandon(&self, node: &mut Option<Member>) {
        // Without a node known, a create may still have been applied (its
        // answer lost, or the call gave up a node of an earlier call on
        // joining again): whatever is at the path in this session is ours.
        let session = node
            .take()
            .map_or_else(|| self.client.session(), |member| member.session);
        if self.client.is_closed() || !self.client.is_live(session) {
            return;
        }
        let joined = *self.joins.lock();
        let (weak, joins, path) = (self.client.downgrade(), Arc::clone(&self.joins), self.node_path.clone());
        let spawned = std::thread::Builder::new()
            .name("zk-barrier-withdraw".into())
            .spawn(move || withdraw_in_background(&weak, &joins, joined, &path, session));
        if let Err(e) = spawned {
            log::warn!(
                "cannot start a thread to delete {}; it stays until its session ends: {e}",
                self.node_path
            );
        }
    }

    /// The member nodes under the barrier path (none if it is missing),
    /// sorted by name, as Curator's `filterAndSortChildren`.
    pub(super) fn members(&self, opts: Opts<'_>) -> Result<Vec<String>> {
        let mut members = match self.client.get_children_with(&self.path, opts) {
            Ok((children, _)) => children,
            Err(Error::NoNode { .. }) => Vec::new(),
            Err(e) => return Err(e),
        };
        members.retain(|name| name != READY);
        members.sort();
        Ok(members)
    }
}

/// Deletes the member node at `path` of `session`, given up when the member
/// had joined `joined` times, trying again until it is gone (deleted, or
/// gone with its session or client) or the member joins again: a stalled
/// or unreachable server would otherwise leave it counted by the others.
fn withdraw_in_background(
    weak: &WeakClient,
    joins: &parking_lot::Mutex<u64>,
    joined: u64,
    path: &str,
    session: Session,
) {
    let mut backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(2));
    loop {
        let Some(client) = weak.upgrade() else { return };
        if client.is_closed() || !client.is_live(session) {
            return;
        }
        {
            let joins = joins.lock();
            if *joins != joined {
                return;
            }
            let opts = Opts::new()
                .once()
                .fenced(session)
                .until(Some(Instant::now() + TRY_WAIT));
            match client.delete_with(path, None, opts) {
                Ok(_) | Err(Error::NoNode { .. } | Error::SessionExpired | Error::Closed) => {
                    log::debug!("double barrier: deleted {path}, given up");
                    return;
                }
                Err(e) => log::log!(backoff.log_level(), "double barrier: cannot delete {path} yet: {e}"),
            }
        }
        drop(client);
        std::thread::sleep(backoff.pause());
    }
}
