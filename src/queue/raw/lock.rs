//! Item locks as lock-safe consumers take them: an ephemeral node
//! `<lock path>/<item name>` per item.

use crate::client::{CreateMode, ZkClient};
use crate::error::{Error, Result};
use crate::path;

/// The locks one take or purge call holds, recognised by a token of its own.
pub(super) struct Locker<'a> {
    client: &'a ZkClient,
    dir: &'a str,
    token: Vec<u8>,
}

impl<'a> Locker<'a> {
    /// A locker under the lock directory `dir` (created if missing).
    pub(super) fn new(client: &'a ZkClient, dir: &'a str) -> Result<Locker<'a>> {
        client.ensure_path(dir)?;
        let token = format!(
            "zk-queue raw {:x} {:016x}",
            client.session_id().unwrap_or_default(),
            fastrand::u64(..)
        );
        Ok(Locker {
            client,
            dir,
            token: token.into_bytes(),
        })
    }

    /// The lock node of item `name`.
    pub(super) fn node(&self, name: &str) -> String {
        path::join(self.dir, name)
    }

    /// The data every lock of this locker holds.
    pub(super) fn token(&self) -> &[u8] {
        &self.token
    }

    /// Locks item `name`: its lock node, or `None` if another holder has it.
    pub(super) fn lock(&self, name: &str) -> Result<Option<String>> {
        let node = self.node(name);
        match self.client.create(&node, &self.token, CreateMode::Ephemeral) {
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
