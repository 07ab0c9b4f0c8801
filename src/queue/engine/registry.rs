//! Where this crate's consumers of one queue register, so that each knows
//! how many there are and its own rank among them (see `stripes`).
//!
//! # Layout
//!
//! The registry of the queue `/a/jobs` is the node `/a/jobs.consumers`
//! ([`registry_path`]), a container node (reaped by the server once its last
//! consumer left) whose data is `zk-queue consumers of /a/jobs`. Each
//! consumer holds one `EPHEMERAL_SEQUENTIAL` child of it named
//! `_c_<UUID>-consumer-<sequence>` (Curator's protected name, so that a
//! consumer whose create's reply was lost finds its node again); consumers
//! are ranked by sequence. A consumer leaves by deleting its node when it
//! closes; one that crashed or lost its session leaves with its session.
//!
//! The registry is a sibling of the queue, never a child: Curator's queue
//! consumers (`DistributedQueue` and the priority, delay and id queues built
//! on it) log a warning for every child of the queue not named `queue-…`
//! each time they read it, and count it against `maxItems`; the classic
//! recipe warns of (and skips) every child not named `qn-…`; this crate's
//! `zkq` and `inspect` read a queue's children only. Nobody reads a queue's
//! siblings, with one exception: Curator's `QueueSharder` (and this crate's
//! `ShardedQueue`) takes every child of its path for a shard. So a queue
//! that may be a shard has no registry, and its consumers spread their
//! claims as before (`spread`): a shard of this crate's sharded queue, and
//! any queue whose name is a shard's, `queue-…`. Nor has a queue whose
//! registry path is its lock or dead-letter path, or one whose registry path
//! holds a node that is not a registry (other data): the node is left alone.

use crate::client::{ChildWatch, CreateMode, Opts};
use crate::error::{Error, Result};
use crate::naming::{is_registration, registry_of, QUEUE_PREFIX, REGISTRATION, REGISTRY_MARK};
use crate::path;
use crate::queue::core::Core;
use crate::recipes::names;
use crate::sync::Latch;

use super::stripes::Stripe;

/// The registry path of the queue of `core`, if its consumers may
/// register (see the module's documentation).
pub(crate) fn registry_path<T: Send + 'static>(core: &Core<T>) -> Option<String> {
    if core.options.listing_gate.is_some() || path::name(&core.path).starts_with(QUEUE_PREFIX) {
        return None;
    }
    let registry = registry_of(&core.path);
    let taken = [&core.options.lock_path, &core.options.dead_letter_path];
    (!taken.iter().any(|other| other.as_deref() == Some(registry.as_str()))).then_some(registry)
}

/// A consumer's registration, and what it knows of the others.
pub(super) struct Registry {
    /// The registry's path; `None` once it proved unusable (or the queue
    /// may not have one).
    dir: Option<String>,
    /// Whether the registry node was made or checked.
    ready: bool,
    /// This consumer's protected prefix, `_c_<UUID>-`.
    prefix: String,
    /// This consumer's node's name, once created.
    own: Option<String>,
    /// The session the node was created in.
    session: Option<i64>,
    /// The registrations of the latest listing, in rank order.
    members: Vec<String>,
    /// Opened by the listing's watch: a consumer came or went.
    changed: Latch,
    watch: Option<ChildWatch>,
}

impl Registry {
    pub(super) fn new<T: Send + 'static>(core: &Core<T>) -> Registry {
        let changed = Latch::new();
        changed.open();
        Registry {
            dir: registry_path(core),
            ready: false,
            prefix: names::protected_prefix(),
            own: None,
            session: None,
            members: Vec::new(),
            changed,
            watch: None,
        }
    }

    /// This consumer's stripe for the pass about to start, registering (or
    /// reading the registry again) first if needed; a change of the
    /// registry wakes `latch`. `None`: no stripes (alone, or no registry);
    /// a failure is logged and tried again at the next pass.
    pub(super) fn stripe<T: Send + 'static>(&mut self, core: &Core<T>, latch: &Latch) -> Option<Stripe> {
        let dir = self.dir.clone()?;
        if let Err(e) = self.refresh(core, &dir) {
            self.changed.open();
            if e.is_retryable() || matches!(e, Error::NoNode { .. }) {
                log::debug!("queue {}: consumer registry {dir}: {e}; trying again", core.path);
                self.ready = !matches!(e, Error::NoNode { .. }) && self.ready;
            } else {
                log::info!(
                    "queue {}: consumer registry {dir} unusable ({e}); consumers spread their claims instead",
                    core.path
                );
                self.dir = None;
            }
            return None;
        }
        self.changed.forward_to(latch);
        let own = self.own.as_deref()?;
        let rank = self.members.iter().position(|m| m == own)?;
        Stripe::new(rank, self.members.len())
    }

    /// Makes sure of the registry node and this consumer's registration,
    /// and lists the registry again if it changed.
    fn refresh<T: Send + 'static>(&mut self, core: &Core<T>, dir: &str) -> Result<()> {
        if !self.ready {
            self.make_registry(core, dir)?;
            self.ready = true;
        }
        let session = core.client.session_id().ok();
        if session != self.session {
            // A new session: its ephemeral node went with the old one.
            self.own = None;
            self.changed.open();
        }
        if !self.changed.is_open() {
            return Ok(());
        }
        let changed = Latch::new();
        let (children, _, watch) = core.client.watch_children(dir, &changed, Opts::new())?;
        let found = self
            .own
            .clone()
            .or_else(|| children.iter().find(|c| c.starts_with(&self.prefix)).cloned())
            .filter(|own| children.contains(own));
        self.own = found;
        if self.own.is_none() {
            self.join(core, dir)?;
            // The create fired the watch just set: list again at once.
            changed.open();
        }
        self.members = names::sorted(
            children.into_iter().filter(|c| is_registration(c)).collect(),
            &[REGISTRATION],
        );
        if let Some(own) = &self.own {
            if !self.members.contains(own) {
                self.members.push(own.clone());
                self.members = names::sorted(std::mem::take(&mut self.members), &[REGISTRATION]);
            }
        }
        (self.changed, self.watch) = (changed, Some(watch));
        Ok(())
    }

    /// Creates the registry node, or checks that the node there is one.
    fn make_registry<T: Send + 'static>(&self, core: &Core<T>, dir: &str) -> Result<()> {
        let mark = format!("{REGISTRY_MARK}{}", core.path);
        let opts = Opts::new().acl(&core.options.acl);
        match core
            .client
            .create_with(dir, mark.as_bytes(), opts.mode(CreateMode::Container))
        {
            Ok(_) => return Ok(()),
            Err(e) if e.is_unimplemented() => {
                match core
                    .client
                    .create_with(dir, mark.as_bytes(), opts.mode(CreateMode::Persistent))
                {
                    Ok(_) => return Ok(()),
                    Err(Error::NodeExists { .. }) => {}
                    Err(e) => return Err(e),
                }
            }
            Err(Error::NodeExists { .. }) => {}
            Err(e) => return Err(e),
        }
        let (data, _) = core.client.get_data(dir)?;
        if data == mark.as_bytes() {
            return Ok(());
        }
        Err(Error::InvalidArgument(format!(
            "{dir} exists and is not the consumer registry of {}",
            core.path
        )))
    }

    /// Registers this consumer.
    fn join<T: Send + 'static>(&mut self, core: &Core<T>, dir: &str) -> Result<()> {
        let name = names::node_name(&self.prefix, REGISTRATION);
        self.session = core.client.session_id().ok();
        let opts = Opts::new().acl(&core.options.acl).mode(CreateMode::EphemeralSequential);
        let (created, _) = core.client.create_with(&path::join(dir, &name), &[], opts)?;
        log::debug!("queue {}: registered as {created}", core.path);
        self.own = Some(path::name(&created).to_owned());
        Ok(())
    }

    /// Deletes this consumer's registration (best effort: it goes with the
    /// session anyway), so the others take its stripe at once.
    pub(super) fn leave<T: Send + 'static>(&mut self, core: &Core<T>) {
        let (Some(dir), Some(own)) = (&self.dir, self.own.take()) else {
            return;
        };
        self.watch = None;
        match core.client.delete(&path::join(dir, &own), None) {
            Ok(()) | Err(Error::NoNode { .. }) => {}
            Err(e) => log::debug!("queue {}: could not delete its registration {own}: {e}", core.path),
        }
    }
}
