//! Sharded queues (Curator's `QueueSharder` layout, zk-queue's
//! `ShardedQueue`): a queue path whose children are all shards named
//! `queue-<UUID>`, each a queue of its own. `stats`, `peek` and `purge` go
//! through every shard and say which is which; a lock or dead-letter path
//! given is the parent of each shard's own, a child named after the shard.

use serde::Serialize;
use zk_queue::admin::RawQueue;
use zk_queue::inspect::is_shard_name;
use zk_queue::path::join as child;

use crate::common::{list, Context};
use crate::locks::LockArgs;
use crate::purge::{purge, QueuePurgeArgs};
use crate::read::{describe, print_described, Counting, PeekedItem};
use crate::stats::{collect, print_stats, Stats, StatsArgs};

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
fn under(parent: Option<&str>, shard: &str) -> Option<String> {
    parent.map(|parent| child(parent, shard))
}

#[derive(Serialize)]
struct ShardStats {
    shard: String,
    #[serde(flatten)]
    stats: Stats,
}

#[derive(Serialize, Default)]
struct Total {
    shards: usize,
    items: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    oldest_age_ms: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    locks: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dead_letters: Option<usize>,
}

#[derive(Serialize)]
struct ShardedStats {
    total: Total,
    shards: Vec<ShardStats>,
}

/// `zkq stats` of a sharded queue: each shard's, then the total.
pub fn stats(ctx: &Context, args: &StatsArgs, shards: &[String]) -> anyhow::Result<()> {
    let mut total = Total {
        shards: shards.len(),
        ..Total::default()
    };
    let mut each = Vec::with_capacity(shards.len());
    for shard in shards {
        let locks = under(args.lock_path.as_deref(), shard);
        let dead = under(args.dead_letter_path.as_deref(), shard);
        let stats = collect(ctx, &child(&args.path, shard), locks.as_deref(), dead.as_deref())?;
        total.items += stats.items;
        total.oldest_age_ms = total.oldest_age_ms.max(stats.oldest_age_ms);
        if let Some(locks) = stats.locks() {
            *total.locks.get_or_insert(0) += locks;
        }
        if let Some(dead) = stats.dead_letters {
            *total.dead_letters.get_or_insert(0) += dead;
        }
        each.push(ShardStats {
            shard: shard.clone(),
            stats,
        });
    }
    if ctx.json {
        return ctx.print_json(&ShardedStats { total, shards: each });
    }
    println!("sharded: {} shards", total.shards);
    println!("items: {}", total.items);
    if let Some(age) = total.oldest_age_ms {
        println!("oldest age: {age} ms");
    }
    if let Some(locks) = total.locks {
        println!("locks: {locks}");
    }
    if let Some(dead) = total.dead_letters {
        println!("dead letters: {dead}");
    }
    for shard in &each {
        println!("shard {}:", shard.shard);
        print_stats(&shard.stats, "  ");
    }
    Ok(())
}

#[derive(Serialize)]
struct ShardPeek {
    shard: String,
    items: Vec<PeekedItem>,
}

/// `zkq peek` of a sharded queue: the first `count` items of each shard
/// (order holds within a shard only).
pub fn peek(ctx: &Context, path: &str, count: usize, shards: &[String]) -> anyhow::Result<()> {
    let mut each = Vec::with_capacity(shards.len());
    for shard in shards {
        let shard_path = child(path, shard);
        let listing = list(ctx, &shard_path)?;
        let head: Vec<_> = listing.items.into_iter().take(count).collect();
        each.push(ShardPeek {
            shard: shard.clone(),
            items: describe(ctx, &shard_path, listing.layout, &head, Counting::Queue)?,
        });
    }
    if ctx.json {
        return ctx.print_json(&each);
    }
    for shard in &each {
        println!("shard {}:", shard.shard);
        print_described(ctx, &shard.items)?;
    }
    Ok(())
}

/// `zkq purge` of a sharded queue: every shard's items (the shards stay).
pub fn purge_all(ctx: &Context, args: &QueuePurgeArgs, shards: &[String]) -> anyhow::Result<()> {
    let mut queues = Vec::with_capacity(shards.len());
    for shard in shards {
        let locks = LockArgs {
            lock_path: under(args.locks.lock_path.as_deref(), shard),
            force: args.locks.force,
        };
        queues.push(locks.apply(RawQueue::new(&ctx.client, &child(&args.purge.path, shard))?)?);
    }
    let mut total = 0;
    for queue in &queues {
        total += queue.listing()?.items.len();
    }
    purge(ctx, &args.purge, total, || {
        let (mut deleted, mut held) = (0, 0);
        for queue in &queues {
            let purged = queue.purge()?;
            deleted += purged.deleted;
            held += purged.held;
        }
        Ok((deleted, held))
    })
}
