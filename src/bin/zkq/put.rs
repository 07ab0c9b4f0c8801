//! `zkq put`, which refuses what the queue's kind would misorder.
//!
//! zk-queue records no kind on a queue node (only its consumers' lock
//! path), so the kind is learned from the names of the items there
//! ([`Listing`]: the layout of most items, and for a Curator queue the
//! most common non-plain kind). A put whose items the queue's consumers
//! would take out of order is refused unless `--force`:
//!
//! - a put without `--priority` into a priority queue, or with
//!   `--priority` into a queue of another kind (a FIFO queue sorts the
//!   priority names by their text);
//! - `--delay-ms`/`--at` or `--id` into a queue of another kind;
//! - `--classic` into a Curator queue, or Curator items into a classic one
//!   (their consumers skip the other layout's names).
//!
//! A plain put into a delay or id queue is allowed: their consumers take a
//! plain name as due now, or in sequence order, as they take the items
//! they requeue. An empty or missing queue cannot be judged: any put goes.
//!
//! A put into what is not a queue is refused too, whatever the items:
//! a lock directory (ephemeral locks named like items, or a node a sibling
//! queue's consumers recorded as their lock path), a consumer registry
//! (`<queue>.consumers`) and a sharded queue's parent (name a shard),
//! always; a node with children of which none is an item (what `ls` calls
//! not a queue) unless `--force`; a node a sibling queue's consumers
//! recorded as their dead-letter path unless `--force` (dead letters come
//! from the consumers, with the record of why; work goes into the queue,
//! and `zkq dead-letter requeue` sends dead letters back). A path a sibling
//! queue's consumers recorded is judged so even before it exists.

use std::io::BufRead;
use std::time::Duration;

use anyhow::{bail, Context as _};
use clap::Args;
use serde::Serialize;
use zk_queue::inspect::{Kind, Layout, Listing};
use zk_queue::{BytesSerializer, DeliverAt, Queue, QueueBuilder, SimpleQueue};

use crate::common::Context;
use crate::node::{self, Node, Role};

#[derive(Debug, Args)]
pub struct PutArgs {
    /// The queue's path.
    pub path: String,
    /// Messages; without any, one message per line of stdin.
    messages: Vec<String>,
    /// Put into a priority queue with this priority (lower first).
    #[arg(long, allow_hyphen_values = true, conflicts_with_all = ["delay_ms", "at", "id", "classic"])]
    priority: Option<i32>,
    /// Put into a delay queue, due this many milliseconds from now.
    #[arg(long, conflicts_with_all = ["at", "id", "classic"])]
    delay_ms: Option<u64>,
    /// Put into a delay queue, due at this epoch time in milliseconds.
    #[arg(long, conflicts_with_all = ["id", "classic"])]
    at: Option<i64>,
    /// Put into an id queue under this id.
    #[arg(long, conflicts_with = "classic")]
    id: Option<String>,
    /// Put all messages in one node (consumers get them one by one).
    #[arg(long, conflicts_with = "classic")]
    multi: bool,
    /// Write classic `qn-` items of raw bytes instead of Curator items.
    #[arg(long)]
    classic: bool,
    /// Put even what the queue's kind would misorder (a put without
    /// `--priority` into a priority queue, with `--priority` into a FIFO
    /// queue, ...), into a queue's recorded dead-letter path, or into a node
    /// whose children are not queue items. Never into a lock directory, a
    /// consumer registry or a sharded queue's parent.
    #[arg(long)]
    force: bool,
}

impl PutArgs {
    /// The layout and kind of the items this put writes.
    fn writes(&self) -> (Layout, Kind) {
        if self.classic {
            (Layout::Classic, Kind::Plain)
        } else if self.priority.is_some() {
            (Layout::Curator, Kind::Priority)
        } else if self.delay_ms.is_some() || self.at.is_some() {
            (Layout::Curator, Kind::Delay)
        } else if self.id.is_some() {
            (Layout::Curator, Kind::Id)
        } else {
            (Layout::Curator, Kind::Plain)
        }
    }
}

/// Why a put writing `writes` into a queue listed as `listing` would be
/// misordered, if it would.
fn misorder(listing: &Listing, writes: (Layout, Kind)) -> Option<String> {
    if listing.items.is_empty() {
        return None;
    }
    let (layout, kind) = writes;
    if layout != listing.layout {
        return Some(format!(
            "it holds {} items and this put writes {layout} ones, which its consumers skip",
            listing.layout
        ));
    }
    let fits = kind == listing.kind || (kind == Kind::Plain && matches!(listing.kind, Kind::Delay | Kind::Id));
    if fits {
        return None;
    }
    let queue = match listing.kind {
        Kind::Plain => "a FIFO queue (plain items)",
        Kind::Priority => "a priority queue",
        Kind::Delay => "a delay queue",
        Kind::Id => "an id queue",
    };
    let put = match kind {
        Kind::Plain => "a plain item (no --priority)",
        Kind::Priority => "a --priority item",
        Kind::Delay => "a --delay-ms/--at item",
        Kind::Id => "an --id item",
    };
    Some(format!("it is {queue}, whose consumers would take {put} out of order"))
}

/// Refuses a put into a node that is not a queue, or that this put's items
/// do not fit (see the module's documentation); `--force` overrides only
/// what a queue's kind would misorder, a recorded dead-letter path, and a
/// node with other children only.
fn judge(ctx: &Context, args: &PutArgs) -> anyhow::Result<()> {
    let path = args.path.as_str();
    if let Some(queue) = node::registry_of(ctx, path)? {
        bail!("refusing to put into {path}: it is the consumer registry of the queue {queue}, not a queue");
    }
    let listing = match node::classify(ctx, path) {
        Ok(Node::Queue(listing)) => listing,
        Ok(Node::NotAQueue(_)) if args.force => return Ok(()),
        Ok(other @ Node::NotAQueue(_)) => {
            bail!(
                "refusing to put into {path}: {} (--force to put anyway)",
                node::not_a_queue(path, &other)
            )
        }
        Ok(other) => bail!("refusing to put into {path}: {}", node::not_a_queue(path, &other)),
        // Nothing there yet: the put makes a queue, unless a sibling
        // queue's consumers recorded the path as theirs.
        Err(e)
            if e.downcast_ref::<zk_queue::Error>()
                .is_some_and(zk_queue::Error::is_no_node) =>
        {
            Listing::of(Vec::<String>::new(), None)
        }
        Err(e) => return Err(e),
    };
    match node::recorded_by(ctx, path)? {
        Some((queue, Role::Locks)) => {
            bail!(
                "refusing to put into {path}: {}",
                node::recorded_lock_directory(path, &queue)
            )
        }
        Some((queue, Role::DeadLetters)) if !args.force => {
            bail!("refusing to put into {path}: it is the dead-letter path of the queue {queue}, whose consumers move items there with a record of why (put into {queue}, or --force to put anyway)")
        }
        _ => {}
    }
    if !args.force {
        if let Some(why) = misorder(&listing, args.writes()) {
            bail!("refusing to put into {path}: {why} (--force to put anyway)");
        }
    }
    Ok(())
}

#[derive(Serialize)]
struct PutOutput {
    put: usize,
}

pub fn run(ctx: &Context, mut args: PutArgs) -> anyhow::Result<()> {
    let messages: Vec<Vec<u8>> = if args.messages.is_empty() {
        std::io::stdin()
            .lock()
            .lines()
            .map(|line| line.map(String::into_bytes))
            .collect::<Result<_, _>>()
            .context("cannot read stdin")?
    } else {
        std::mem::take(&mut args.messages)
            .into_iter()
            .map(String::into_bytes)
            .collect()
    };
    let count = messages.len();
    if count > 0 {
        judge(ctx, &args)?;
        if args.classic {
            let queue = SimpleQueue::new(&ctx.client, &args.path)?;
            for message in &messages {
                queue.offer(message)?;
            }
        } else {
            put_curator(ctx, &args.path, &args, messages)?;
        }
    }
    if ctx.json {
        ctx.print_json(&PutOutput { put: count })
    } else {
        println!("{count}");
        Ok(())
    }
}

fn put_curator(ctx: &Context, path: &str, args: &PutArgs, messages: Vec<Vec<u8>>) -> anyhow::Result<()> {
    let builder = || QueueBuilder::new(&ctx.client, path, BytesSerializer).put_in_background(false);
    // One node of every message, or one node each; a node of one message is
    // stored exactly as `put` stores it.
    let nodes: Vec<Vec<Vec<u8>>> = if args.multi {
        vec![messages]
    } else {
        messages.into_iter().map(|m| vec![m]).collect()
    };
    let due = match (args.delay_ms, args.at) {
        (Some(delay), _) => Some(DeliverAt::after(Duration::from_millis(delay))),
        (None, Some(at)) => match DeliverAt::from_epoch_millis(at) {
            Ok(at) => Some(at),
            Err(_) => bail!("invalid due time {at}: must be a positive epoch time in milliseconds"),
        },
        (None, None) => None,
    };
    if let Some(p) = args.priority {
        let queue = builder().build_priority_queue(1)?;
        put_all(&queue, nodes, |node| queue.put_multi(node, p))
    } else if let Some(at) = due {
        let queue = builder().build_delay_queue()?;
        put_all(&queue, nodes, |node| queue.put_multi(node, at))
    } else if let Some(id) = &args.id {
        let queue = builder().build_id_queue()?;
        put_all(&queue, nodes, |node| queue.put_multi(node, id))
    } else {
        let queue = builder().build_queue()?;
        put_all(&queue, nodes, |node| queue.put_multi(node))
    }
}

/// Puts each node's messages with `put`, then closes the queue.
fn put_all<K>(
    queue: &Queue<Vec<u8>, K>,
    nodes: Vec<Vec<Vec<u8>>>,
    put: impl Fn(Vec<Vec<u8>>) -> zk_queue::Result<()>,
) -> anyhow::Result<()> {
    let result = nodes.into_iter().try_for_each(put);
    queue.close();
    Ok(result?)
}
