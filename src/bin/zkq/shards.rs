//! Sharded queues (Curator's `QueueSharder` layout, zk-queue's
//! `ShardedQueue`): a queue path whose children are all shards named
//! `queue-<UUID>`, each a queue of its own. `stats`, `peek` and `purge` (each in
//! its command's file) go through every shard and say which is which; a lock or dead-letter path
//! given is the parent of each shard's own, a child named after the shard.

use zk_queue::inspect::is_shard_name;
use zk_queue::path::join as child;

use crate::common::Context;

/// The shards of the queue at `path`, sorted, if it is sharded: it has
/// children and every one is a shard.
pub fn of(ctx: &Context, path: &str) -> anyhow::Result<Option<Vec<String>>> {
    let (mut children, _) = ctx.client.get_children(path)?;
    if children.is_empty() || !children.iter().all(|name| is_shard_name(name)) {
        return Ok(None);
    }
    children.sort();
    Ok(Some(children))
}

/// A shard's own path under a parent given for the whole queue.
pub fn under(parent: Option<&str>, shard: &str) -> Option<String> {
    parent.map(|parent| child(parent, shard))
}
