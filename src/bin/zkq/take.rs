//! `zkq take`: each record taken printed whole, as `peek` shows items
//! (control characters escaped in the text, so that each stays on its
//! line).

use std::time::Duration;

use clap::Args;
use zk_queue::admin::RawQueue;

use crate::common::{parse_duration, Context};
use crate::locks::LockArgs;
use crate::read::{Counting, ItemOutput};

#[derive(Debug, Args)]
pub struct TakeArgs {
    /// The queue's path.
    pub path: String,
    /// The most items to take.
    #[arg(short = 'n', long = "count", default_value_t = 1)]
    count: usize,
    /// How long to wait for items, e.g. `5s`.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    timeout: Duration,
    #[command(flatten)]
    pub locks: LockArgs,
}

pub fn run(ctx: &Context, args: TakeArgs) -> anyhow::Result<()> {
    crate::node::refuse_lock_directory(ctx, &args.path)?;
    let queue = args.locks.apply(RawQueue::new(&ctx.client, &args.path)?)?;
    let counting = if crate::node::is_recorded_dead_letter_path(ctx, &args.path)? {
        Counting::DeadLetters
    } else {
        Counting::Queue
    };
    let taken = queue.take_timeout(args.count, args.timeout)?;
    if !taken.held.is_empty() {
        eprintln!("zkq: {} items left alone: held by consumers", taken.held.len());
    }
    for bad in &taken.undecodable {
        eprintln!("zkq: skipping corrupt item {}/{}: {}", args.path, bad.name, bad.error);
    }
    // One entry per record, in the shape `peek` shows items in.
    let records: Vec<ItemOutput> = taken
        .items
        .iter()
        .flat_map(|item| {
            item.records.iter().map(|record| {
                let counts = (item.records.len(), item.attempts);
                ItemOutput::taken(&item.name, record, counts, item.death.as_ref(), counting)
            })
        })
        .collect();
    if ctx.json {
        ctx.print_json(&records)?;
    } else {
        for record in &records {
            println!("{}", record.text());
        }
    }
    eprintln!("{} taken", records.len());
    Ok(())
}
