//! `zkq stats`: depth, age, priorities, due counts, locks and dead letters
//! of a queue; of a parent of queues, each queue's count
//! ([`crate::parents`]).

use std::collections::BTreeMap;

use clap::Args;
use serde::Serialize;
use zk_queue::admin::{DeadLetters, RawQueue};
use zk_queue::inspect::{self, Kind, Listing};
use zk_queue::path::join as child;

use crate::common::{list, now_ms, Context};
use crate::locks::{survey_locks, LockReport};
use crate::node::{self, Node};
use crate::parents;
use crate::shards;

#[derive(Debug, Args)]
pub struct StatsArgs {
    /// The queue's path (or a parent of queues: each queue under it, with
    /// its count).
    pub path: String,
    /// The queue's lock path, to count locks held and flag stale ones.
    /// Default: the lock path the queue's consumers recorded on the queue
    /// node, if any.
    #[arg(long)]
    pub lock_path: Option<String>,
    /// The queue's dead-letter path, to count dead letters. Default: the
    /// dead-letter path the queue's consumers recorded on the queue node, if
    /// any.
    #[arg(long)]
    pub dead_letter_path: Option<String>,
}

#[derive(Serialize, Default)]
pub struct Stats {
    pub layout: String,
    pub kind: String,
    /// Item nodes.
    pub items: usize,
    /// Children that are not items.
    foreign: usize,
    /// The head item's name and age in milliseconds (from its creation time).
    #[serde(skip_serializing_if = "Option::is_none")]
    head: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oldest_age_ms: Option<i64>,
    /// Items per priority (priority queues).
    #[serde(skip_serializing_if = "Option::is_none")]
    priorities: Option<BTreeMap<i32, usize>>,
    /// Items due now and later (delay queues).
    #[serde(skip_serializing_if = "Option::is_none")]
    due: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_due: Option<usize>,
    /// This crate's consumers registered on the queue (see
    /// `inspect::consumer_registry`), if any registry exists.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consumers: Option<usize>,
    /// The locks under the lock path given or recorded.
    #[serde(flatten)]
    pub lock_report: Option<LockReport>,
    /// The dead-letter path looked at: the one given, or else the one the
    /// queue's consumers recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    dead_letter_path: Option<String>,
    /// Whether it is the one the queue's consumers recorded (else given).
    #[serde(skip_serializing_if = "Option::is_none")]
    dead_letter_path_recorded: Option<bool>,
    /// Items under the dead-letter path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dead_letters: Option<usize>,
}

impl Stats {
    /// Lock nodes under the lock path, if one is known.
    pub fn locks(&self) -> Option<usize> {
        self.lock_report.as_ref().map(|r| r.locks)
    }
}

pub fn run(ctx: &Context, args: StatsArgs) -> anyhow::Result<()> {
    let listing = match node::classify(ctx, &args.path)? {
        Node::Queue(listing) => listing,
        Node::Sharded(shards) => return sharded_stats(ctx, &args, &shards),
        Node::NotAQueue(children) => return parents::stats(ctx, &args.path, &children),
        other => anyhow::bail!("{}", node::not_a_queue(&args.path, &other)),
    };
    let stats = collect_listed(
        ctx,
        &args.path,
        listing,
        args.lock_path.as_deref(),
        args.dead_letter_path.as_deref(),
    )?;
    if ctx.json {
        return ctx.print_json(&stats);
    }
    print_stats(&stats, "");
    Ok(())
}

/// The statistics of the queue at `path`, with its locks and dead letters
/// (under the paths given, or else those its consumers recorded).
pub fn collect(
    ctx: &Context,
    path: &str,
    lock_path: Option<&str>,
    dead_letter_path: Option<&str>,
) -> anyhow::Result<Stats> {
    let listing = list(ctx, path)?;
    collect_listed(ctx, path, listing, lock_path, dead_letter_path)
}

/// [`collect`] of a queue already listed.
pub fn collect_listed(
    ctx: &Context,
    path: &str,
    listing: Listing,
    lock_path: Option<&str>,
    dead_letter_path: Option<&str>,
) -> anyhow::Result<Stats> {
    let mut stats = Stats {
        layout: listing.layout.to_string(),
        kind: listing.kind.to_string(),
        items: listing.items.len(),
        foreign: listing.foreign.len(),
        ..Stats::default()
    };
    if let Some(head) = listing.items.first() {
        if let Some(stat) = ctx.client.exists(&child(path, &head.name))? {
            stats.head = Some(head.name.clone());
            stats.oldest_age_ms = Some((now_ms() - stat.ctime).max(0));
        }
    }
    match listing.kind {
        Kind::Priority => {
            let mut by_priority = BTreeMap::new();
            for item in &listing.items {
                // A plain name in a priority queue (a requeued item) counts as 0.
                *by_priority.entry(item.priority.unwrap_or(0)).or_insert(0) += 1;
            }
            stats.priorities = Some(by_priority);
        }
        Kind::Delay => {
            let now = now_ms();
            let due = listing.items.iter().filter(|i| i.due.is_none_or(|d| d <= now)).count();
            stats.due = Some(due);
            stats.not_due = Some(listing.items.len() - due);
        }
        Kind::Plain | Kind::Id => {}
    }
    stats.lock_report = survey_locks(ctx, path, lock_path, &listing)?;
    stats.consumers = match ctx.client.get_children(&inspect::consumer_registry(path)) {
        Ok((names, _)) => Some(names.iter().filter(|n| inspect::is_consumer_registration(n)).count()),
        Err(e) if e.is_no_node() => None,
        Err(e) => return Err(e.into()),
    };
    let dead_letters = match dead_letter_path {
        Some(given) => Some((given.to_owned(), false)),
        None => recorded_dead_letter_path(ctx, path)?.map(|recorded| (recorded, true)),
    };
    if let Some((dlq, recorded)) = dead_letters {
        stats.dead_letters = Some(DeadLetters::new(&ctx.client, &dlq)?.names()?.len());
        stats.dead_letter_path = Some(dlq);
        stats.dead_letter_path_recorded = Some(recorded);
    }
    Ok(stats)
}

/// The dead-letter path the consumers of the queue at `path` recorded on
/// it, if any.
fn recorded_dead_letter_path(ctx: &Context, path: &str) -> anyhow::Result<Option<String>> {
    // A path the library refuses as a queue's records nothing.
    let Ok(queue) = RawQueue::new(&ctx.client, path) else {
        return Ok(None);
    };
    match queue.recorded_paths() {
        Ok(recorded) => Ok(recorded.dead_letter_path),
        Err(zk_queue::Error::NoNode { .. }) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Prints `stats` as text, each line after `indent`.
pub fn print_stats(stats: &Stats, indent: &str) {
    println!("{indent}layout: {}", stats.layout);
    println!("{indent}kind: {}", stats.kind);
    println!("{indent}items: {}", stats.items);
    println!("{indent}foreign children: {}", stats.foreign);
    if let (Some(head), Some(age)) = (&stats.head, stats.oldest_age_ms) {
        println!("{indent}head: {head} (age {age} ms)");
    }
    if let Some(priorities) = &stats.priorities {
        for (priority, count) in priorities {
            println!("{indent}priority {priority}: {count}");
        }
    }
    if let (Some(due), Some(not_due)) = (stats.due, stats.not_due) {
        println!("{indent}due: {due}");
        println!("{indent}not due: {not_due}");
    }
    if let Some(report) = &stats.lock_report {
        report.print(indent);
    }
    if let Some(consumers) = stats.consumers {
        println!("{indent}registered consumers: {consumers}");
    }
    if let (Some(dead), Some(dlq), Some(recorded)) = (
        stats.dead_letters,
        &stats.dead_letter_path,
        stats.dead_letter_path_recorded,
    ) {
        let how = if recorded {
            "recorded by the queue's consumers"
        } else {
            "given"
        };
        println!("{indent}dead letters: {dead} (under {dlq}, {how})");
    }
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
fn sharded_stats(ctx: &Context, args: &StatsArgs, shards: &[String]) -> anyhow::Result<()> {
    let mut total = Total {
        shards: shards.len(),
        ..Total::default()
    };
    let mut each = Vec::with_capacity(shards.len());
    for shard in shards {
        let locks = shards::under(args.lock_path.as_deref(), shard);
        let dead = shards::under(args.dead_letter_path.as_deref(), shard);
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
