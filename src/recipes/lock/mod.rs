//! The machinery Curator's locks share (its `LockInternals`): the
//! [`Mutex`](super::Mutex) and both halves of the [`RwLock`](super::RwLock)
//! are participants of a lock path that differ only in their [`Driver`].
//!
//! The files, in the order a hold goes through them:
//! - `driver.rs`: [`Driver`], what tells the locks apart: the node's name,
//!   the order of the line, and whether a node holds or whom it watches.
//! - `acquire.rs`: one attempt: the protected node, a lost create reply
//!   resolved, the line and the watch on the node the driver names.
//! - `hold.rs`: [`Hold`], a thread's hold (shared by its reentrant guards),
//!   its fencing token and its loss; [`Holds`], the holds of each thread.
//! - `release.rs`: deleting what a participant leaves, at once or in the
//!   background.

mod acquire;
mod driver;
mod hold;
mod release;

use std::sync::Arc;
use std::time::Instant;

pub(crate) use driver::Driver;
pub(crate) use hold::{Hold, Holds};

use crate::client::{Acl, ZkClient};
use crate::error::{Error, Result};

/// One participant of a lock path: what its nodes are created with. A
/// participant has one node per thread that holds or waits, each created
/// by its [`Driver`].
pub(crate) struct Participant {
    pub(crate) client: ZkClient,
    pub(crate) path: String,
    /// The data of its nodes.
    pub(crate) data: Vec<u8>,
    pub(crate) acl: Vec<Acl>,
}

impl Participant {
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
    /// ends it.
    pub(crate) fn release(&self, holds: &Holds, hold: &Arc<Hold>) {
        if holds.release(hold) {
            hold.end(self);
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
