//! The fast way to a lease, in about one round trip: Curator's steps
//! (take the semaphore's lock, create the lease, list the leases, let go
//! of the lock) written together instead of one after another.
//!
//! The server answers a session's requests in order, so the lock node is
//! created, the lock's line listed, the lease created and the leases
//! listed in that order, as Curator's participant does them, only without
//! waiting between them. The lock node is deleted as soon as its name is
//! known. The lease holds when the line showed the lock node first (the
//! lease was created and counted while holding the lock, exactly as
//! Curator's) and the listing counted at most `max_leases` leases.
//!
//! Otherwise the lease is taken back at once (deleted) and the caller goes
//! the slow way (`slow.rs`). A lease created while another participant held
//! the lock is then a stray for a moment: it only ever makes others count
//! more leases than are held, so it can make a participant wait (until its
//! deletion, which wakes it), never hold beyond `max_leases`. Whatever an
//! attempt that failed (a lost connection) may have left is found by its
//! protected prefix and deleted, in the background if need be.

use std::time::Instant;

use super::lease::Held;
use super::Semaphore;
use crate::client::{CreateMode, Session, Step};
use crate::error::Result;
use crate::path;
use crate::recipes::lock::{Leftover, Nodes};
use crate::recipes::names::{self, LEASE, LOCK};
use crate::sync::Latch;

/// One try at a lease the fast way: `Some` if it holds, `None` if the lock
/// was busy or the leases were all held (nothing of the try is left).
pub(super) fn attempt(semaphore: &Semaphore, deadline: Option<Instant>) -> Result<Option<Held>> {
    let session = semaphore.client.session();
    let prefix = names::protected_prefix();
    let result = run(semaphore, session, &prefix, deadline);
    if result.is_err() {
        for dir in [&semaphore.locks_path, &semaphore.leases_path] {
            let leftover = Leftover {
                lock_path: dir.clone(),
                session,
                nodes: Nodes::Prefixed(prefix.clone()),
            };
            leftover.release(&semaphore.client, deadline);
        }
    }
    result
}

fn run(semaphore: &Semaphore, session: Session, prefix: &str, deadline: Option<Instant>) -> Result<Option<Held>> {
    let client = &semaphore.client;
    let (acl, data) = (semaphore.acl.as_slice(), semaphore.data.as_slice());
    let mode = CreateMode::EphemeralSequential;
    let lock_node = path::join(&semaphore.locks_path, &names::node_name(prefix, LOCK));
    let lease_node = path::join(&semaphore.leases_path, &names::node_name(prefix, LEASE));
    let pipeline = client.pipeline(session, deadline);
    let sent = pipeline.send(vec![
        Step::Create {
            path: &lock_node,
            data,
            acl,
            mode,
        },
        Step::Children {
            path: &semaphore.locks_path,
        },
        Step::Create {
            path: &lease_node,
            data,
            acl,
            mode,
        },
        Step::Children {
            path: &semaphore.leases_path,
        },
    ]);
    let (lock, _) = pipeline.created(&sent[0])?;
    let unlock = pipeline.send(vec![Step::Delete { path: &lock }]);
    let line = pipeline.children(&sent[1])?;
    let (lease, _) = pipeline.created(&sent[2])?;
    let lost = Latch::new();
    let states = client.wake_on_state_change(&lost);
    let chained = lost.chained();
    let watched = pipeline.send(vec![Step::WatchData {
        path: &lease,
        latch: &chained,
    }]);
    let leases = pipeline.children(&sent[3])?;
    pipeline.deleted(&unlock[0])?;
    let (stat, watch) = pipeline.watched(&watched[0])?;
    let first = names::sorted(line, &[LOCK]).into_iter().next();
    let lease_name = path::name(&lease);
    let holds = first.as_deref() == Some(path::name(&lock))
        && leases.len() <= semaphore.max_leases
        && leases.iter().any(|name| name == lease_name);
    if !holds || lost.is_open() || !client.is_live(session) || !client.state().is_connected() {
        log::debug!(
            "semaphore {}: {} lease(s) listed, the lock {}; going the slow way",
            semaphore.path,
            leases.len(),
            if first.is_some() { "busy or given up" } else { "gone" }
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
