//! The machinery Curator's locks share (its `LockInternals`): the
//! [`Mutex`](super::Mutex) and both halves of the [`RwLock`](super::RwLock)
//! are participants of a lock path that differ only in their [`Driver`].
//!
//! The files, in the order a hold goes through them:
//! - `driver.rs`: [`Driver`], what tells the locks apart: the node's name,
//!   the order of the line, and whether a node holds or whom it watches.
//! - `acquire.rs`: one attempt: the protected node, a lost create reply
//!   resolved, the line and the watch on the node the driver names.
//! - `lead.rs`: [`lead::Lead`], that watch, kept from one look at the line
//!   to the next while it still serves.
//! - `own.rs`: [`own::OwnNodes`], the participant's one watch on the lock
//!   path, which tells each attempt and hold of its own node's deletion.
//! - `hold.rs`: a thread's hold (shared by its reentrant guards), its
//!   fencing token and its loss; [`Holds`], the holds of each thread;
//!   [`Acquisition`], what each public guard wraps.
//! - `release.rs`: deleting what a participant leaves, at once or in the
//!   background.

mod acquire;
mod driver;
mod hold;
mod lead;
mod own;
mod release;

use std::net::{IpAddr, ToSocketAddrs};
use std::sync::Arc;
use std::time::Instant;

pub(crate) use driver::Driver;
pub(crate) use hold::{Acquisition, Holds};
pub(crate) use release::{Leftover, Nodes};

use hold::Hold;

use crate::client::{Acl, ZkClient};
use crate::error::{Error, Result};
use crate::path;
use crate::sync::Latch;

/// One participant of a lock path: what its nodes are created with. A
/// participant has one node per thread that holds or waits, each created
/// by its [`Driver`].
pub(crate) struct Participant {
    pub(crate) client: ZkClient,
    pub(crate) path: String,
    /// The data of its nodes.
    pub(crate) data: Vec<u8>,
    pub(crate) acl: Vec<Acl>,
    /// Opened to make every wait for the turn give up (as its deadline
    /// would): the owner stops waiting for good.
    pub(crate) cancel: Option<Latch>,
    /// Its watch on the lock path, which tells its attempts and holds of
    /// their nodes' deletion.
    own: own::OwnNodes,
}

impl Participant {
    /// Validates a lock's settings: `data` defaults to Curator's (see
    /// [`local_address`]), `acl` to the client's default ACL.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a path that is not valid, or is the root;
    /// [`Error::InvalidArgument`] for an empty ACL; [`Error::Closed`] if the
    /// client is closed.
    pub(crate) fn new(
        client: ZkClient,
        path: String,
        data: Option<Vec<u8>>,
        acl: Option<Vec<Acl>>,
    ) -> Result<Participant> {
        path::validate(&path)?;
        if path == "/" {
            return Err(Error::InvalidPath {
                path,
                reason: "a lock needs a path of its own, not the root",
            });
        }
        if acl.as_ref().is_some_and(Vec::is_empty) {
            return Err(Error::InvalidArgument("the acl of a lock must not be empty".into()));
        }
        if client.is_closed() {
            return Err(Error::Closed);
        }
        let acl = acl.unwrap_or_else(|| client.default_acl().to_vec());
        let data = data.unwrap_or_else(local_address);
        Ok(Participant {
            client,
            own: own::OwnNodes::new(&path),
            path,
            data,
            acl,
            cancel: None,
        })
    }

    /// The same participant, whose waits for the turn give up once
    /// `cancel` opens.
    pub(crate) fn cancelled_by(self, cancel: Latch) -> Participant {
        Participant {
            cancel: Some(cancel),
            ..self
        }
    }

    /// Makes `wait` open when the participant's cancel latch does.
    fn cancel_wakes(&self, wait: &Latch) {
        if let Some(cancel) = &self.cancel {
            cancel.forward_to(wait);
        }
    }

    /// Whether its waits have been cancelled.
    fn is_cancelled(&self) -> bool {
        self.cancel.as_ref().is_some_and(Latch::is_open)
    }

    /// The calling thread's hold in `holds` again (reentry), or a new one
    /// by `driver` until `deadline`, waiting for the turn only if `patient`;
    /// `None` if the turn did not come.
    pub(crate) fn acquire(
        &self,
        holds: &Holds,
        driver: &Driver,
        deadline: Option<Instant>,
        patient: bool,
    ) -> Result<Option<Arc<Hold>>> {
        if let Some(hold) = holds.reenter() {
            return Ok(Some(hold));
        }
        let Some(acquired) = acquire::Attempt::new(self, driver, deadline, patient).run()? else {
            return Ok(None);
        };
        log::debug!("{} {}: holding {}", driver.recipe(), self.path, acquired.node.path);
        Ok(Some(holds.insert(acquired, driver.recipe())))
    }

    /// Drops one guard of `hold`, one of `holds`; the thread's last one
    /// ends it, waiting for the server until `deadline` if one is given.
    fn release(&self, holds: &Holds, hold: &Arc<Hold>, deadline: Option<Instant>) {
        if holds.release(hold) {
            match deadline {
                Some(deadline) => hold.end_by(self, deadline),
                None => hold.end(self),
            }
        }
    }

    /// The nodes under the lock path in the order `driver` sorts them; empty
    /// if the path does not exist.
    pub(crate) fn nodes(&self, driver: &Driver) -> Result<Vec<String>> {
        match self.client.get_children(&self.path) {
            Ok((children, _)) => Ok(driver.sorted(children)),
            Err(Error::NoNode { .. }) => Ok(Vec::new()),
            Err(e) => Err(e),
        }
    }
}

/// Curator's default node data (`CuratorFrameworkFactory`'s local address):
/// the host's IP address as text (the first address its name resolves to,
/// IPv4 first), or nothing.
pub(in crate::recipes) fn local_address() -> Vec<u8> {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .unwrap_or_default();
    let host = host.trim();
    if host.is_empty() {
        return Vec::new();
    }
    let Ok(addresses) = (host, 0).to_socket_addrs() else {
        return Vec::new();
    };
    let addresses: Vec<IpAddr> = addresses.map(|a| a.ip()).collect();
    let first = addresses.iter().find(|ip| ip.is_ipv4()).or(addresses.first());
    first.map(|ip| ip.to_string().into_bytes()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::local_address;

    #[test]
    fn the_default_data_is_an_ip_address_or_nothing() {
        let data = String::from_utf8(local_address()).unwrap();
        assert!(data.is_empty() || data.parse::<std::net::IpAddr>().is_ok(), "{data}");
    }
}
