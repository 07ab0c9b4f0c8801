//! `zkq dead-letter list | purge | requeue`.

use clap::{Args, Subcommand};
use serde::Serialize;
use zk_queue::inspect::{decode_item, Layout};
use zk_queue::{CreateMode, Op};

use crate::common::{child, frame_len, Context, Listing};
use crate::purge::{purge, PurgeArgs};
use crate::read::{describe, print_described};

#[derive(Debug, Subcommand)]
pub enum DeadLetterCommand {
    /// Show the items of a dead-letter path.
    List(ListArgs),
    /// Delete every item of a dead-letter path.
    Purge(PurgeArgs),
    /// Move every item of a dead-letter path back to a queue, as plain items
    /// with their attempt count reset.
    Requeue(RequeueArgs),
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// The dead-letter path.
    pub path: String,
    /// The most items to show.
    #[arg(long, default_value_t = 100)]
    limit: usize,
}

#[derive(Debug, Args)]
pub struct RequeueArgs {
    /// The dead-letter path.
    pub path: String,
    /// The queue to move the items to.
    #[arg(long)]
    pub to: String,
}

#[derive(Serialize)]
struct RequeueOutput {
    requeued: usize,
    skipped: usize,
}

impl DeadLetterCommand {
    /// The node paths given.
    pub fn paths(&self) -> Vec<&str> {
        match self {
            DeadLetterCommand::List(args) => vec![args.path.as_str()],
            DeadLetterCommand::Purge(args) => vec![args.path.as_str()],
            DeadLetterCommand::Requeue(args) => vec![args.path.as_str(), args.to.as_str()],
        }
    }
}

pub fn run(ctx: &Context, command: DeadLetterCommand) -> anyhow::Result<()> {
    match command {
        DeadLetterCommand::List(args) => {
            let listing = Listing::read(ctx, &args.path, Some(Layout::Curator))?;
            let head: Vec<_> = listing.items.into_iter().take(args.limit).collect();
            let items = describe(ctx, &args.path, Layout::Curator, &head)?;
            print_described(ctx, &items)
        }
        DeadLetterCommand::Purge(args) => purge(ctx, &args.path, args.yes, Some(Layout::Curator)),
        DeadLetterCommand::Requeue(args) => requeue(ctx, &args),
    }
}

/// Moves each item with one multi: create `<to>/queue-` (sequential) with the
/// item's frame and the queue node's ACL, and delete the dead letter at the version read.
fn requeue(ctx: &Context, args: &RequeueArgs) -> anyhow::Result<()> {
    let listing = Listing::read(ctx, &args.path, Some(Layout::Curator))?;
    ctx.client.ensure_path(&args.to)?;
    // Requeued items get the queue node's ACL, as the queue's own puts do.
    let (acl, _) = ctx.client.get_acl(&args.to)?;
    let target = child(&args.to, "queue-");
    let (mut requeued, mut skipped) = (0, 0);
    for item in &listing.items {
        let path = child(&args.path, &item.name);
        let (data, stat) = match ctx.client.get_data(&path) {
            Ok(read) => read,
            Err(e) if e.is_no_node() => continue,
            Err(e) => return Err(e.into()),
        };
        let frame = match decode_item(Layout::Curator, &data) {
            // Without the trailer: the attempt count starts again.
            Ok(decoded) => data[..frame_len(&decoded)].to_vec(),
            Err(e) => {
                eprintln!("zkq: skipping corrupt dead letter {path}: {e}");
                skipped += 1;
                continue;
            }
        };
        let ops = [
            Op::create_with_acl(target.clone(), frame, CreateMode::PersistentSequential, acl.clone()),
            Op::delete(path.clone(), Some(stat.version)),
        ];
        match ctx.client.multi(&ops) {
            Ok(_) => requeued += 1,
            Err(zk_queue::Error::MultiFailed { index: 1, source })
                if source.is_no_node() || matches!(*source, zk_queue::Error::BadVersion { .. }) =>
            {
                // Requeued or changed by someone else meanwhile.
                skipped += 1;
            }
            Err(e) => return Err(anyhow::Error::new(e).context(format!("cannot requeue {path}"))),
        }
    }
    if ctx.json {
        ctx.print_json(&RequeueOutput { requeued, skipped })
    } else {
        println!("{requeued}");
        if skipped > 0 {
            eprintln!("{skipped} skipped");
        }
        Ok(())
    }
}
