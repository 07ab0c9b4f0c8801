//! Priority backlogs: a priority queue preloaded with a backlog of items of
//! random priorities (1..100) is drained by one consumer; once it has taken
//! a few items, one urgent item (priority 0) is put. The report gives the
//! drain rate and how long the urgent item took from its put to its
//! consumer, and how many backlog items came before it meanwhile.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context};
use parking_lot::Mutex;
use serde::Serialize;
use zk_queue::{BytesSerializer, ConsumeError, QueueBuilder, ZkClient};

use super::cases::Ctx;
use super::ceiling::Ceiling;
use super::report::int;
use super::util;

/// The urgent item's index in its payload.
const URGENT: u64 = u64::MAX;

/// Backlog items the consumer takes before the urgent item is put.
const TAKEN_BEFORE_URGENT: usize = 100;

/// One backlog.
#[derive(Debug, Serialize)]
pub struct PriorityReport {
    /// Items preloaded.
    pub backlog: usize,
    /// `min_items_before_refresh` of the consumer.
    pub refresh: usize,
    /// Backlog items (and the urgent one) consumed per second, from the
    /// consumer's start to its last item.
    pub items_per_s: Option<f64>,
    pub ratio_to_ceiling: Option<f64>,
    /// From the urgent item's put to its consumer, milliseconds.
    pub urgent_ms: Option<f64>,
    /// Backlog items consumed between the urgent item's put and the urgent
    /// item.
    pub urgent_after: Option<usize>,
    /// Listings of the queue by the consumer, per item.
    pub listings_per_item: Option<f64>,
    pub error: Option<String>,
}

impl PriorityReport {
    /// Takes the ratio to the ceiling `best`.
    pub fn rescale(&mut self, best: &Ceiling) {
        self.ratio_to_ceiling = self.items_per_s.map(|rate| rate / best.items_per_s);
    }
}

/// Runs every backlog.
pub fn run(ctx: &Ctx, backlogs: &[usize]) -> Vec<PriorityReport> {
    backlogs
        .iter()
        .map(|&backlog| {
            let bar = util::bar(
                ctx.show_progress,
                backlog as u64,
                &format!("priority backlog {backlog}"),
            );
            let measured = measure(ctx, backlog, &bar);
            bar.finish_and_clear();
            let mut report = PriorityReport {
                backlog,
                refresh: ctx.priority_refresh,
                items_per_s: None,
                ratio_to_ceiling: None,
                urgent_ms: None,
                urgent_after: None,
                listings_per_item: None,
                error: None,
            };
            match measured {
                Ok(m) => {
                    report.items_per_s = Some(m.items_per_s);
                    report.ratio_to_ceiling = Some(m.items_per_s / ctx.ceiling);
                    report.urgent_ms = Some(m.urgent_ms);
                    report.urgent_after = Some(m.urgent_after);
                    report.listings_per_item = Some(m.listings as f64 / (backlog + 1) as f64);
                }
                Err(e) => report.error = Some(format!("{e:#}")),
            }
            report
        })
        .collect()
}

struct Measured {
    items_per_s: f64,
    urgent_ms: f64,
    urgent_after: usize,
    listings: u64,
}

/// What the consumer saw.
#[derive(Default)]
struct Seen {
    taken: AtomicUsize,
    last: Mutex<Option<Instant>>,
    /// When the urgent item came, and how many items had come before it.
    urgent: Mutex<Option<(Instant, usize)>>,
}

fn measure(ctx: &Ctx, backlog: usize, bar: &indicatif::ProgressBar) -> anyhow::Result<Measured> {
    ensure!(
        backlog > TAKEN_BEFORE_URGENT,
        "a backlog must exceed {TAKEN_BEFORE_URGENT} items"
    );
    let path = format!("{}/priority-backlog-{backlog}", ctx.root);
    let producer_client = ZkClient::connect(ctx.connect).context("connecting the producer")?;
    let producer = QueueBuilder::new(&producer_client, &path, BytesSerializer)
        .put_in_background(true)
        .build_priority_queue(ctx.priority_refresh)
        .context("building the producer")?;
    for i in 0..backlog {
        let item = util::payload(util::now_nanos(), i as u64, ctx.size);
        producer.put(item, fastrand::i32(1..100)).context("preloading")?;
    }
    let preload = ctx.budget.deadline("priority preload", backlog as f64);
    ensure!(
        producer.flush_timeout(preload.remaining()),
        "{}: preloading",
        preload.missed()
    );

    let result = drain(ctx, &path, backlog, &producer, bar);
    producer.close();
    producer_client.close();
    let cleanup = util::remove_tree(ctx.admin, &path);
    let measured = result?;
    cleanup.with_context(|| format!("cleaning up {path}"))?;
    Ok(measured)
}

fn drain(
    ctx: &Ctx,
    path: &str,
    backlog: usize,
    producer: &zk_queue::PriorityQueue<Vec<u8>>,
    bar: &indicatif::ProgressBar,
) -> anyhow::Result<Measured> {
    let deadline = ctx.budget.deadline("priority drain", 3.0 * backlog as f64);
    let seen = Arc::new(Seen::default());
    let record = Arc::clone(&seen);
    let consumer_client = ZkClient::connect(ctx.connect).context("connecting the consumer")?;
    let started = Instant::now();
    let consumer = QueueBuilder::new(&consumer_client, path, BytesSerializer)
        .consumer(move |item: Vec<u8>| -> Result<(), ConsumeError> {
            let before = record.taken.fetch_add(1, Ordering::AcqRel);
            let now = Instant::now();
            if item.get(8..16) == Some(&URGENT.to_be_bytes()[..]) {
                *record.urgent.lock() = Some((now, before));
            }
            *record.last.lock() = Some(now);
            Ok(())
        })
        .build_priority_queue(ctx.priority_refresh)
        .context("building the consumer")?;
    let result = (|| -> anyhow::Result<Measured> {
        while seen.taken.load(Ordering::Acquire) < TAKEN_BEFORE_URGENT {
            if Instant::now() >= deadline.at {
                bail!("{}: the consumer took no items", deadline.missed());
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        let put_at = Instant::now();
        let taken_at_put = seen.taken.load(Ordering::Acquire);
        producer
            .put(util::payload(util::now_nanos(), URGENT, ctx.size), 0)
            .context("putting the urgent item")?;
        while seen.taken.load(Ordering::Acquire) < backlog + 1 {
            if Instant::now() >= deadline.at {
                bail!(
                    "{}: {} of {} items consumed",
                    deadline.missed(),
                    seen.taken.load(Ordering::Acquire),
                    backlog + 1
                );
            }
            bar.set_position(seen.taken.load(Ordering::Relaxed) as u64);
            std::thread::sleep(Duration::from_millis(5));
        }
        let Some((urgent_at, before)) = *seen.urgent.lock() else {
            bail!("the urgent item never came");
        };
        let last = seen.last.lock().unwrap_or(urgent_at);
        Ok(Measured {
            items_per_s: (backlog + 1) as f64 / (last - started).as_secs_f64(),
            urgent_ms: (urgent_at - put_at).as_secs_f64() * 1e3,
            urgent_after: before.saturating_sub(taken_at_put),
            listings: consumer_client.stats().get_children,
        })
    })();
    consumer.close();
    consumer_client.close();
    result
}

/// Prints the table (nothing with `--json`).
pub fn print(json: bool, reports: &[PriorityReport]) {
    if json || reports.is_empty() {
        return;
    }
    println!(
        "\npriority backlogs (1 consumer, min_items_before_refresh {}; an urgent item put after {TAKEN_BEFORE_URGENT} were taken)",
        reports[0].refresh
    );
    println!(
        "{:>8} {:>9} {:>9} {:>10} {:>13} {:>13}",
        "backlog", "items/s", "x ceiling", "urgent ms", "items before", "listings/item"
    );
    for r in reports {
        match &r.error {
            Some(e) => println!("{:>8} failed: {e}", r.backlog),
            None => println!(
                "{:>8} {:>9} {:>9.3} {:>10.1} {:>13} {:>13.4}",
                int(r.backlog as f64),
                int(r.items_per_s.unwrap_or(0.0)),
                r.ratio_to_ceiling.unwrap_or(0.0),
                r.urgent_ms.unwrap_or(0.0),
                r.urgent_after.unwrap_or(0),
                r.listings_per_item.unwrap_or(0.0),
            ),
        }
    }
}
