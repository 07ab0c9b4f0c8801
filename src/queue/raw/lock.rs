//! Item locks as lock-safe consumers take them: an ephemeral node
//! `<lock path>/<item name>` per item.

use std::time::Instant;

use super::RawQueue;
use crate::client::{CreateMode, Opts, Session, ZkClient};
use crate::error::{Error, Result};
use crate::path;

/// The locks one take or purge call holds, recognised by a token of its own.
pub(super) struct Locker<'a> {
    client: &'a ZkClient,
    dir: &'a str,
    /// How lock nodes (and a missing lock directory) are created: with the
    /// queue's ACL, if it has one.
    opts: Opts<'a>,
    token: Vec<u8>,
    /// The session every lock is created in and deleted in: a lock create
    /// or a background unlock held up until that session ends never goes
    /// out in a later one (where it would lock an item for as long as that
    /// session lives, or delete a lock taken again since).
    session: Session,
}

impl<'a> Locker<'a> {
    /// The locker of `queue`'s lock path (created if missing, giving up at
    /// `deadline` if there is one), or `None` without one. Locks are created
    /// within the request timeout whatever the deadline: a lock create given
    /// up on might still hold its item.
    pub(super) fn of(queue: &'a RawQueue, deadline: Option<Instant>) -> Result<Option<Locker<'a>>> {
        let Some(dir) = &queue.locks else {
            return Ok(None);
        };
        let opts = match &queue.acl {
            Some(acl) => Opts::new().acl(acl),
            None => Opts::new(),
        };
        Locker::new(&queue.client, dir, opts, deadline).map(Some)
    }

    fn new(client: &'a ZkClient, dir: &'a str, opts: Opts<'a>, deadline: Option<Instant>) -> Result<Locker<'a>> {
        client.ensure_path_with(dir, opts.until(deadline))?;
        let token = format!(
            "zk-queue raw {:x} {:016x}",
            client.session_id().unwrap_or_default(),
            fastrand::u64(..)
        );
        let session = client.session();
        Ok(Locker {
            client,
            dir,
            opts: opts.mode(CreateMode::Ephemeral).fenced(session),
            token: token.into_bytes(),
            session,
        })
    }

    /// The lock node of item `name`.
    pub(super) fn node(&self, name: &str) -> String {
        path::join(self.dir, name)
    }

    /// Locks the items `names` with pipelined creates: each create's result,
    /// in order (`NodeExists`: another holder has it).
    pub(super) fn lock_many(&self, names: &[String]) -> Result<Vec<Result<()>>> {
        let locks: Vec<(String, Vec<u8>)> = names.iter().map(|name| (self.node(name), self.token.clone())).collect();
        let created = self.client.create_many_with(&locks, self.opts)?;
        Ok(created.into_iter().map(|result| result.map(drop)).collect())
    }

    /// Locks item `name`: its lock node, or `None` if another holder has it.
    pub(super) fn lock(&self, name: &str) -> Result<Option<String>> {
        let node = self.node(name);
        match self.client.create_with(&node, &self.token, self.opts) {
            Ok(_) => Ok(Some(node)),
            Err(Error::NodeExists { .. }) => Ok(self.is_mine(&node)?.then_some(node)),
            Err(e) => Err(e),
        }
    }

    /// Whether the existing lock `node` is this locker's: a retried create
    /// whose first reply was lost finds its own lock.
    pub(super) fn is_mine(&self, node: &str) -> Result<bool> {
        match self.client.get_data(node) {
            Ok((data, _)) => Ok(data == self.token),
            Err(Error::NoNode { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Deletes this locker's `node` without waiting for the server, so a
    /// call's deadline holds even when the server has just gone away; the
    /// delete is applied when the session reconnects (or the lock goes with
    /// the session).
    pub(super) fn unlock(&self, node: &str) {
        self.client.delete_ephemeral_in_background(node, self.session);
    }
}
