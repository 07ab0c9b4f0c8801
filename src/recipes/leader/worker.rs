//! The latch's thread: keeps one node of this participant under the latch
//! path in the current session, lists the participants with a watch, and
//! leads while its node is the first; connection changes, changes of the
//! participants and `close` wake it.
//!
//! Leadership never outlives certainty: it ends the moment the client is
//! disconnected (the session may be expiring on the server, where another
//! participant would then lead), and a node created in an earlier session
//! never counts as this participant's again, even while the server still
//! holds it: the thread deletes it and joins anew.

use std::time::{Duration, Instant};

use super::state::Shared;
use crate::client::{ChildWatch, CreateMode, Opts, Session};
use crate::error::{Error, Result};
use crate::path;
use crate::recipes::names;
use crate::sync::{Backoff, Latch};

/// The first pause after a failed round, doubling up to [`MAX_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(100);
const MAX_PAUSE: Duration = Duration::from_secs(5);

/// This participant's node, and the session that created it.
struct Ours {
    path: String,
    name: String,
    session: Session,
}

pub(super) fn run(shared: &Shared) {
    let protected = names::protected_prefix();
    let mut ours: Option<Ours> = None;
    let mut backoff = Backoff::new(FIRST_PAUSE, MAX_PAUSE);
    // Every state the client goes through, so that a disconnection that is
    // over before this thread looks still ends leadership (and is heard).
    let states = shared.client.state_listener();
    while !shared.stopping() {
        let latch = Latch::new();
        *shared.wake.lock() = latch.clone();
        if shared.stopping() {
            break;
        }
        let _guard = shared.client.wake_on_state_change(&latch);
        if states.try_iter().any(|state| !state.is_connected()) {
            shared.set_leading(None);
        }
        match round(shared, &protected, &mut ours, &latch) {
            Ok(_watch) => {
                backoff.reset();
                latch.wait_until(None);
            }
            Err(e) => {
                shared.set_leading(None);
                let pause = backoff.pause();
                log::log!(
                    backoff.log_level(),
                    "leader latch {}: {e}; trying again in {pause:?}",
                    shared.path
                );
                latch.wait_until(Some(Instant::now() + pause));
            }
        }
    }
    shared.set_leading(None);
    if let Some(node) = ours {
        match shared
            .client
            .delete_with(&node.path, None, Opts::new().fenced(node.session))
        {
            Ok(_) | Err(Error::NoNode { .. } | Error::SessionExpired) => {}
            Err(e) => log::warn!(
                "leader latch {}: cannot delete {}: {e}; it goes with the session",
                shared.path,
                node.path
            ),
        }
    }
    shared.set_node(None);
}

/// One look at the participants. Returns the watch to wait on, or `None`
/// while disconnected; a round that must look again at once opens `latch`.
fn round(shared: &Shared, protected: &str, ours: &mut Option<Ours>, latch: &Latch) -> Result<Option<ChildWatch>> {
    let client = &shared.client;
    if !client.state().is_connected() {
        // The session may be expiring: nobody can be sure who leads.
        shared.set_leading(None);
        return Ok(None);
    }
    let session = client.session();
    if let Some(old) = ours.take_if(|node| node.session != session) {
        // Created in an earlier session: never this participant's again.
        shared.set_leading(None);
        shared.set_node(None);
        forget(shared, &old.path);
    }
    let node = match ours {
        Some(node) => node,
        None => ours.insert(join(shared, protected, session)?),
    };
    let children = match client.watch_children(&shared.path, latch, Opts::new()) {
        Ok((children, _, watch)) => Some((children, watch)),
        // The latch path is gone (a container reaped, or deleted), and the
        // node with it.
        Err(Error::NoNode { .. }) => None,
        Err(e) => return Err(e),
    };
    let Some((children, watch)) = children else {
        lost_node(shared, ours, latch);
        return Ok(None);
    };
    // Nodes of this participant besides its own: creates whose replies were
    // lost and that were sent again.
    for stray in children.iter().filter(|c| c.starts_with(protected) && **c != node.name) {
        forget(shared, &path::join(&shared.path, stray));
    }
    let sorted = names::sorted(children, &[names::LATCH]);
    match sorted.iter().position(|name| *name == node.name) {
        None => {
            // Deleted by someone, or its session ended on the server.
            lost_node(shared, ours, latch);
            Ok(None)
        }
        Some(0) if client.is_live(session) && client.state().is_connected() => {
            shared.set_leading(Some(session));
            Ok(Some(watch))
        }
        Some(_) => {
            shared.set_leading(None);
            Ok(Some(watch))
        }
    }
}

/// This participant's node is gone: it does not lead, and joins again at
/// once.
fn lost_node(shared: &Shared, ours: &mut Option<Ours>, latch: &Latch) {
    if let Some(node) = ours.take() {
        log::warn!("leader latch {}: {} is gone; joining again", shared.path, node.path);
    }
    shared.set_leading(None);
    shared.set_node(None);
    latch.open();
}

/// Creates this participant's node in `session`: an ephemeral sequential
/// child with Curator's protected name and the id as data. A create whose
/// reply was lost and that was sent again may leave a second node; the next
/// listing deletes it.
fn join(shared: &Shared, protected: &str, session: Session) -> Result<Ours> {
    let client = &shared.client;
    client.ensure_path_with(&shared.path, Opts::new().mode(CreateMode::Container).acl(&shared.acl))?;
    let wanted = path::join(&shared.path, &names::node_name(protected, names::LATCH));
    let created = client.create_with(
        &wanted,
        shared.id.as_bytes(),
        Opts::new()
            .mode(CreateMode::EphemeralSequential)
            .fenced(session)
            .acl(&shared.acl),
    );
    let (created, _) = created?;
    let name = path::name(&created).to_owned();
    log::debug!("leader latch {}: joined as {name}", shared.path);
    shared.set_node(Some(created.clone()));
    Ok(Ours {
        path: created,
        name,
        session,
    })
}

/// Deletes a node this participant no longer counts as its own, without
/// waiting: others must not wait behind it.
fn forget(shared: &Shared, node: &str) {
    log::info!(
        "leader latch {}: deleting {node}, a node of this participant it no longer uses",
        shared.path
    );
    // In the current session: a node of an earlier one is gone with it.
    shared
        .client
        .delete_ephemeral_in_background(node, shared.client.session());
}
