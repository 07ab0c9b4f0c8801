//! Item locks as lock-safe consumers take them: an ephemeral node
//! `<lock path>/<item name>` per item.

use super::RawQueue;
use crate::client::{CreateMode, Opts, ZkClient};
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
}

impl<'a> Locker<'a> {
    /// The locker of `queue`'s lock path (created if missing), or `None`
    /// without one.
    pub(super) fn of(queue: &'a RawQueue) -> Result<Option<Locker<'a>>> {
        let Some(dir) = &queue.locks else {
            return Ok(None);
        };
        let opts = match &queue.acl {
            Some(acl) => Opts::new().acl(acl),
            None => Opts::new(),
        };
        Locker::new(&queue.client, dir, opts).map(Some)
    }

    fn new(client: &'a ZkClient, dir: &'a str, opts: Opts<'a>) -> Result<Locker<'a>> {
        client.ensure_path_with(dir, opts)?;
        let token = format!(
            "zk-queue raw {:x} {:016x}",
            client.session_id().unwrap_or_default(),
            fastrand::u64(..)
        );
        Ok(Locker {
            client,
            dir,
            opts: opts.mode(CreateMode::Ephemeral),
            token: token.into_bytes(),
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

    /// Deletes this locker's `node`, logging (not failing) if it cannot: the
    /// lock is ephemeral and goes with the session anyway.
    pub(super) fn unlock(&self, node: &str) {
        match self.client.delete(node, None) {
            Ok(()) | Err(Error::NoNode { .. }) => {}
            Err(e) => log::warn!("cannot delete lock {node}; it stays until this session ends: {e}"),
        }
    }
}
