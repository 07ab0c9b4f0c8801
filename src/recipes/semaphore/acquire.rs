//! The one implementation of the acquire family: the lease count checked
//! once, then each lease the fast way (`fast.rs`) and, if the caller
//! waits, Curator's way (`slow.rs`).

use std::sync::atomic::Ordering;
use std::time::Instant;

use super::lease::Held;
use super::{count, fast, slow, Semaphore, SemaphoreLease};
use crate::client::{CreateMode, Opts};
use crate::error::{Error, Result};
use crate::recipes::deadline;

impl Semaphore {
    /// The one implementation: `n` leases one after another until
    /// `deadline`, waiting for others only if `patient`.
    pub(super) fn acquire_until(
        &self,
        n: usize,
        deadline: Option<Instant>,
        patient: bool,
    ) -> Result<Option<Vec<SemaphoreLease<'_>>>> {
        if n == 0 || n > self.max_leases {
            return Err(Error::InvalidArgument(format!(
                "cannot hold {n} leases of a semaphore of {}",
                self.max_leases
            )));
        }
        let started = Instant::now();
        if !self.checked.load(Ordering::Relaxed) {
            count::check(&self.client, &self.path, self.max_leases, &self.acl, deadline)
                .map_err(|e| deadline::call_error(&self.client, e, started, "semaphore"))?;
            self.checked.store(true, Ordering::Relaxed);
        }
        let mut leases = Vec::with_capacity(n);
        while leases.len() < n {
            match self.acquire_one(deadline, patient) {
                Ok(Some(held)) => leases.push(SemaphoreLease::new(&self.client, &self.leases_path, held)),
                Ok(None) => {
                    give_back(leases, deadline);
                    return Ok(None);
                }
                Err(e) => {
                    give_back(leases, deadline);
                    return Err(deadline::call_error(&self.client, e, started, "semaphore"));
                }
            }
        }
        Ok(Some(leases))
    }

    /// One lease: the fast way, then (if `patient`) the slow way.
    fn acquire_one(&self, deadline: Option<Instant>, patient: bool) -> Result<Option<Held>> {
        let fast = match fast::attempt(self, deadline) {
            Err(Error::NoNode { .. }) => {
                self.ensure_parents(deadline)?;
                fast::attempt(self, deadline)
            }
            other => other,
        };
        let in_time = || deadline.is_none_or(|d| Instant::now() < d);
        match fast {
            Ok(Some(held)) => return Ok(Some(held)),
            Ok(None) if !patient => return Ok(None),
            Ok(None) => {}
            Err(e) if patient && e.is_retryable() && !matches!(e, Error::Unreachable { .. }) && in_time() => {
                log::debug!("semaphore {}: {e}; going the slow way", self.path);
            }
            Err(e) => return Err(e),
        }
        slow::acquire(self, deadline)
    }

    /// Creates the path, `locks` and `leases` as containers, as Curator's
    /// `creatingParentContainersIfNeeded` does.
    pub(super) fn ensure_parents(&self, deadline: Option<Instant>) -> Result<()> {
        let opts = Opts::new().until(deadline).mode(CreateMode::Container).acl(&self.acl);
        for path in [&self.path, &self.locks_path, &self.leases_path] {
            self.client.ensure_path_with(path, opts)?;
        }
        Ok(())
    }
}

/// Returns the leases of a call that did not get all it asked for, waiting
/// for the server no later than the call's `deadline` (so a call that
/// timed out returns at once, its leases deleted in the background), or as
/// a dropped lease does without one.
fn give_back(leases: Vec<SemaphoreLease<'_>>, deadline: Option<Instant>) {
    for lease in leases {
        match deadline {
            Some(deadline) => lease.release_by(deadline),
            None => drop(lease),
        }
    }
}
