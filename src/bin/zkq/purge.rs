//! `zkq purge` (and `zkq dead-letter purge`).

use std::io::{BufRead, IsTerminal, Write};

use anyhow::bail;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

use zk_queue::path::join as child;

use crate::common::{Context, Listing};

/// Deletes per `delete_many` call.
const CHUNK: usize = 1_000;

#[derive(Debug, Args)]
pub struct PurgeArgs {
    /// The queue's path.
    pub path: String,
    /// Do not ask for confirmation.
    #[arg(long)]
    pub yes: bool,
}

#[derive(Serialize)]
struct PurgeOutput {
    deleted: usize,
}

/// Deletes every item (of the detected layout) under the path.
pub fn run(ctx: &Context, args: PurgeArgs) -> anyhow::Result<()> {
    let path = &args.path;
    let listing = Listing::read(ctx, path, None)?;
    let total = listing.items.len();
    if total > 0 && !args.yes && !confirm(path, total)? {
        bail!("purge of {path} cancelled");
    }
    let progress = if std::io::stderr().is_terminal() {
        let bar = ProgressBar::new(total as u64);
        if let Ok(style) = ProgressStyle::with_template("{bar:40} {pos}/{len} deleted") {
            bar.set_style(style);
        }
        bar
    } else {
        ProgressBar::hidden()
    };
    let nodes: Vec<(String, Option<i32>)> = listing.items.iter().map(|i| (child(path, &i.name), None)).collect();
    let mut deleted = 0;
    let mut failure = None;
    for chunk in nodes.chunks(CHUNK) {
        for ((node, _), result) in chunk.iter().zip(ctx.client.delete_many(chunk)?) {
            match result {
                Ok(()) => deleted += 1,
                Err(e) if e.is_no_node() => {} // taken meanwhile
                Err(e) => {
                    failure.get_or_insert_with(|| anyhow::Error::new(e).context(format!("cannot delete {node}")));
                }
            }
        }
        progress.inc(chunk.len() as u64);
    }
    progress.finish_and_clear();
    print_deleted(ctx, deleted)?;
    match failure {
        Some(err) => Err(err.context(format!("purged {deleted} of {total} items"))),
        None => Ok(()),
    }
}

/// Prints how many items were deleted.
pub fn print_deleted(ctx: &Context, deleted: usize) -> anyhow::Result<()> {
    if ctx.json {
        ctx.print_json(&PurgeOutput { deleted })
    } else {
        println!("{deleted}");
        Ok(())
    }
}

/// Asks on the terminal before deleting `total` items of `path`; refuses
/// when stdin is not a terminal.
pub fn confirm(path: &str, total: usize) -> anyhow::Result<bool> {
    if !std::io::stdin().is_terminal() {
        bail!("refusing to purge {path} without --yes: stdin is not a terminal");
    }
    eprint!("delete {total} items from {path}? [y/N] ");
    std::io::stderr().flush()?;
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes"))
}
