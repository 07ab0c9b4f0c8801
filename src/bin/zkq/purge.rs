//! `zkq purge` (and `zkq dead-letter purge`).

use std::io::{BufRead, IsTerminal, Write};
use std::time::Duration;

use anyhow::bail;
use clap::Args;
use indicatif::ProgressBar;
use serde::Serialize;
use zk_queue::admin::RawQueue;

use crate::common::Context;
use crate::locks::LockArgs;
use crate::shards;
use zk_queue::path::join as child;

#[derive(Debug, Args)]
pub struct PurgeArgs {
    /// The queue's path.
    pub path: String,
    /// Do not ask for confirmation.
    #[arg(long)]
    pub yes: bool,
}

/// `zkq purge` of a queue.
#[derive(Debug, Args)]
pub struct QueuePurgeArgs {
    #[command(flatten)]
    pub purge: PurgeArgs,
    #[command(flatten)]
    pub locks: LockArgs,
}

#[derive(Serialize)]
struct PurgeOutput {
    deleted: usize,
    #[serde(skip_serializing_if = "is_zero")]
    held: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Deletes every item (of the detected layout) under the path; refuses a
/// lock directory.
pub fn run(ctx: &Context, args: QueuePurgeArgs) -> anyhow::Result<()> {
    crate::node::refuse_lock_directory(ctx, &args.purge.path)?;
    if let Some(shards) = shards::of(ctx, &args.purge.path)? {
        return purge_all(ctx, &args, &shards);
    }
    let queue = args.locks.apply(RawQueue::new(&ctx.client, &args.purge.path)?)?;
    let total = queue.listing()?.items.len();
    purge(ctx, &args.purge, total, || queue.purge().map(|p| (p.deleted, p.held)))
}

/// Asks (unless `--yes`) before deleting `total` items with `purge`, shows
/// a spinner meanwhile on a terminal, and prints how many were deleted (and
/// how many were kept because consumers held them).
pub fn purge(
    ctx: &Context,
    args: &PurgeArgs,
    total: usize,
    purge: impl FnOnce() -> zk_queue::Result<(usize, usize)>,
) -> anyhow::Result<()> {
    if total > 0 && !args.yes && !confirm(&args.path, total)? {
        bail!("purge of {} cancelled", args.path);
    }
    let spinner = if std::io::stderr().is_terminal() {
        let spinner = ProgressBar::new_spinner().with_message(format!("deleting {total} items"));
        spinner.enable_steady_tick(Duration::from_millis(100));
        spinner
    } else {
        ProgressBar::hidden()
    };
    let deleted = purge();
    spinner.finish_and_clear();
    let (deleted, held) =
        deleted.map_err(|e| anyhow::Error::new(e).context(format!("purge of {} incomplete", args.path)))?;
    if ctx.json {
        return ctx.print_json(&PurgeOutput { deleted, held });
    }
    println!("{deleted}");
    if held > 0 {
        eprintln!("zkq: {held} items kept: held by consumers");
    }
    Ok(())
}

/// Asks on the terminal before deleting `total` items of `path`; refuses
/// when stdin is not a terminal.
fn confirm(path: &str, total: usize) -> anyhow::Result<bool> {
    if !std::io::stdin().is_terminal() {
        bail!("refusing to purge {path} without --yes: stdin is not a terminal");
    }
    eprint!("delete {total} items from {path}? [y/N] ");
    std::io::stderr().flush()?;
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes"))
}

/// `zkq purge` of a sharded queue: every shard's items (the shards stay).
fn purge_all(ctx: &Context, args: &QueuePurgeArgs, shards: &[String]) -> anyhow::Result<()> {
    let mut queues = Vec::with_capacity(shards.len());
    for shard in shards {
        let locks = LockArgs {
            lock_path: shards::under(args.locks.lock_path.as_deref(), shard),
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
