//! `zkq take`.

use std::time::Duration;

use clap::Args;
use serde::Serialize;
use zk_queue::admin::RawQueue;

use crate::common::{parse_duration, Context};
use crate::locks::LockArgs;

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

#[derive(Serialize)]
struct Taken {
    name: String,
    data: String,
    bytes: usize,
}

pub fn run(ctx: &Context, args: TakeArgs) -> anyhow::Result<()> {
    crate::node::refuse_lock_directory(ctx, &args.path)?;
    let queue = args.locks.apply(RawQueue::new(&ctx.client, &args.path)?)?;
    let taken = queue.take_timeout(args.count, args.timeout)?;
    if !taken.held.is_empty() {
        eprintln!("zkq: {} items left alone: held by consumers", taken.held.len());
    }
    for bad in &taken.undecodable {
        eprintln!("zkq: skipping corrupt item {}/{}: {}", args.path, bad.name, bad.error);
    }
    let records: Vec<Taken> = taken
        .items
        .iter()
        .flat_map(|item| {
            item.records.iter().map(|record| Taken {
                name: item.name.name.clone(),
                data: String::from_utf8_lossy(record).into_owned(),
                bytes: record.len(),
            })
        })
        .collect();
    if ctx.json {
        ctx.print_json(&records)?;
    } else {
        for record in &records {
            println!("{}", record.data);
        }
    }
    eprintln!("{} taken", records.len());
    Ok(())
}
