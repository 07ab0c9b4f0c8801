//! Sharded backlogs (`--sharded-backlog N`): N items put into a sharded
//! queue (Curator's `QueueSharder` layout, threshold 10,000 nodes per
//! shard) by one producer handle shared by four threads, with background
//! puts and then with coalesced puts; then drained by a sharded consumer in
//! a child process, which reports its time and peak memory. Also reports
//! the shards made, the fullest shard, and the largest listing reply a
//! shard needs (what a Java client must read at once).

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{ensure, Context};
use serde::Serialize;
use zk_queue::{BytesSerializer, QueueBuilder, ShardPolicy, ZkClient};

use super::cases::Ctx;
use super::drain;
use super::report::int;
use super::util;

/// Nodes per shard before a new shard is wanted (Curator's default).
const THRESHOLD: usize = 10_000;

/// Threads sharing the producer handle.
const THREADS: usize = 4;

/// The policy of the benchmark's sharded queues, producer and consumer.
pub fn policy() -> ShardPolicy {
    ShardPolicy::new()
        .threshold(THRESHOLD)
        .check_interval(Duration::from_secs(1))
        .max_shards(1_000)
}

#[derive(Debug, Serialize)]
pub struct ShardedReport {
    pub items: usize,
    /// `background` or `coalesced`.
    pub puts: &'static str,
    pub put_items_per_s: Option<f64>,
    pub shards: Option<usize>,
    /// Item nodes in the fullest shard, and in all shards.
    pub largest_shard_nodes: Option<usize>,
    pub nodes: Option<usize>,
    /// The largest getChildren reply of a shard, bytes (estimated from the
    /// names: ZooKeeper's reply header, a count, and each name with its
    /// length).
    pub largest_listing_bytes: Option<usize>,
    pub drain_items_per_s: Option<f64>,
    /// The drain rate ÷ the 1,000-item drain of the same run.
    pub ratio_to_small_drain: Option<f64>,
    pub peak_rss_mb: Option<f64>,
    pub error: Option<String>,
}

/// Runs a background-put and a coalesced-put backlog of `items`.
pub fn run(ctx: &Ctx, items: usize, small_drain_rate: Option<f64>) -> Vec<ShardedReport> {
    ["background", "coalesced"]
        .into_iter()
        .map(|puts| {
            let path = format!("{}/sharded-{puts}-{items}", ctx.root);
            let leader = format!("{path}-leader");
            let measured = backlog(ctx, &path, &leader, items, puts == "coalesced");
            let cleanup = util::remove_tree(ctx.admin, &path).and_then(|()| util::remove_tree(ctx.admin, &leader));
            let measured = measured.and_then(|m| cleanup.map(|()| m));
            report(items, puts, small_drain_rate, measured)
        })
        .collect()
}

struct Measured {
    put_items_per_s: f64,
    shards: usize,
    largest_shard_nodes: usize,
    nodes: usize,
    largest_listing_bytes: usize,
    drain_items_per_s: f64,
    peak_rss_mb: f64,
}

fn report(
    items: usize,
    puts: &'static str,
    small_drain_rate: Option<f64>,
    measured: anyhow::Result<Measured>,
) -> ShardedReport {
    match measured {
        Ok(m) => ShardedReport {
            items,
            puts,
            put_items_per_s: Some(m.put_items_per_s),
            shards: Some(m.shards),
            largest_shard_nodes: Some(m.largest_shard_nodes),
            nodes: Some(m.nodes),
            largest_listing_bytes: Some(m.largest_listing_bytes),
            drain_items_per_s: Some(m.drain_items_per_s),
            ratio_to_small_drain: small_drain_rate.map(|small| m.drain_items_per_s / small),
            peak_rss_mb: Some(m.peak_rss_mb),
            error: None,
        },
        Err(e) => ShardedReport {
            items,
            puts,
            put_items_per_s: None,
            shards: None,
            largest_shard_nodes: None,
            nodes: None,
            largest_listing_bytes: None,
            drain_items_per_s: None,
            ratio_to_small_drain: None,
            peak_rss_mb: None,
            error: Some(format!("{e:#}")),
        },
    }
}

fn backlog(ctx: &Ctx, path: &str, leader: &str, items: usize, coalesced: bool) -> anyhow::Result<Measured> {
    let client = ZkClient::connect(ctx.connect).context("connecting the producer")?;
    let queue = QueueBuilder::new(&client, path, BytesSerializer)
        .put_in_background(true)
        .coalesce_puts(coalesced)
        .build_sharded_queue(leader, policy())
        .context("building the sharded producer")?;
    let deadline = Instant::now() + ctx.budget.deadline("sharded puts", 2.0 * items as f64).allowed;
    while !queue.is_leader() {
        ensure!(Instant::now() < deadline, "the producer never led its sharded queue");
        std::thread::sleep(Duration::from_millis(10));
    }
    let bar = util::bar(ctx.show_progress, items as u64, "sharded puts");
    let queue = Arc::new(queue);
    let started = Instant::now();
    std::thread::scope(|s| -> anyhow::Result<()> {
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                let (queue, bar) = (Arc::clone(&queue), bar.clone());
                s.spawn(move || -> anyhow::Result<()> {
                    for i in (t..items).step_by(THREADS) {
                        queue.put(util::payload(0, i as u64, ctx.size)).context("put")?;
                        bar.inc(1);
                    }
                    Ok(())
                })
            })
            .collect();
        for worker in workers {
            worker.join().map_err(|_| anyhow::anyhow!("a producer thread died"))??;
        }
        Ok(())
    })?;
    ensure!(
        queue.flush_timeout(deadline.saturating_duration_since(Instant::now())),
        "background puts still pending at the deadline"
    );
    let put_secs = started.elapsed().as_secs_f64();
    bar.finish_and_clear();
    let shard_paths = queue.shard_paths();
    drop(queue);
    client.close();

    let (mut largest_shard_nodes, mut nodes, mut largest_listing_bytes) = (0, 0, 0);
    for shard in &shard_paths {
        let (names, _) = ctx.admin.get_children(shard).context("listing a shard")?;
        largest_shard_nodes = largest_shard_nodes.max(names.len());
        nodes += names.len();
        // Reply header (xid, zxid, err) and the vector's count, then each
        // name's length and bytes.
        let reply = 16 + 4 + names.iter().map(|name| 4 + name.len()).sum::<usize>();
        largest_listing_bytes = largest_listing_bytes.max(reply);
    }
    let report = drain::drain_in_child(ctx, path, items, Some(leader))?;
    Ok(Measured {
        put_items_per_s: items as f64 / put_secs,
        shards: shard_paths.len(),
        largest_shard_nodes,
        nodes,
        largest_listing_bytes,
        drain_items_per_s: items as f64 / report.secs,
        peak_rss_mb: report.vmhwm_kb as f64 / 1024.0,
    })
}

/// Prints the sharded backlogs as a table (not with `--json`).
pub fn print(json: bool, reports: &[ShardedReport]) {
    if json || reports.is_empty() {
        return;
    }
    println!("\nsharded backlogs (threshold {THRESHOLD} nodes per shard; {THREADS} threads share one producer)");
    println!(
        "{:>9} {:>10} {:>9} {:>6} {:>9} {:>10} {:>9} {:>9} {:>8}",
        "items", "puts", "put/s", "shards", "fullest", "listing B", "drain/s", "x 1,000", "peak MB"
    );
    for r in reports {
        match &r.error {
            Some(e) => println!("{:>9} {:>10} failed: {e}", r.items, r.puts),
            None => println!(
                "{:>9} {:>10} {:>9} {:>6} {:>9} {:>10} {:>9} {:>9.2} {:>8.1}",
                int(r.items as f64),
                r.puts,
                int(r.put_items_per_s.unwrap_or(0.0)),
                r.shards.unwrap_or(0),
                int(r.largest_shard_nodes.unwrap_or(0) as f64),
                int(r.largest_listing_bytes.unwrap_or(0) as f64),
                int(r.drain_items_per_s.unwrap_or(0.0)),
                r.ratio_to_small_drain.unwrap_or(0.0),
                r.peak_rss_mb.unwrap_or(0.0),
            ),
        }
    }
}
