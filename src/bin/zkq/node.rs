//! What a node is, decided once for every subcommand that reads a queue.
//!
//! Item names are classified by the library alone
//! ([`Layout::of_name`](zk_queue::inspect::Layout::of_name), through
//! [`Listing`]): Curator's `queue-…` names of every kind (plain, priority,
//! delay, id) and the classic recipe's `qn-<seq>`. Then:
//!
//! - a node that does not exist is an error naming it;
//! - a node without children is an empty queue (ZooKeeper cannot tell an
//!   empty queue from any other childless node, and a queue is often
//!   created before its first put);
//! - a node whose children are all shards `queue-<UUID>` is a sharded queue;
//! - a node with an item-named child is a queue, unless those children are
//!   ephemeral: queue items are always persistent nodes, while a lock-safe
//!   consumer's locks are ephemeral nodes named after the items they lock,
//!   so that node is a lock directory;
//! - a node with children of which none is an item is a queue only if
//!   this crate's consumers recorded their paths on it or registered
//!   beside it (`<queue>.consumers`): an empty queue beside foreign
//!   children; otherwise it is not a queue (a parent of queues, a consumer
//!   registry, a recipe's path).

use anyhow::bail;
use zk_queue::admin::{RawQueue, RecordedPaths};
use zk_queue::inspect::{consumer_registry, is_shard_name, Listing};
use zk_queue::path::join as child;

use crate::common::Context;

/// How many item-named children are looked at to tell locks from items.
const LOCK_SAMPLE: usize = 3;

/// The most siblings searched for the queue that recorded a lock directory.
const MAX_SIBLINGS: usize = 200;

/// What a node is.
pub enum Node {
    /// A queue (maybe empty), its children listed.
    Queue(Listing),
    /// A sharded queue: its shards, sorted.
    Sharded(Vec<String>),
    /// A lock-safe consumer's lock directory.
    LockDirectory {
        /// How many locks it holds.
        locks: usize,
        /// The sibling queue whose consumers recorded it, if found.
        queue: Option<String>,
    },
    /// Not a queue: its children, none an item.
    NotAQueue(Vec<String>),
}

/// What the node at `path` is; an error if it does not exist.
pub fn classify(ctx: &Context, path: &str) -> anyhow::Result<Node> {
    let (names, _) = ctx.client.get_children(path)?;
    classify_children(ctx, path, names)
}

/// What the node at `path`, whose children are `names`, is.
pub fn classify_children(ctx: &Context, path: &str, mut names: Vec<String>) -> anyhow::Result<Node> {
    if !names.is_empty() && names.iter().all(|n| is_shard_name(n)) {
        names.sort();
        return Ok(Node::Sharded(names));
    }
    let listing = Listing::of(&names, None);
    if listing.items.is_empty() {
        if names.is_empty() || has_consumers(ctx, path)? {
            return Ok(Node::Queue(listing));
        }
        names.sort();
        return Ok(Node::NotAQueue(names));
    }
    if holds_locks(ctx, path, &listing)? {
        return Ok(Node::LockDirectory {
            locks: listing.items.len(),
            queue: recording_queue(ctx, path)?,
        });
    }
    Ok(Node::Queue(listing))
}

/// Whether this crate's consumers recorded their lock path or dead-letter
/// path on the node at `path`, or registered beside it.
fn has_consumers(ctx: &Context, path: &str) -> anyhow::Result<bool> {
    // A path the library refuses as a queue's records nothing.
    if let Ok(queue) = RawQueue::new(&ctx.client, path) {
        match queue.recorded_paths() {
            Ok(recorded) if recorded != RecordedPaths::default() => return Ok(true),
            Ok(_) | Err(zk_queue::Error::NoNode { .. }) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(ctx.client.exists(&consumer_registry(path))?.is_some())
}

/// The queue's listing, or an error saying what the node is instead.
pub fn queue(ctx: &Context, path: &str) -> anyhow::Result<Listing> {
    match classify(ctx, path)? {
        Node::Queue(listing) => Ok(listing),
        other => bail!("{}", not_a_queue(path, &other)),
    }
}

/// For a subcommand that changes a queue (`take`, `purge`): an error if
/// the node at `path` is a lock directory, whose locks are named like
/// items; anything else passes (a node without items has nothing to take
/// or delete).
pub fn refuse_lock_directory(ctx: &Context, path: &str) -> anyhow::Result<()> {
    match classify(ctx, path) {
        Ok(lock @ Node::LockDirectory { .. }) => bail!("{}", not_a_queue(path, &lock)),
        Ok(_) => Ok(()),
        Err(e)
            if e.downcast_ref::<zk_queue::Error>()
                .is_some_and(zk_queue::Error::is_no_node) =>
        {
            Ok(())
        }
        Err(e) => Err(e),
    }
}

/// Why the node at `path`, being `node`, is not a (plain) queue.
pub fn not_a_queue(path: &str, node: &Node) -> String {
    match node {
        Node::Queue(_) => format!("{path} is a queue"),
        Node::Sharded(shards) => format!(
            "{path} is a sharded queue of {} shards: name a shard, e.g. {}",
            shards.len(),
            shards.first().map_or_else(String::new, |shard| child(path, shard))
        ),
        Node::LockDirectory { locks, queue } => {
            let of = queue.as_ref().map_or(String::new(), |q| {
                format!(" of the queue {q}, whose consumers recorded it")
            });
            format!("{path} is a lock directory{of}, not a queue: its {locks} children are ephemeral locks named after the items they hold")
        }
        Node::NotAQueue(children) => format!(
            "{path} is not a queue: none of its {} children is a queue item (queue-… or qn-<sequence>){}",
            children.len(),
            sample(children)
        ),
    }
}

/// The queue whose consumer registry (`<queue>.consumers`) the node at
/// `path` is, if it is one: named so, beside an existing queue node.
pub fn registry_of(ctx: &Context, path: &str) -> anyhow::Result<Option<String>> {
    let suffix = consumer_registry("/q");
    let suffix = &suffix["/q".len()..];
    let Some(queue) = path.strip_suffix(suffix).filter(|q| !q.is_empty() && !q.ends_with('/')) else {
        return Ok(None);
    };
    if consumer_registry(queue) != path {
        return Ok(None);
    }
    Ok(ctx.client.exists(queue)?.map(|_| queue.to_owned()))
}

/// Why the node at `path`, which the consumers of `queue` recorded as their
/// lock path, is not a queue (it may hold no lock now).
pub fn recorded_lock_directory(path: &str, queue: &str) -> String {
    format!("{path} is the lock directory of the queue {queue}, whose consumers recorded it, not a queue")
}

/// A few of `names`, for an error message.
fn sample(names: &[String]) -> String {
    const SHOWN: usize = 5;
    let mut shown = names.iter().take(SHOWN).cloned().collect::<Vec<_>>().join(", ");
    if names.len() > SHOWN {
        shown += ", …";
    }
    format!(": {shown}")
}

/// Whether the item-named children of `path` are ephemeral nodes (locks).
fn holds_locks(ctx: &Context, path: &str, listing: &Listing) -> anyhow::Result<bool> {
    for item in listing.items.iter().take(LOCK_SAMPLE) {
        match ctx.client.exists(&child(path, &item.name))? {
            Some(stat) => return Ok(stat.ephemeral_owner != 0),
            None => continue,
        }
    }
    Ok(false)
}

/// What a sibling queue's consumers recorded a node as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Their lock path.
    Locks,
    /// Their dead-letter path.
    DeadLetters,
}

/// Whether a sibling queue's consumers recorded `path` as their dead-letter
/// path (see [`recorded_by`]).
pub fn is_recorded_dead_letter_path(ctx: &Context, path: &str) -> anyhow::Result<bool> {
    Ok(matches!(recorded_by(ctx, path)?, Some((_, Role::DeadLetters))))
}

/// The sibling of `path` whose consumers recorded `path` as their lock path
/// or dead-letter path, and which; looked for among the first
/// [`MAX_SIBLINGS`] siblings (those whose name begins the node's name
/// first, the usual naming: `jobs` for `jobs-locks`). A sibling that cannot
/// be read is passed over.
pub fn recorded_by(ctx: &Context, path: &str) -> anyhow::Result<Option<(String, Role)>> {
    let Some((parent, own)) = path.rsplit_once('/') else {
        return Ok(None);
    };
    let parent = if parent.is_empty() { "/" } else { parent };
    let (mut siblings, _) = match ctx.client.get_children(parent) {
        Ok(found) => found,
        Err(e) if e.is_no_node() => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    siblings.retain(|s| s != own);
    siblings.sort_by_key(|s| !own.starts_with(s.as_str()));
    siblings.truncate(MAX_SIBLINGS);
    if siblings.is_empty() {
        return Ok(None);
    }
    let paths: Vec<String> = siblings.iter().map(|s| child(parent, s)).collect();
    for (sibling, read) in paths.iter().zip(ctx.client.get_data_many(&paths)?) {
        let Some(recorded) = read.ok().and_then(|(data, _)| RecordedPaths::parse(&data)) else {
            continue;
        };
        if recorded.lock_path.as_deref() == Some(path) {
            return Ok(Some((sibling.clone(), Role::Locks)));
        }
        if recorded.dead_letter_path.as_deref() == Some(path) {
            return Ok(Some((sibling.clone(), Role::DeadLetters)));
        }
    }
    Ok(None)
}

/// The sibling queue whose consumers recorded `path` as their lock path.
fn recording_queue(ctx: &Context, path: &str) -> anyhow::Result<Option<String>> {
    Ok(match recorded_by(ctx, path)? {
        Some((queue, Role::Locks)) => Some(queue),
        _ => None,
    })
}
