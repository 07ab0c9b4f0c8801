//! `zkq take`.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use clap::Args;
use serde::Serialize;
use zk_queue::inspect::{decode_item, Kind};

use zk_queue::path::join as child;

use crate::common::{now_ms, parse_duration, Context, Listing};

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
}

#[derive(Serialize)]
struct Taken {
    name: String,
    data: String,
    bytes: usize,
}

pub fn run(ctx: &Context, args: TakeArgs) -> anyhow::Result<()> {
    let deadline = Instant::now() + args.timeout;
    let mut taken: Vec<Taken> = Vec::new();
    let mut corrupt = HashSet::new();
    'outer: while taken.len() < args.count {
        let listing = Listing::read(ctx, &args.path, None)?;
        let now = now_ms();
        let mut progressed = false;
        for item in &listing.items {
            if taken.len() >= args.count {
                break 'outer;
            }
            if listing.kind == Kind::Delay && item.due.is_some_and(|due| due > now) {
                // Not due yet; later names may be due (ordered by due time, so not).
                break;
            }
            let path = child(&args.path, &item.name);
            let (data, stat) = match ctx.client.get_data(&path) {
                Ok(read) => read,
                Err(e) if e.is_no_node() => continue,
                Err(e) => return Err(e.into()),
            };
            let decoded = match decode_item(listing.layout, &data) {
                Ok(decoded) => decoded,
                Err(e) => {
                    if corrupt.insert(item.name.clone()) {
                        eprintln!("zkq: skipping corrupt item {path}: {e}");
                    }
                    continue;
                }
            };
            match ctx.client.delete(&path, Some(stat.version)) {
                Ok(()) => {}
                Err(e) if e.is_no_node() => continue, // another consumer took it
                Err(e) => return Err(e.into()),
            }
            progressed = true;
            for record in decoded.records {
                taken.push(Taken {
                    name: item.name.clone(),
                    data: String::from_utf8_lossy(&record).into_owned(),
                    bytes: record.len(),
                });
            }
        }
        if !progressed {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(100).min(deadline - now));
        }
    }
    if ctx.json {
        ctx.print_json(&taken)?;
    } else {
        for item in &taken {
            println!("{}", item.data);
        }
    }
    eprintln!("{} taken", taken.len());
    Ok(())
}
