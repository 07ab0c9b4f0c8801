//! Deleting a participant's nodes once it no longer waits or holds, so that
//! none is left to block the line.
//!
//! A node is deleted at once when the server can be asked; otherwise (the
//! ensemble out of reach, or a create whose outcome is unknown) a thread
//! keeps trying, fenced to the session the node belongs to, until the node
//! is gone: deleted, or gone with its session (the server expired it, or
//! the client closed). The thread holds only a weak handle on the client,
//! so it never keeps a session open that its users have dropped (the nodes
//! go with that session).

use std::time::{Duration, Instant};

use crate::client::{Opts, Session, WeakClient, ZkClient, TRY_WAIT};
use crate::error::{Error, Result};
use crate::path;
use crate::sync::Backoff;

/// The first pause after a failed attempt, doubling up to [`MAX_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(100);
const MAX_PAUSE: Duration = Duration::from_secs(2);

/// What a participant may have left under the lock path in `session`.
#[derive(Clone, Debug)]
pub(crate) struct Leftover {
    pub(crate) lock_path: String,
    pub(crate) session: Session,
    pub(crate) nodes: Nodes,
}

/// Which nodes are to go.
#[derive(Clone, Debug)]
pub(crate) enum Nodes {
    /// This node, known to be the participant's only one.
    Known(String),
    /// Every child whose name starts with this protected prefix: a create
    /// whose outcome is unknown may have left one.
    Prefixed(String),
}

impl Leftover {
    /// Deletes the nodes now if the client is connected and `deadline` has
    /// not passed, waiting until it at most (plus the grace of an answer in
    /// flight) and never longer than [`TRY_WAIT`]; otherwise, or if that
    /// fails, keeps trying in the background.
    pub(crate) fn release(self, client: &ZkClient, deadline: Option<Instant>) {
        let now = Instant::now();
        let deadline = deadline.map_or(now + TRY_WAIT, |d| d.min(now + TRY_WAIT));
        if client.state().is_connected() && deadline > now {
            match self.delete(client, Opts::new().once().until(Some(deadline))) {
                Ok(()) | Err(Error::SessionExpired | Error::Closed) => return,
                Err(e) => log::debug!("lock {}: {e}; deleting in the background", self.lock_path),
            }
        }
        self.in_background(client);
    }

    /// Keeps deleting on a thread of its own until the nodes are gone.
    pub(crate) fn in_background(self, client: &ZkClient) {
        if client.is_closed() || !client.is_live(self.session) {
            return;
        }
        let weak = client.downgrade();
        let spawned = std::thread::Builder::new()
            .name("zk-lock-release".into())
            .spawn(move || self.until_gone(&weak));
        if let Err(e) = spawned {
            log::warn!("cannot start a thread to delete a lock node; it stays until its session ends: {e}");
        }
    }

    fn until_gone(&self, weak: &WeakClient) {
        let mut backoff = Backoff::new(FIRST_PAUSE, MAX_PAUSE);
        loop {
            let Some(client) = weak.upgrade() else { return };
            if client.is_closed() || !client.is_live(self.session) {
                return;
            }
            let pause = match self.delete(&client, Opts::new()) {
                Ok(()) | Err(Error::SessionExpired | Error::Closed) => return,
                Err(e) => {
                    let pause = backoff.pause();
                    log::log!(
                        backoff.log_level(),
                        "lock {}: cannot delete a node of ours ({e}); trying again in {pause:?}",
                        self.lock_path
                    );
                    pause
                }
            };
            drop(client);
            std::thread::sleep(pause);
        }
    }

    /// One try at deleting the nodes, fenced to their session.
    fn delete(&self, client: &ZkClient, opts: Opts<'_>) -> Result<()> {
        let opts = opts.fenced(self.session);
        let nodes = match &self.nodes {
            Nodes::Known(node) => vec![node.clone()],
            Nodes::Prefixed(prefix) => match client.get_children_with(&self.lock_path, opts) {
                Ok((children, _)) => children
                    .into_iter()
                    .filter(|name| name.starts_with(prefix.as_str()))
                    .map(|name| path::join(&self.lock_path, &name))
                    .collect(),
                Err(Error::NoNode { .. }) => return Ok(()),
                Err(e) => return Err(e),
            },
        };
        for node in nodes {
            match client.delete_with(&node, None, opts) {
                Ok(_) | Err(Error::NoNode { .. }) => log::debug!("lock {}: deleted {node}", self.lock_path),
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}
