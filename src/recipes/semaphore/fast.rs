//! The fast way to a lease when nobody else is taking one: a look, then
//! one create, without the semaphore's lock.
//!
//! 1. The lock's line (`<path>/locks`) and the leases are listed together
//!    (reads). Someone in the line (taking a lease, or waiting for one
//!    with its lease created), or every lease held: the fast way is not
//!    taken, nothing is created, and the caller goes Curator's way
//!    (`slow.rs`), in the line.
//! 2. Otherwise the lease node is created and the leases listed, written
//!    together (the server serves the listing after the create). At most
//!    `max_leases` listed: it holds. More (others came meanwhile): the
//!    lease is deleted at once and the caller goes the slow way.
//!
//! Why this is safe beside Curator's participants, which count under the
//! lock: a participant holds only if a listing served after its own create
//! counted at most `max_leases`; of any set of holders, the one whose
//! lease was created last counted every other's lease (created before its
//! own, not deleted while they hold), so they are at most `max_leases`,
//! lock or no lock. The lock keeps waiters from deadlocking (only its
//! holder waits with a lease) and the line fair; a fast participant never
//! waits with a lease, and one that finds the line busy does not create
//! one, so a waiter is not passed over. A lease taken back (step 2) makes
//! others count one more for a moment, so wait until its deletion wakes
//! them, never hold beyond the count. Whatever a failed attempt (a lost
//! connection) may have left is found by its protected prefix and
//! deleted, in the background if need be.

use std::time::Instant;

use super::lease::Held;
use super::Semaphore;
use crate::client::{CreateMode, Pipeline, Session, Step};
use crate::error::{Error, Result};
use crate::path;
use crate::recipes::lock::{Leftover, Nodes};
use crate::recipes::names::{self, LEASE};
use crate::sync::Latch;

/// One try at a lease the fast way: `Some` if it holds, `None` if others
/// were taking or holding leases (nothing of the try is left).
pub(super) fn attempt(semaphore: &Semaphore, deadline: Option<Instant>) -> Result<Option<Held>> {
    let session = semaphore.client.session();
    let pipeline = semaphore.client.pipeline(session, deadline);
    if !is_free(semaphore, &pipeline)? {
        return Ok(None);
    }
    let prefix = names::protected_prefix();
    let result = create(semaphore, &pipeline, session, &prefix, deadline);
    if result.is_err() {
        let leftover = Leftover {
            lock_path: semaphore.leases_path.clone(),
            session,
            nodes: Nodes::Prefixed(prefix),
        };
        leftover.release(&semaphore.client, deadline);
    }
    result
}

/// Whether nobody is in the lock's line and a lease is free.
fn is_free(semaphore: &Semaphore, pipeline: &Pipeline<'_>) -> Result<bool> {
    let sent = pipeline.send(vec![
        Step::Children {
            path: &semaphore.locks_path,
        },
        Step::Children {
            path: &semaphore.leases_path,
        },
    ]);
    let count = |listing: Result<Vec<String>>| match listing {
        Ok(children) => Ok(children.len()),
        Err(Error::NoNode { .. }) => Ok(0),
        Err(e) => Err(e),
    };
    let line = count(pipeline.children(&sent[0]))?;
    let leases = count(pipeline.children(&sent[1]))?;
    Ok(line == 0 && leases < semaphore.max_leases)
}

/// Creates the lease and counts: held, or taken back.
fn create(
    semaphore: &Semaphore,
    pipeline: &Pipeline<'_>,
    session: Session,
    prefix: &str,
    deadline: Option<Instant>,
) -> Result<Option<Held>> {
    let client = &semaphore.client;
    let wanted = path::join(&semaphore.leases_path, &names::node_name(prefix, LEASE));
    let sent = pipeline.send(vec![
        Step::Create {
            path: &wanted,
            data: &semaphore.data,
            acl: &semaphore.acl,
            mode: CreateMode::EphemeralSequential,
        },
        Step::Children {
            path: &semaphore.leases_path,
        },
    ]);
    let (lease, _) = pipeline.created(&sent[0])?;
    // The watch that tells the holder of its loss, sent before the
    // listing's answer is awaited.
    let lost = Latch::new();
    let states = client.wake_on_state_change(&lost);
    let chained = lost.chained();
    let watched = pipeline.send(vec![Step::WatchData {
        path: &lease,
        latch: &chained,
    }]);
    let leases = pipeline.children(&sent[1])?;
    let (stat, watch) = pipeline.watched(&watched[0])?;
    let listed = leases.iter().any(|name| name == path::name(&lease));
    if !listed || leases.len() > semaphore.max_leases || lost.is_open() || !client.is_live(session) {
        log::debug!(
            "semaphore {}: {} leases listed with {lease}; taking it back",
            semaphore.path,
            leases.len()
        );
        let taken_back = Leftover {
            lock_path: semaphore.leases_path.clone(),
            session,
            nodes: Nodes::Known(lease),
        };
        taken_back.release(client, deadline);
        return Ok(None);
    }
    Ok(Some(Held {
        node: lease,
        session,
        czxid: stat.czxid,
        lost,
        _watch: watch,
        _states: states,
    }))
}
