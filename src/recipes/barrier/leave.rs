//! Leaving a [`DoubleBarrier`], as Curator's `DistributedDoubleBarrier.leave`
//! does, so Rust and Curator members leave one round together.
//!
//! The member nodes are sorted by name. The lowest member keeps its node
//! and waits for the highest to go; every other member deletes its node
//! and waits for the lowest to go. So the nodes go one by one from the top,
//! the lowest last; every member returns once no member node is left, and
//! the last out (the lowest) deletes `ready`. A member whose node goes with
//! its session (killed, or partitioned past its session timeout) holds no
//! one up for longer than that: its node vanishes and the watch on it
//! fires.
//!
//! Unlike Curator's, a timed-out leave leaves `ready` alone: the members
//! still inside are of the round it lets in.

use std::time::Instant;

use super::double::{DoubleBarrier, Member};
use crate::client::Opts;
use crate::error::{Error, Result};
use crate::path;
use crate::recipes::deadline::{self, unreachable_or};
use crate::sync::Latch;

impl DoubleBarrier {
    /// The one implementation of leaving: whether every member's node is
    /// gone by `deadline`.
    pub(super) fn leave_until(&self, deadline: Option<Instant>) -> Result<bool> {
        let started = Instant::now();
        let mut node = self.node.lock();
        let client = &self.client;
        loop {
            if let Some(member) = *node {
                if member.session != client.session() {
                    *node = None;
                    return Err(Error::SessionExpired);
                }
            }
            let opts = Opts::new().until(deadline);
            let members = self
                .members(opts)
                .map_err(|e| deadline::call_error(client, e, started, "double barrier"))?;
            let ours = members.iter().position(|name| *name == self.id);
            if ours.is_none() {
                // Gone: by our delete (its reply lost, or the call timed out
                // after sending it), or by another.
                let deleted_by_another = node.is_some_and(|member| !member.deleting);
                *node = None;
                if deleted_by_another {
                    return Err(Error::InvalidState(
                        "the member node of a double barrier was deleted by another",
                    ));
                }
            }
            let (Some(lowest), Some(highest)) = (members.first(), members.last()) else {
                break;
            };
            if members.len() == 1 && ours.is_some() {
                mark_deleting(&mut node);
                self.delete_ours(opts)
                    .map_err(|e| deadline::call_error(client, e, started, "double barrier"))?;
                *node = None;
                break;
            }
            let woken = Latch::new();
            let _states = client.wake_on_state_change(&woken);
            let watched = if ours == Some(0) { highest } else { lowest };
            let (stat, _watch) = client
                .watch_exists(&path::join(&self.path, watched), &woken, opts)
                .map_err(|e| deadline::call_error(client, e, started, "double barrier"))?;
            if ours.is_some_and(|at| at > 0) {
                mark_deleting(&mut node);
                self.delete_ours(opts)
                    .map_err(|e| deadline::call_error(client, e, started, "double barrier"))?;
                *node = None;
            }
            if stat.is_some() && !woken.wait_until(deadline) {
                return unreachable_or(client, started, false);
            }
        }
        match client.delete_with(&self.ready_path, None, Opts::new().until(deadline)) {
            Ok(_) | Err(Error::NoNode { .. }) => Ok(true),
            Err(e) => Err(deadline::call_error(client, e, started, "double barrier")),
        }
    }

    fn delete_ours(&self, opts: Opts<'_>) -> Result<()> {
        match self.client.delete_with(&self.node_path, None, opts) {
            Ok(_) | Err(Error::NoNode { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

/// Records that this member is about to send its node's delete.
fn mark_deleting(node: &mut Option<Member>) {
    if let Some(member) = node.as_mut() {
        member.deleting = true;
    }
}
