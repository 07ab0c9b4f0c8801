//! Curator's barriers: [`Barrier`] (`DistributedBarrier`) and
//! [`DoubleBarrier`] (`DistributedDoubleBarrier`), in Curator 5.x's node
//! layout so Rust and Java participants can share them.
//!
//! The files:
//! - `single.rs`: [`Barrier`], one persistent node at the barrier path that
//!   holds every waiter back while it exists, and [`BarrierBuilder`].
//! - `builder.rs`: [`DoubleBarrierBuilder`], every setting validated in
//!   `build`.
//! - `double.rs`: [`DoubleBarrier`], its public calls.
//! - `enter.rs`: entering: member nodes, the count, `ready` and whose round
//!   it is.
//! - `leave.rs`: leaving, nodes deleted from the highest to the lowest.
//!
//! The double barrier's nodes under its path are Curator's: an ephemeral
//! node per member named by its id (a random UUID unless given), and the
//! persistent node `ready`, created by the member that counts
//! `member_count` members and deleted by the last member out.
//!
//! # How it differs from Curator
//! Two of Curator's traps are closed without changing a node name, so a
//! round of Rust and Curator members that enter and leave goes as
//! Curator's does:
//! - **A timed-out `enter` deletes its member node.** Curator's leaves it,
//!   so the others count a member that has gone and are let in one short.
//!   Ours deletes it, then looks at `ready`: if the last member counted it
//!   just before (a `ready` created after its node), it is in after all.
//! - **A `ready` left by an earlier round lets no one in.** Curator's
//!   `enter` passes at once whenever `ready` exists, and only `leave`
//!   deletes it, so after a round whose members went without leaving
//!   (crashed, or never called `leave`), the next round's first member
//!   passes alone. Ours takes a `ready` as its round's only if it was
//!   created after its own member node, or while `member_count` other
//!   members are inside (a round that is in, which a late member joins as
//!   in Curator); any other `ready` is stale, and is deleted. A `ready`
//!   that named its round in its data, or an ephemeral one, would have
//!   needed Curator's members to write or keep it that way; the creation
//!   zxid every node already has tells the same without them. A Curator
//!   member that arrives while a stale `ready` is there still passes it, as
//!   Curator does, until a Rust member has deleted it.
//!
//! Also: a timed-out `leave` leaves `ready` to the last member out (Curator's
//! deletes it while members are still inside; a stale `ready` being
//! harmless here, `ready` has one owner, the last out), and a
//! member that two sessions would share (the same id) is refused with
//! [`Error::NodeExists`](crate::Error::NodeExists) instead of entering as
//! one.
//!
//! A member whose session ends while it waits in `enter` is counted until
//! the server expires its node; one that ends inside holds the others'
//! `leave` up until then (its session timeout), no longer.

mod builder;
mod double;
mod enter;
mod leave;
mod single;

use std::time::Instant;

pub use builder::DoubleBarrierBuilder;
pub use double::DoubleBarrier;
pub use single::{Barrier, BarrierBuilder};

use crate::client::{Acl, CreateMode, Opts, ZkClient};
use crate::error::{Error, Result};
use crate::path;

/// Checks a barrier path and the client before any request.
fn validated(client: &ZkClient, barrier_path: &str) -> Result<()> {
    path::validate(barrier_path)?;
    if barrier_path == "/" {
        return Err(Error::InvalidPath {
            path: barrier_path.to_owned(),
            reason: "a barrier needs a path of its own, not the root",
        });
    }
    if client.is_closed() {
        return Err(Error::Closed);
    }
    Ok(())
}

/// The parent of an absolute path other than the root.
fn parent(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(at) => &path[..at],
    }
}

/// Creates `path` as a container node, and its missing ancestors (as
/// Curator's `creatingParentContainersIfNeeded`, which a server reaps once
/// empty).
fn ensure_container(client: &ZkClient, path: &str, acl: &[Acl], deadline: Option<Instant>) -> Result<()> {
    let opts = Opts::new().until(deadline).mode(CreateMode::Container).acl(acl);
    client.ensure_path_with(path, opts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn barriers_are_shared_between_threads() {
        fn shared<T: Send + Sync>() {}
        shared::<DoubleBarrier>();
        shared::<DoubleBarrierBuilder>();
        shared::<Barrier>();
    }
}
