//! `zkq top`: the queues and coordination recipes under a path, with each
//! queue's put and take rates over an interval: a full-screen view
//! ([`screen`]), or printed once (`--once`).
//!
//! Built only from what ZooKeeper shows: two looks an interval apart
//! ([`walk`]). A queue's puts and takes between them come from its node's
//! `cversion` (children created plus deleted) and its depth (created less
//! deleted). Each look lists every queue once and reads its head item's
//! stat, its consumer registry, and its locks and dead letters where its
//! consumers recorded them; a recipe's nodes are read once, after the second
//! look, and the servers are asked about sessions once.

mod screen;
mod walk;

use std::time::{Duration, Instant};

use anyhow::bail;
use clap::Args;
use serde::Serialize;

use crate::common::{parse_duration, Context};
use crate::four_letter;
use crate::recipe::{self, RecipeOutput};
use walk::{look, Look, QueueLook};

#[derive(Debug, Args)]
pub struct TopArgs {
    /// The path to look under: its queues (plain, Curator's kinds, sharded,
    /// classic) and its locks, semaphores, latches and double barriers.
    #[arg(default_value = "/")]
    pub path: String,
    /// Print the figures once, after one interval, and exit (without it:
    /// a full-screen view, refreshed every interval).
    #[arg(long)]
    once: bool,
    /// How often the view refreshes, and the interval the rates are taken
    /// over, e.g. `1s`, `500ms`.
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    interval: Duration,
}

/// A queue's row.
#[derive(Serialize)]
pub struct QueueRow {
    path: String,
    /// `classic`, `curator` or `kazoo`.
    layout: String,
    /// `plain`, `priority`, `delay`, `id` or `sharded`; kazoo's `queue` or
    /// `locking`.
    kind: String,
    /// Items now.
    depth: usize,
    /// A sharded queue's shards.
    #[serde(skip_serializing_if = "Option::is_none")]
    shards: Option<usize>,
    /// Items put, and taken, per second over the interval.
    puts_per_s: f64,
    takes_per_s: f64,
    /// Milliseconds since the head item was put.
    #[serde(skip_serializing_if = "Option::is_none")]
    oldest_age_ms: Option<i64>,
    /// A delay queue's items not due yet.
    #[serde(skip_serializing_if = "Option::is_none")]
    due_later: Option<usize>,
    /// Locks held under the lock path the consumers recorded (a kazoo
    /// `LockingQueue`'s entries taken).
    #[serde(skip_serializing_if = "Option::is_none")]
    locked: Option<usize>,
    /// This crate's consumers registered beside the queue.
    #[serde(skip_serializing_if = "Option::is_none")]
    consumers: Option<usize>,
    /// Items under the dead-letter path the consumers recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    dead_letters: Option<usize>,
}

#[derive(Serialize)]
pub struct Top {
    path: String,
    interval_ms: u128,
    queues: Vec<QueueRow>,
    recipes: Vec<RecipeOutput>,
    /// How the session states were found, or why they are unknown.
    sessions: String,
    /// Requests the second look sent (the recipes' reads and the session
    /// survey aside).
    requests_per_look: u64,
    /// Whether the walk stopped before the end (too many nodes).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    truncated: bool,
}

pub fn run(ctx: &Context, args: TopArgs) -> anyhow::Result<()> {
    if !args.once {
        if ctx.json {
            bail!("--json prints the figures once: give --once too");
        }
        return screen::run(ctx, &args.path, args.interval);
    }
    let mut sampler = Sampler::start(ctx, &args.path)?;
    std::thread::sleep(args.interval);
    let top = sampler.next(ctx)?;
    if ctx.json {
        return ctx.print_json(&top);
    }
    print(&top);
    Ok(())
}

/// Looks taken one after another, each giving the figures since the last.
pub struct Sampler {
    path: String,
    last: Look,
    at: Instant,
}

impl Sampler {
    /// The first look at `path`.
    pub fn start(ctx: &Context, path: &str) -> anyhow::Result<Sampler> {
        Ok(Sampler {
            path: path.to_owned(),
            last: look(ctx, path)?,
            at: Instant::now(),
        })
    }

    /// Another look, and its figures with the rates since the last one.
    pub fn next(&mut self, ctx: &Context) -> anyhow::Result<Top> {
        let before = ctx.client.stats().total();
        let now = look(ctx, &self.path)?;
        let requests_per_look = ctx.client.stats().total() - before;
        let elapsed = self.at.elapsed();
        let top = figures(ctx, &self.path, &self.last, &now, elapsed, requests_per_look)?;
        (self.last, self.at) = (now, Instant::now());
        Ok(top)
    }

    /// The lock details of the queue at `path` in the latest look.
    pub fn locks(&self, path: &str) -> Option<&[crate::locks::LockDetail]> {
        let stats = &self.last.queues.get(path)?.stats;
        stats.lock_report.as_ref().map(|r| r.lock_details.as_slice())
    }
}

/// The figures of `second`, with the rates since `first`, `elapsed` before.
fn figures(
    ctx: &Context,
    path: &str,
    first: &Look,
    second: &Look,
    elapsed: Duration,
    requests_per_look: u64,
) -> anyhow::Result<Top> {
    let secs = elapsed.as_secs_f64().max(f64::EPSILON);
    let queues = second
        .queues
        .iter()
        .map(|(path, now)| {
            let (puts, takes) = first.queues.get(path).map_or((0, 0), |then| moved(then, now));
            row(path, now, puts as f64 / secs, takes as f64 / secs)
        })
        .collect();
    let reads = second
        .recipes
        .iter()
        .filter_map(|(path, kind)| match recipe::read_recipe(ctx, path, *kind, None) {
            Ok(read) => Some(Ok(read)),
            // Gone since the look.
            Err(e)
                if e.downcast_ref::<zk_queue::Error>()
                    .is_some_and(zk_queue::Error::is_no_node) =>
            {
                None
            }
            Err(e) => Some(Err(e)),
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let (survey, sessions) = four_letter::survey(&ctx.connect, ctx.timeout);
    Ok(Top {
        path: path.to_owned(),
        interval_ms: elapsed.as_millis(),
        queues,
        recipes: reads
            .into_iter()
            .map(|read| read.show(&survey, sessions.clone()))
            .collect(),
        sessions,
        requests_per_look,
        truncated: second.truncated,
    })
}

/// Items put and taken between two looks at a queue: each put creates a
/// child and each take deletes one, and the node's `cversion` counts both.
fn moved(then: &QueueLook, now: &QueueLook) -> (u64, u64) {
    let changes = (now.changes - then.changes).max(0);
    let depth = i64::try_from(now.stats.items).unwrap_or(i64::MAX) - i64::try_from(then.stats.items).unwrap_or(0);
    let puts = ((changes + depth) / 2).max(0);
    let takes = ((changes - depth) / 2).max(0);
    (puts.unsigned_abs(), takes.unsigned_abs())
}

fn row(path: &str, look: &QueueLook, puts_per_s: f64, takes_per_s: f64) -> QueueRow {
    let stats = &look.stats;
    QueueRow {
        locked: look.taken.or(stats.locks()),
        path: path.to_owned(),
        layout: stats.layout.clone(),
        kind: stats.kind.clone(),
        depth: stats.items,
        shards: look.shards,
        puts_per_s,
        takes_per_s,
        oldest_age_ms: stats.oldest_age_ms,
        due_later: stats.not_due,
        consumers: stats.consumers,
        dead_letters: stats.dead_letters,
    }
}

fn print(top: &Top) {
    println!(
        "under {}: {} queues, {} recipes (rates over {} ms; {} requests a look)",
        top.path,
        top.queues.len(),
        top.recipes.len(),
        top.interval_ms,
        top.requests_per_look
    );
    if !top.queues.is_empty() {
        println!("QUEUE\tKIND\tDEPTH\tPUT/S\tTAKE/S\tOLDEST\tDUE-LATER\tLOCKED\tCONSUMERS\tDEAD");
    }
    let or_dash = |n: Option<usize>| n.map_or_else(|| "-".to_owned(), |n| n.to_string());
    for q in &top.queues {
        let kind = match q.shards {
            Some(shards) => format!("{} ({shards} shards)", q.kind),
            None => format!("{}/{}", q.layout, q.kind),
        };
        let oldest = q
            .oldest_age_ms
            .map_or_else(|| "-".to_owned(), |ms| format!("{:.1}s", ms as f64 / 1000.0));
        println!(
            "{}\t{kind}\t{}\t{:.1}\t{:.1}\t{oldest}\t{}\t{}\t{}\t{}",
            q.path,
            q.depth,
            q.puts_per_s,
            q.takes_per_s,
            or_dash(q.due_later),
            or_dash(q.locked),
            or_dash(q.consumers),
            or_dash(q.dead_letters)
        );
    }
    for r in &top.recipes {
        println!();
        recipe::print(r);
    }
    if top.truncated {
        println!("(stopped after {} nodes: name a deeper path)", walk::MAX_NODES);
    }
}
