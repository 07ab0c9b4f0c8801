//! `zkq watch`: follow a queue's items as they come and go.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use clap::Args;
use serde::Serialize;

use crate::common::{parse_duration, Context, Listing};

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
    /// Stop after this many changes.
    #[arg(long)]
    changes: Option<usize>,
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
    loop {
        let (names, _, watch) = ctx.client.get_children_watch(&args.path)?;
        let items: BTreeSet<String> = Listing::of(names, None).items.into_iter().map(|i| i.name).collect();
        match &seen {
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
        let wait = match deadline {
            Some(deadline) => match deadline.checked_duration_since(Instant::now()) {
                Some(left) if !left.is_zero() => left.min(RELIST),
                _ => return Ok(()),
            },
            None => RELIST,
        };
        watch.wait_timeout(wait);
    }
}
