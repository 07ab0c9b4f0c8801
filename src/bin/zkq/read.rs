//! `zkq peek` and `zkq ls`: read-only views of a queue's items.

use std::time::{SystemTime, UNIX_EPOCH};

use clap::Args;
use serde::Serialize;
use zk_queue::inspect::{decode_item, ItemName, Layout, Listing};
use zk_queue::path::join as child;

use crate::common::{json_preview, list, now_ms, preview, Context};
use crate::node::{self, Node};

#[derive(Debug, Args)]
pub struct PeekArgs {
    /// The queue's path.
    pub path: String,
    /// How many items to show.
    #[arg(short = 'n', long = "count", default_value_t = 10)]
    count: usize,
}

#[derive(Debug, Args)]
pub struct LsArgs {
    /// The queue's path.
    pub path: String,
    /// The most names to list.
    #[arg(long, default_value_t = 100)]
    limit: usize,
    /// List the names after this one (the last name of the previous page).
    #[arg(long)]
    after: Option<String>,
}

/// One item as `peek` and `dead-letter list` show it.
#[derive(Serialize)]
pub struct PeekedItem {
    name: String,
    kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    priority: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    due: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<String>,
    /// Bytes of the node's data.
    size: usize,
    /// Records in the node (several for a multi put); absent if corrupt.
    #[serde(skip_serializing_if = "Option::is_none")]
    records: Option<usize>,
    /// A queue item's attempt: which delivery of it the next one is (the
    /// current one while a consumer holds it), as `ItemMeta::attempt`
    /// counts it.
    #[serde(skip_serializing_if = "Option::is_none")]
    attempt: Option<u32>,
    /// A dead letter's deliveries made (the attempt it died after).
    #[serde(skip_serializing_if = "Option::is_none")]
    attempts: Option<u32>,
    /// The first put, epoch milliseconds, if the item records it (a
    /// requeued item does).
    #[serde(skip_serializing_if = "Option::is_none")]
    put_at: Option<i64>,
    /// A dead letter's story: why, when and where it died.
    #[serde(skip_serializing_if = "Option::is_none")]
    death: Option<DeathOutput>,
    /// The first record: a JSON object or array as that JSON value, else
    /// its first characters as text.
    preview: serde_json::Value,
    /// The first record's first characters as text, for the human output.
    #[serde(skip)]
    preview_text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

/// How `describe` counts attempts.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Counting {
    /// A queue's items: the attempt of the next delivery.
    Queue,
    /// Dead letters: the deliveries made.
    DeadLetters,
}

/// Why, when and where a dead letter died.
#[derive(Serialize)]
pub struct DeathOutput {
    /// The consumer's last error.
    reason: String,
    /// Epoch milliseconds.
    died_at: i64,
    /// The queue path it came from.
    source: String,
    /// Its node name there.
    original_name: String,
}

/// Epoch milliseconds of `time`.
fn epoch_ms(time: SystemTime) -> i64 {
    time.duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Reads and describes `items` of a queue (or dead-letter path, as
/// `counting` says) at `path`; vanished items are left out.
pub fn describe(
    ctx: &Context,
    path: &str,
    layout: Layout,
    items: &[ItemName],
    counting: Counting,
) -> anyhow::Result<Vec<PeekedItem>> {
    let paths: Vec<String> = items.iter().map(|i| child(path, &i.name)).collect();
    let mut out = Vec::with_capacity(items.len());
    for chunk in items.iter().zip(paths).collect::<Vec<_>>().chunks(1_000) {
        let chunk_paths: Vec<String> = chunk.iter().map(|(_, p)| p.clone()).collect();
        for ((item, _), read) in chunk.iter().zip(ctx.client.get_data_many(&chunk_paths)?) {
            let data = match read {
                Ok((data, _)) => data,
                Err(e) if e.is_no_node() => continue,
                Err(e) => return Err(e.into()),
            };
            let decoded = decode_item(layout, &data);
            let (records, failed, attempt, first, error) = match &decoded {
                Ok(decoded) => (
                    Some(decoded.records.len()),
                    decoded.attempts,
                    decoded.attempt(),
                    decoded.records.first().map(Vec::as_slice).unwrap_or_default(),
                    decoded.trailer_error.as_ref().map(|e| e.to_string()),
                ),
                Err(e) => (None, 0, 1, data.as_slice(), Some(e.to_string())),
            };
            let (preview_json, preview_text) = (json_preview(first, 40), preview(first, 40));
            let (attempt, attempts) = match counting {
                Counting::Queue => (Some(attempt), None),
                Counting::DeadLetters => (None, Some(failed)),
            };
            let decoded = decoded.ok();
            let put_at = decoded.as_ref().and_then(|d| d.put_at).map(epoch_ms);
            let death = decoded.and_then(|d| d.death).map(|death| DeathOutput {
                reason: death.reason,
                died_at: epoch_ms(death.died_at),
                source: death.source,
                original_name: death.original_name,
            });
            out.push(PeekedItem {
                name: item.name.clone(),
                kind: item.kind.to_string(),
                priority: item.priority,
                due: item.due,
                id: item.id.clone(),
                size: data.len(),
                records,
                attempt,
                attempts,
                put_at,
                death,
                preview: preview_json,
                preview_text,
                error,
            });
        }
    }
    Ok(out)
}

/// Prints described items, as JSON or one line each.
pub fn print_described(ctx: &Context, items: &[PeekedItem]) -> anyhow::Result<()> {
    if ctx.json {
        return ctx.print_json(&items);
    }
    for item in items {
        let mut line = format!("{}\t{}", item.name, item.kind);
        if let Some(p) = item.priority {
            line += &format!("\tpriority={p}");
        }
        if let Some(due) = item.due {
            let state = if due <= now_ms() { "due" } else { "not-due" };
            line += &format!("\tdue={due}({state})");
        }
        if let Some(id) = &item.id {
            line += &format!("\tid={id}");
        }
        line += &format!("\tsize={}", item.size);
        if let Some(attempt) = item.attempt {
            line += &format!("\tattempt={attempt}");
        }
        if let Some(attempts) = item.attempts {
            line += &format!("\tattempts={attempts}");
        }
        if let Some(records) = item.records.filter(|r| *r != 1) {
            line += &format!("\trecords={records}");
        }
        if let Some(put_at) = item.put_at {
            line += &format!("\tput_at={put_at}");
        }
        if let Some(death) = &item.death {
            line += &format!(
                "\tdied_at={}\tfrom={}/{}\treason={:?}",
                death.died_at, death.source, death.original_name, death.reason
            );
        }
        if let Some(error) = &item.error {
            line += &format!("\tcorrupt: {error}");
        }
        line += &format!("\t{}", item.preview_text);
        println!("{line}");
    }
    Ok(())
}

pub fn peek(ctx: &Context, args: PeekArgs) -> anyhow::Result<()> {
    let listing = match node::classify(ctx, &args.path)? {
        Node::Queue(listing) => listing,
        Node::Sharded(shards) => return sharded_peek(ctx, &args.path, args.count, &shards),
        other => anyhow::bail!("{}", node::not_a_queue(&args.path, &other)),
    };
    let head: Vec<ItemName> = listing.items.into_iter().take(args.count).collect();
    let items = describe(ctx, &args.path, listing.layout, &head, Counting::Queue)?;
    print_described(ctx, &items)
}

#[derive(Serialize)]
struct LsOutput<'a> {
    items: Vec<&'a str>,
    /// The value for `--after` to list the next page; absent on the last page.
    next: Option<&'a str>,
}

pub fn ls(ctx: &Context, args: LsArgs) -> anyhow::Result<()> {
    let listing = node::queue(ctx, &args.path)?;
    let mut names: Vec<String> = listing.items.iter().map(|i| i.name.clone()).collect();
    // The --after name may be gone (taken): list it too to find its place.
    if let Some(after) = &args.after {
        if !names.contains(after) {
            names.push(after.clone());
        }
    }
    let listing = Listing::of(names, Some(listing.layout));
    let start = match &args.after {
        Some(after) => listing
            .items
            .iter()
            .position(|i| &i.name == after)
            .map_or(listing.items.len(), |p| p + 1),
        None => 0,
    };
    let page: Vec<&str> = listing.items[start..]
        .iter()
        .take(args.limit)
        .map(|i| i.name.as_str())
        .collect();
    let more = start + page.len() < listing.items.len();
    let next = if more { page.last().copied() } else { None };
    if ctx.json {
        ctx.print_json(&LsOutput { items: page, next })
    } else {
        for name in &page {
            println!("{name}");
        }
        if let Some(next) = next {
            eprintln!("more: --after {next}");
        }
        Ok(())
    }
}

#[derive(Serialize)]
struct ShardPeek {
    shard: String,
    items: Vec<PeekedItem>,
}

/// `zkq peek` of a sharded queue: the first `count` items of each shard
/// (order holds within a shard only).
fn sharded_peek(ctx: &Context, path: &str, count: usize, shards: &[String]) -> anyhow::Result<()> {
    let mut each = Vec::with_capacity(shards.len());
    for shard in shards {
        let shard_path = child(path, shard);
        let listing = list(ctx, &shard_path)?;
        let head: Vec<_> = listing.items.into_iter().take(count).collect();
        each.push(ShardPeek {
            shard: shard.clone(),
            items: describe(ctx, &shard_path, listing.layout, &head, Counting::Queue)?,
        });
    }
    if ctx.json {
        return ctx.print_json(&each);
    }
    for shard in &each {
        println!("shard {}:", shard.shard);
        print_described(ctx, &shard.items)?;
    }
    Ok(())
}
