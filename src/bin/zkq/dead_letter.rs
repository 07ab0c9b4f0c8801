//! `zkq dead-letter list | purge | requeue`.

use clap::{Args, Subcommand};
use serde::Serialize;
use zk_queue::admin::DeadLetters;
use zk_queue::inspect::Layout;

use crate::common::Context;
use crate::purge::{purge, PurgeArgs};
use crate::read::{describe, print_items, Counting};

#[derive(Debug, Subcommand)]
pub enum DeadLetterCommand {
    /// Show the items of a dead-letter path, with why each died (the last
    /// error), when, and the queue and node it came from.
    List(ListArgs),
    /// Delete every item of a dead-letter path.
    Purge(PurgeArgs),
    /// Move every item of a dead-letter path back to a queue, keeping its
    /// priority, due time or id, with its attempt count reset.
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
    #[arg(value_name = "DEAD_LETTER_PATH")]
    pub path: String,
    /// The queue to move the items to.
    #[arg(long, value_name = "QUEUE")]
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
            let dead = DeadLetters::new(&ctx.client, &args.path)?;
            let head: Vec<_> = dead.names()?.into_iter().take(args.limit).collect();
            let items = describe(ctx, &args.path, Layout::Curator, &head, Counting::DeadLetters)?;
            print_items(ctx, &items)
        }
        DeadLetterCommand::Purge(args) => {
            let dead = DeadLetters::new(&ctx.client, &args.path)?;
            let total = dead.names()?.len();
            purge(ctx, &args, total, || dead.purge().map(|deleted| (deleted, 0)))
        }
        DeadLetterCommand::Requeue(args) => {
            let moved = DeadLetters::new(&ctx.client, &args.path)?.requeue_to(&args.to)?;
            if ctx.json {
                return ctx.print_json(&RequeueOutput {
                    requeued: moved.requeued,
                    skipped: moved.skipped,
                });
            }
            println!("{}", moved.requeued);
            if moved.skipped > 0 {
                eprintln!("{} skipped", moved.skipped);
            }
            Ok(())
        }
    }
}
