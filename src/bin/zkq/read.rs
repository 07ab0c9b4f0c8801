//! `zkq peek` and `zkq ls`: read-only views of a queue's items.

use std::time::{SystemTime, UNIX_EPOCH};

use clap::Args;
use serde::Serialize;
use zk_queue::inspect::{decode_item, Death, ItemName, Layout, Listing};
use zk_queue::path::join as child;

use crate::common::{escaped, iso_utc, json_data, list, now_ms, preview, relative, time_text, Context};
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

/// One item as every subcommand that prints items shows it (`peek`,
/// `take`, `dead-letter list`): the same fields under `--json` and in the
/// text, a record that is a JSON object or array as that JSON value.
#[derive(Serialize)]
pub struct ItemOutput {
    name: String,
    kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    priority: Option<i32>,
    /// Epoch milliseconds (delay queues).
    #[serde(skip_serializing_if = "Option::is_none")]
    due: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<String>,
    /// Bytes of the record shown in `data` (of the node's data, if it does
    /// not decode).
    size: usize,
    /// Records in the node (several for a multi put); absent if corrupt.
    #[serde(skip_serializing_if = "Option::is_none")]
    records: Option<usize>,
    /// An item in a queue: which delivery of it the next one is (the
    /// current one while a consumer holds it, the one `take` made of it),
    /// as `ItemMeta::attempt` counts it.
    #[serde(skip_serializing_if = "Option::is_none")]
    attempt: Option<u32>,
    /// A dead letter: the deliveries made of it, all failed (it will not be
    /// delivered again unless requeued, which counts from 1 again).
    #[serde(skip_serializing_if = "Option::is_none")]
    attempts: Option<u32>,
    /// The first put, epoch milliseconds, if the item records it (a
    /// requeued item does).
    #[serde(skip_serializing_if = "Option::is_none")]
    put_at: Option<i64>,
    /// A dead letter's story: why, when and where it died.
    #[serde(skip_serializing_if = "Option::is_none")]
    death: Option<DeathOutput>,
    /// The record (the first, for a node shown whole): a JSON object or
    /// array as that JSON value, else its text.
    data: serde_json::Value,
    /// Whether `data` is cut (a preview).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    truncated: bool,
    /// The record as one line of text, for the text output.
    #[serde(skip)]
    text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

/// The characters of a record a preview shows.
const PREVIEW_CHARS: usize = 40;

impl ItemOutput {
    /// An item `take` took: one of its `records`, in full; `failed` is the
    /// failed deliveries it recorded, so this delivery is the next, unless
    /// it is a dead letter (`death`, or taken from a recorded dead-letter
    /// path: `counting`), which counts the deliveries it had.
    pub fn taken(
        name: &ItemName,
        record: &[u8],
        (records, failed): (usize, u32),
        death: Option<&Death>,
        counting: Counting,
    ) -> ItemOutput {
        let (data, truncated) = json_data(record, None);
        let dead = death.is_some() || counting == Counting::DeadLetters;
        ItemOutput {
            records: Some(records),
            attempt: (!dead).then(|| failed.saturating_add(1)),
            attempts: dead.then_some(failed),
            death: death.map(DeathOutput::of),
            data,
            truncated,
            text: escaped(record),
            ..ItemOutput::named(name, record.len())
        }
    }

    /// The fields of an item named `name` whose shown record is `size`
    /// bytes, the rest empty.
    fn named(name: &ItemName, size: usize) -> ItemOutput {
        ItemOutput {
            name: name.name.clone(),
            kind: name.kind.to_string(),
            priority: name.priority,
            due: name.due,
            id: name.id.clone(),
            size,
            records: None,
            attempt: None,
            attempts: None,
            put_at: None,
            death: None,
            data: serde_json::Value::Null,
            truncated: false,
            text: String::new(),
            error: None,
        }
    }

    /// The record as text on one line.
    pub fn text(&self) -> &str {
        &self.text
    }
}

/// How `describe` counts attempts of items without a death record.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Counting {
    /// A queue's items: the attempt of the next delivery (a dead letter,
    /// recording its death, counts as one anyway).
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

impl DeathOutput {
    /// What `death` records.
    fn of(death: &Death) -> DeathOutput {
        DeathOutput {
            reason: death.reason.clone(),
            died_at: epoch_ms(death.died_at),
            source: death.source.clone(),
            original_name: death.original_name.clone(),
        }
    }
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
) -> anyhow::Result<Vec<ItemOutput>> {
    let mut out = Vec::with_capacity(items.len());
    for chunk in items.chunks(1_000) {
        let paths: Vec<String> = chunk.iter().map(|i| child(path, &i.name)).collect();
        for (item, read) in chunk.iter().zip(ctx.client.get_data_many(&paths)?) {
            match read {
                Ok((data, _)) => out.push(described(item, layout, &data, counting)),
                Err(e) if e.is_no_node() => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
    Ok(out)
}

/// The item `item` of `layout` whose node holds `data`, its first record
/// previewed.
fn described(item: &ItemName, layout: Layout, data: &[u8], counting: Counting) -> ItemOutput {
    let decoded = match decode_item(layout, data) {
        Ok(decoded) => decoded,
        Err(e) => {
            let (data_json, truncated) = json_data(data, Some(PREVIEW_CHARS));
            return ItemOutput {
                attempt: (counting == Counting::Queue).then_some(1),
                attempts: (counting == Counting::DeadLetters).then_some(0),
                data: data_json,
                truncated,
                text: preview(data, PREVIEW_CHARS),
                error: Some(e.to_string()),
                ..ItemOutput::named(item, data.len())
            };
        }
    };
    let first = decoded.records.first().map(Vec::as_slice).unwrap_or_default();
    let (data_json, truncated) = json_data(first, Some(PREVIEW_CHARS));
    let (size, text) = (first.len(), preview(first, PREVIEW_CHARS));
    // A dead letter counts the deliveries it had, wherever it is read: the
    // count it died with, not the number of a delivery that will not come.
    let dead = counting == Counting::DeadLetters || decoded.death.is_some();
    let death = decoded.death.as_ref().map(DeathOutput::of);
    ItemOutput {
        records: Some(decoded.records.len()),
        attempt: (!dead).then(|| decoded.attempt()),
        attempts: dead.then_some(decoded.attempts),
        put_at: decoded.put_at.map(epoch_ms),
        death,
        data: data_json,
        truncated,
        text,
        error: decoded.trailer_error.as_ref().map(ToString::to_string),
        ..ItemOutput::named(item, size)
    }
}

/// Prints items, as JSON or one line each.
pub fn print_items(ctx: &Context, items: &[ItemOutput]) -> anyhow::Result<()> {
    if ctx.json {
        return ctx.print_json(&items);
    }
    let now = now_ms();
    for item in items {
        println!("{}", item_line(item, now));
    }
    Ok(())
}

/// One item as a line of text, its times also in ISO-8601 UTC and relative
/// to `now`.
pub fn item_line(item: &ItemOutput, now: i64) -> String {
    let mut line = format!("{}\t{}", item.name, item.kind);
    if let Some(p) = item.priority {
        line += &format!("\tpriority={p}");
    }
    if let Some(due) = item.due {
        let state = if due <= now { "due" } else { "not-due" };
        line += &format!("\tdue={due}({}, {}, {state})", iso_utc(due), relative(due, now));
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
        line += &format!("\tput_at={}", time_text(put_at, now));
    }
    if let Some(death) = &item.death {
        line += &format!(
            "\tdied_at={}\tfrom={}/{}\treason={:?}",
            time_text(death.died_at, now),
            death.source,
            death.original_name,
            death.reason
        );
    }
    if let Some(error) = &item.error {
        line += &format!("\tcorrupt: {error}");
    }
    line += &format!("\t{}", item.text);
    line
}

pub fn peek(ctx: &Context, args: PeekArgs) -> anyhow::Result<()> {
    let listing = match node::classify(ctx, &args.path)? {
        Node::Queue(listing) => listing,
        Node::Sharded(shards) => return sharded_peek(ctx, &args.path, args.count, &shards),
        other => anyhow::bail!("{}", node::not_a_queue(&args.path, &other)),
    };
    let head: Vec<ItemName> = listing.items.into_iter().take(args.count).collect();
    // A queue's recorded dead-letter path shows its items as `dead-letter
    // list` does.
    let counting = if node::is_recorded_dead_letter_path(ctx, &args.path)? {
        Counting::DeadLetters
    } else {
        Counting::Queue
    };
    let items = describe(ctx, &args.path, listing.layout, &head, counting)?;
    print_items(ctx, &items)
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
    items: Vec<ItemOutput>,
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
        print_items(ctx, &shard.items)?;
    }
    Ok(())
}
