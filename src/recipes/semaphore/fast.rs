//! The fast way to a lease when nobody else is taking one: one round trip,
//! without the semaphore's lock.
//!
//! The lease node is created, and the leases and the lock's line
//! (`<path>/locks`) listed, the three requests written together (the
//! server serves the listings after the create). It holds if nobody is in
//! the line and at most `max_leases` leases are listed. Otherwise
//! (someone is taking a lease, or waits for one holding the lock with its
//! lease created; or others came meanwhile, or every lease is held) the
//! lease is deleted at once and the caller goes Curator's way
//! (`slow.rs`), in the line. The holder's watch on its lease (which tells
//! it of the lease's loss) is then sent without waiting for its answer:
//! an answer that does not set it (the node is gone) opens the loss latch
//! as the watch would.
//!
//! Why this is safe beside Curator's participants, which count under the
//! lock: a participant holds only if a listing served after its own create
//! counted at most `max_leases`; of any set of holders, the one whose
//! lease was created last counted every other's lease (created before its
//! own, not deleted while they hold), so they are at most `max_leases`,
//! lock or no lock. The lock keeps waiters from deadlocking (only its
//! holder waits with a lease) and the line fair: a fast participant never
//! waits with a lease, and one whose listing shows anyone in the line
//! does not keep its lease, so a waiter is not passed over (a waiter that
//! joined the line after that listing came after it). A lease taken back
//! makes others count one more for a moment: a waiter that lists the
//! leases meanwhile waits on, and its watch on the leases wakes it when
//! the lease goes, so it never holds beyond the count nor misses its turn.
//! Whatever a failed attempt (a lost connection) may have left is found by
//! its protected prefix and deleted, in the background if need be.

use std::time::Instant;

use super::lease::Held;
use super::Semaphore;
use crate::client::{CreateMode, Opts, Session, Step};
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
    let prefix = names::protected_prefix();
    let leftover = |nodes| Leftover {
        lock_path: semaphore.leases_path.clone(),
        session,
        nodes,
    };
    let wanted = path::join(&semaphore.leases_path, &names::node_name(&prefix, LEASE));
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
        Step::Children {
            path: &semaphore.locks_path,
        },
    ]);
    let (lease, stat) = match pipeline.created(&sent[0]) {
        Ok(created) => created,
        // No `leases` yet: nothing was created.
        Err(e @ Error::NoNode { .. }) => return Err(e),
        Err(e) => {
            leftover(Nodes::Prefixed(prefix)).release(&semaphore.client, deadline);
            return Err(e);
        }
    };
    let listed = pipeline.children(&sent[1]).and_then(|leases| {
        let line = match pipeline.children(&sent[2]) {
            Ok(line) => line.len(),
            // The lock's container went while idle.
            Err(Error::NoNode { .. }) => 0,
            Err(e) => return Err(e),
        };
        Ok((leases, line))
    });
    match listed {
        Ok((leases, line)) if keeps(semaphore, &lease, &leases, line) => {}
        taken_back => {
            leftover(Nodes::Known(lease)).release(&semaphore.client, deadline);
            return taken_back.map(|_| None);
        }
    }
    Ok(hold(semaphore, session, lease, stat.czxid, deadline))
}

/// Whether the listings taken with the create let `lease` hold: nobody in
/// the line, at most `max_leases` leases, its own among them.
fn keeps(semaphore: &Semaphore, lease: &str, leases: &[String], line: usize) -> bool {
    let listed = leases.iter().any(|name| name == path::name(lease));
    let keeps = listed && line == 0 && leases.len() <= semaphore.max_leases;
    if !keeps {
        log::debug!(
            "semaphore {}: {} leases and {line} in line listed with {lease}; taking it back",
            semaphore.path,
            leases.len()
        );
    }
    keeps
}

/// The lease held: its loss watch sent (not awaited), unless the session
/// or the connection changed since, when it is taken back.
fn hold(semaphore: &Semaphore, session: Session, lease: String, czxid: i64, deadline: Option<Instant>) -> Option<Held> {
    let client = &semaphore.client;
    let lost = Latch::new();
    let states = client.wake_on_state_change(&lost);
    let opts = Opts::new().fenced(session).until(deadline);
    let watch = client.watch_data_unawaited(&lease, &lost.chained(), opts);
    if lost.is_open() || !client.is_live(session) || !client.state().is_connected() {
        let taken_back = Leftover {
            lock_path: semaphore.leases_path.clone(),
            session,
            nodes: Nodes::Known(lease),
        };
        taken_back.release(client, deadline);
        return None;
    }
    Some(Held {
        node: lease,
        session,
        czxid,
        lost,
        _watch: watch,
        _states: states,
    })
}
