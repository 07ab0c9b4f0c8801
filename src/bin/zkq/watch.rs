//! `zkq watch`: follow a queue's items as they come and go, or its depth and
//! rates (`--rates`).

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use clap::Args;
use serde::Serialize;

use zk_queue::inspect::Listing;

use crate::common::{parse_duration, Context};

/// Longest wait on a watch before listing again anyway (a watch can be lost
/// with a session).
const RELIST: Duration = Duration::from_secs(1);

#[derive(Debug, Args)]
pub struct WatchArgs {
    /// The queue's path.
    pub path: String,
    /// Stop after this long, e.g. `30s` (default: run until interrupted).
    #[arg(long = "for", value_parser = parse_duration)]
    duration: Option<Duration>,
    /// Stop after this many changes (or, with `--rates`, reports).
    #[arg(long)]
    changes: Option<usize>,
    /// Print the depth and the rates items come and go at, once per
    /// `--interval`, instead of every item.
    #[arg(long)]
    rates: bool,
    /// How often `--rates` reports, e.g. `5s`.
    #[arg(long, value_parser = parse_duration, default_value = "1s")]
    interval: Duration,
}

/// One `--rates` report.
#[derive(Serialize)]
struct Rates {
    items: usize,
    added_per_s: f64,
    removed_per_s: f64,
}

/// One change of a queue's items (or, first, its initial size).
#[derive(Serialize)]
struct Change<'a> {
    items: usize,
    added: Vec<&'a str>,
    removed: Vec<&'a str>,
}

pub fn run(ctx: &Context, args: WatchArgs) -> anyhow::Result<()> {
    let deadline = args.duration.map(|d| Instant::now() + d);
    let mut seen: Option<BTreeSet<String>> = None;
    let mut changes = 0;
    let (mut added_since, mut removed_since) = (0usize, 0usize);
    let mut next_report = Instant::now() + args.interval;
    loop {
        let (names, _, watch) = ctx.client.get_children_watch(&args.path)?;
        let items: BTreeSet<String> = Listing::of(names, None).items.into_iter().map(|i| i.name).collect();
        if args.rates {
            if let Some(previous) = &seen {
                added_since += items.difference(previous).count();
                removed_since += previous.difference(&items).count();
            }
            let now = Instant::now();
            if now >= next_report {
                let seconds = (args.interval + (now - next_report)).as_secs_f64();
                let report = Rates {
                    items: items.len(),
                    added_per_s: added_since as f64 / seconds,
                    removed_per_s: removed_since as f64 / seconds,
                };
                if ctx.json {
                    ctx.print_json(&report)?;
                } else {
                    println!(
                        "items {:>8}   in {:>9.1}/s   out {:>9.1}/s",
                        report.items, report.added_per_s, report.removed_per_s
                    );
                }
                (added_since, removed_since) = (0, 0);
                next_report = now + args.interval;
                changes += 1;
            }
        }
        match &seen {
            _ if args.rates => {}
            None => {
                if ctx.json {
                    ctx.print_json(&Change {
                        items: items.len(),
                        added: Vec::new(),
                        removed: Vec::new(),
                    })?;
                } else {
                    println!("items: {}", items.len());
                }
            }
            Some(previous) if *previous != items => {
                let added: Vec<&str> = items.difference(previous).map(String::as_str).collect();
                let removed: Vec<&str> = previous.difference(&items).map(String::as_str).collect();
                if ctx.json {
                    ctx.print_json(&Change {
                        items: items.len(),
                        added,
                        removed,
                    })?;
                } else {
                    for name in added {
                        println!("+ {name}");
                    }
                    for name in removed {
                        println!("- {name}");
                    }
                }
                changes += 1;
            }
            Some(_) => {}
        }
        seen = Some(items);
        if args.changes.is_some_and(|max| changes >= max) {
            return Ok(());
        }
        let mut wait = match deadline {
            Some(deadline) => match deadline.checked_duration_since(Instant::now()) {
                Some(left) if !left.is_zero() => left.min(RELIST),
                _ => return Ok(()),
            },
            None => RELIST,
        };
        if args.rates {
            wait = wait.min(next_report.saturating_duration_since(Instant::now()));
        }
        watch.wait_timeout(wait);
    }
}
