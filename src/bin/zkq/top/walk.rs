//! One look at everything under a path: its queues (each listed once, with
//! its statistics and its node's stat) and its coordination recipes (their
//! kinds, from their children's names).
//!
//! The walk lists each node once and stops at a queue, a sharded queue, a
//! lock directory and a recipe; it descends into other nodes, at most
//! [`MAX_DEPTH`] levels below the path and [`MAX_NODES`] nodes in all.

use std::collections::{BTreeMap, VecDeque};

use zk_queue::inspect::{
    consumer_registry, is_kazoo_entry, Listing, RecipeKind, KAZOO_ENTRIES, KAZOO_TAKEN, SEMAPHORE_LEASES,
    SEMAPHORE_LOCKS,
};
use zk_queue::path::join as child;

use crate::common::{now_ms, Context};
use crate::node::{self, Node};
use crate::stats::{self, Stats};

/// Levels below the path the walk descends, at most.
pub const MAX_DEPTH: usize = 4;

/// Nodes the walk lists, at most.
pub const MAX_NODES: usize = 1_000;

/// A queue as one look saw it.
pub struct QueueLook {
    pub stats: Stats,
    /// The shards of a sharded queue, counted as one queue.
    pub shards: Option<usize>,
    /// Children created and deleted since the node was created, summed
    /// over the shards: the node's (or shards') `cversion`.
    pub changes: i64,
    /// A kazoo `LockingQueue`'s entries taken and not yet consumed.
    pub taken: Option<usize>,
}

/// Everything one look saw.
pub struct Look {
    /// Queues by path.
    pub queues: BTreeMap<String, QueueLook>,
    /// Recipe paths, with their kinds.
    pub recipes: Vec<(String, RecipeKind)>,
    /// Whether the walk stopped at [`MAX_NODES`] before the end.
    pub truncated: bool,
}

/// Looks at everything under `root`.
pub fn look(ctx: &Context, root: &str) -> anyhow::Result<Look> {
    let mut look = Look {
        queues: BTreeMap::new(),
        recipes: Vec::new(),
        truncated: false,
    };
    let mut to_visit = VecDeque::from([(root.to_owned(), 0, true)]);
    let mut visited = 0;
    while let Some((path, depth, queue_if_empty)) = to_visit.pop_front() {
        if visited == MAX_NODES {
            look.truncated = true;
            break;
        }
        visited += 1;
        let (names, stat) = match ctx.client.get_children(&path) {
            Ok(found) => found,
            // Deleted since its parent was listed.
            Err(e) if e.is_no_node() && path != root => continue,
            Err(e) => return Err(e.into()),
        };
        if names.is_empty() && !queue_if_empty {
            continue;
        }
        if let Some(queue) = kazoo(ctx, &path, &names, i64::from(stat.cversion))? {
            look.queues.insert(path, queue);
            continue;
        }
        match node::classify_children(ctx, &path, names)? {
            Node::Queue(listing) => {
                let stats = stats::collect_listed(ctx, &path, listing, None, None)?;
                let changes = i64::from(stat.cversion);
                look.queues.insert(
                    path,
                    QueueLook {
                        stats,
                        shards: None,
                        changes,
                        taken: None,
                    },
                );
            }
            Node::Sharded(shards) => {
                let queue = sharded(ctx, &path, &shards)?;
                look.queues.insert(path, queue);
            }
            Node::LockDirectory { .. } => {}
            Node::NotAQueue(children) => match recipe_kind(&children) {
                Some(kind) => look.recipes.push((path, kind)),
                None if depth < MAX_DEPTH => {
                    for name in &children {
                        let below = child(&path, name);
                        // ZooKeeper's own nodes, and the consumers' registries.
                        if below == "/zookeeper"
                            || children.iter().any(|c| consumer_registry(&child(&path, c)) == below)
                        {
                            continue;
                        }
                        // A childless child is a queue only if consumers
                        // registered beside it (any node may be childless).
                        let registered = children.iter().any(|c| child(&path, c) == consumer_registry(&below));
                        to_visit.push_back((below, depth + 1, registered));
                    }
                }
                None => {}
            },
        }
    }
    Ok(look)
}

/// The recipe whose path has the children `names`, if any. A semaphore's
/// path holds `leases` and `locks` alone: a parent that also holds other
/// nodes (a `locks` directory among queues) is walked instead.
fn recipe_kind(names: &[String]) -> Option<RecipeKind> {
    let kind = RecipeKind::detect(names)?;
    let semaphore_only = names.iter().all(|n| n == SEMAPHORE_LEASES || n == SEMAPHORE_LOCKS);
    (kind != RecipeKind::Semaphore || semaphore_only).then_some(kind)
}

/// A sharded queue, as one queue: its items and changes summed over its
/// shards, its other figures the first shard's.
fn sharded(ctx: &Context, path: &str, shards: &[String]) -> anyhow::Result<QueueLook> {
    let mut items = 0;
    let mut changes = 0;
    let mut oldest: Option<i64> = None;
    let mut first: Option<Stats> = None;
    for shard in shards {
        let shard_path = child(path, shard);
        let (names, stat) = ctx.client.get_children(&shard_path)?;
        changes += i64::from(stat.cversion);
        let listing = Listing::of(names, None);
        let stats = stats::collect_listed(ctx, &shard_path, listing, None, None)?;
        items += stats.items;
        oldest = oldest.max(stats.oldest_age_ms);
        first.get_or_insert(stats);
    }
    let mut stats = first.unwrap_or_default();
    stats.kind = "sharded".to_owned();
    stats.items = items;
    stats.oldest_age_ms = oldest;
    Ok(QueueLook {
        stats,
        shards: Some(shards.len()),
        changes,
        taken: None,
    })
}

/// A kazoo queue at `path` (children `names`, `changes` its `cversion`):
/// a `Queue`, whose children are all entries, or a `LockingQueue`, whose
/// children are its `entries` and `taken` nodes; `None` for anything else.
fn kazoo(ctx: &Context, path: &str, names: &[String], changes: i64) -> anyhow::Result<Option<QueueLook>> {
    let is_dir = |n: &String| n == KAZOO_ENTRIES || n == KAZOO_TAKEN;
    let (entries, changes, taken, kind) = if !names.is_empty() && names.iter().all(|n| is_kazoo_entry(n)) {
        (names.to_vec(), changes, None, "queue")
    } else if names.iter().any(|n| n == KAZOO_ENTRIES) && names.iter().all(is_dir) {
        let (entries, stat) = ctx.client.get_children(&child(path, KAZOO_ENTRIES))?;
        let taken = match ctx.client.get_children(&child(path, KAZOO_TAKEN)) {
            Ok((locks, _)) => locks.len(),
            Err(e) if e.is_no_node() => 0,
            Err(e) => return Err(e.into()),
        };
        (entries, i64::from(stat.cversion), Some(taken), "locking")
    } else {
        return Ok(None);
    };
    let dir = taken.map_or_else(|| path.to_owned(), |_| child(path, KAZOO_ENTRIES));
    let oldest = match entries.iter().filter(|n| is_kazoo_entry(n)).min() {
        Some(head) => ctx
            .client
            .exists(&child(&dir, head))?
            .map(|stat| (now_ms() - stat.ctime).max(0)),
        None => None,
    };
    let mut stats = Stats::default();
    stats.layout = "kazoo".to_owned();
    stats.kind = kind.to_owned();
    stats.items = entries.iter().filter(|n| is_kazoo_entry(n)).count();
    stats.oldest_age_ms = oldest;
    Ok(Some(QueueLook {
        stats,
        shards: None,
        changes,
        taken,
    }))
}
