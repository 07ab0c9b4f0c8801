//! Latency below saturation: an open-loop producer puts items at a fixed
//! rate, paced by the clock and not by consumption, and one consumer (plain,
//! then lock-safe) takes them; the report gives the put-to-consume latency
//! percentiles at each rate.
//!
//! Each item's put time is the moment its schedule says it is due, not when
//! the producer got round to it, so a producer that falls behind shows as
//! latency rather than as a slower schedule.

use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use serde::Serialize;
use zk_queue::{BytesSerializer, ConsumeError, QueueBuilder, ZkClient};

use super::cases::Ctx;
use super::ceiling;
use super::java::Peer;
use super::util::{self, percentile_ms, Collector};

/// A rate of `--latency-rates`: items per second, or a percentage of the
/// best ceiling of the run (measured before and after the cases).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Rate {
    PerSecond(f64),
    OfCeiling(f64),
}

impl FromStr for Rate {
    type Err = String;

    fn from_str(text: &str) -> Result<Rate, String> {
        let (number, percent) = match text.strip_suffix('%') {
            Some(number) => (number, true),
            None => (text, false),
        };
        let value: f64 = number
            .trim()
            .parse()
            .map_err(|_| format!("{text:?} is not a rate (items/s, or a percentage like 10%)"))?;
        if !(value > 0.0 && value.is_finite()) {
            return Err(format!("{text:?}: a rate must be positive"));
        }
        Ok(if percent {
            Rate::OfCeiling(value)
        } else {
            Rate::PerSecond(value)
        })
    }
}

impl std::fmt::Display for Rate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Rate::PerSecond(r) => write!(f, "{r}"),
            Rate::OfCeiling(p) => write!(f, "{p}%"),
        }
    }
}

impl Rate {
    fn per_second(self, ceiling: f64) -> f64 {
        match self {
            Rate::PerSecond(r) => r,
            Rate::OfCeiling(p) => ceiling * p / 100.0,
        }
    }
}

/// One rate and consumer kind.
#[derive(Debug, Serialize)]
pub struct LatencyReport {
    /// `plain` or `lock-safe` (ours), or `curator` (Curator's plain queue,
    /// producer and consumer on one client of the Java peer).
    pub kind: &'static str,
    /// The rate asked for, as given (`500`, `10%`).
    pub asked: String,
    /// The schedule's rate, items/s.
    pub rate: f64,
    /// Items put per second, from the first due time to the last put.
    pub achieved_rate: Option<f64>,
    pub items: usize,
    pub p50_ms: Option<f64>,
    pub p90_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub max_ms: Option<f64>,
    pub error: Option<String>,
}

impl LatencyReport {
    /// The report of one run: `measured` is the rate achieved and the p50,
    /// p90, p99 and maximum latencies, in milliseconds.
    fn new(
        kind: &'static str,
        (asked, rate, items): (Rate, f64, usize),
        measured: anyhow::Result<(f64, [Option<f64>; 4])>,
    ) -> LatencyReport {
        let (achieved_rate, [p50_ms, p90_ms, p99_ms, max_ms], error) = match measured {
            Ok((achieved, percentiles)) => (Some(achieved), percentiles, None),
            Err(e) => (None, [None; 4], Some(format!("{e:#}"))),
        };
        LatencyReport {
            kind,
            asked: asked.to_string(),
            rate,
            achieved_rate,
            items,
            p50_ms,
            p90_ms,
            p99_ms,
            max_ms,
            error,
        }
    }
}

/// The most items Curator's queue is given at one rate.
const CURATOR_ITEMS: usize = 10_000;

/// Runs every rate for `secs` seconds each: Curator's plain queue through
/// `java` (when the Java peers compiled), then a plain and a lock-safe
/// consumer of ours.
pub fn run(ctx: &Ctx, rates: &[Rate], secs: f64, java: Option<&Peer>) -> Vec<LatencyReport> {
    let mut reports = Vec::new();
    for &rate in rates {
        let per_second = rate.per_second(ctx.ceiling);
        let items = ((per_second * secs).round() as usize).max(1);
        if let Some(peer) = java {
            let path = format!("{}/latency-curator-{}", ctx.root, per_second.round());
            // Its JVM warms up on as many items as a case has (at most the
            // ceiling's warm-up), not measured.
            let warmup = ctx.items.min(ceiling::WARMUP);
            // Far behind above about 500 items/s, it would outlast its peer's
            // timeout at a high rate: at most `CURATOR_ITEMS` (reported).
            let items = items.min(CURATOR_ITEMS);
            let measured = peer
                .curator_latency(ctx.admin, ctx.connect, &path, (per_second, items, ctx.size, warmup))
                .map(|m| {
                    (
                        m.achieved_rate,
                        [Some(m.p50_ms), Some(m.p90_ms), Some(m.p99_ms), Some(m.max_ms)],
                    )
                });
            reports.push(LatencyReport::new("curator", (rate, per_second, items), measured));
        }
        for lock_safe in [false, true] {
            let kind = if lock_safe { "lock-safe" } else { "plain" };
            let bar = util::bar(ctx.show_progress, items as u64, &format!("latency {kind} {rate}"));
            let measured = measure(ctx, per_second, items, lock_safe, &bar).map(|(achieved, mut latencies)| {
                latencies.sort_unstable();
                let at = |percent| percentile_ms(&latencies, percent);
                (achieved, [at(50.0), at(90.0), at(99.0), at(100.0)])
            });
            bar.finish_and_clear();
            reports.push(LatencyReport::new(kind, (rate, per_second, items), measured));
        }
    }
    reports
}

/// Puts `items` on schedule at `rate` and consumes them; returns the rate
/// achieved and every latency.
fn measure(
    ctx: &Ctx,
    rate: f64,
    items: usize,
    lock_safe: bool,
    bar: &indicatif::ProgressBar,
) -> anyhow::Result<(f64, Vec<u64>)> {
    let name = format!(
        "latency-{}-{}",
        if lock_safe { "locked" } else { "plain" },
        rate.round()
    );
    let path = format!("{}/{name}", ctx.root);
    let lock_path = format!("{path}-locks");
    // The schedule takes items / rate seconds; ten times that to finish.
    let schedule = Duration::from_secs_f64(items as f64 / rate);
    let deadline = ctx.budget.deadline(&format!("latency {name}"), 0.0);
    let deadline = util::Deadline {
        at: deadline.at.max(Instant::now() + schedule * 10),
        ..deadline
    };
    let collector = Arc::new(Collector::new(items));
    let consumer_client = ZkClient::connect(ctx.connect).context("connecting the consumer")?;
    let record = Arc::clone(&collector);
    let mut builder = QueueBuilder::new(&consumer_client, &path, BytesSerializer).consumer(
        move |item: Vec<u8>| -> Result<(), ConsumeError> {
            record.record(&item);
            Ok(())
        },
    );
    if lock_safe {
        builder = builder.lock_path(&lock_path);
    }
    let consumer = builder.build_queue().context("building the consumer")?;
    let producer_client = ZkClient::connect(ctx.connect).context("connecting the producer")?;
    let producer = QueueBuilder::new(&producer_client, &path, BytesSerializer)
        .put_in_background(true)
        .build_queue()
        .context("building the producer")?;

    let stop = Arc::new(AtomicBool::new(false));
    let result: anyhow::Result<(f64, Vec<u64>)> = std::thread::scope(|s| {
        let producing = s.spawn(|| -> anyhow::Result<f64> {
            let start = Instant::now();
            let start_nanos = util::now_nanos();
            for i in 0..items {
                if stop.load(Ordering::Acquire) {
                    bail!("stopped");
                }
                let due = Duration::from_secs_f64(i as f64 / rate);
                wait_until(start + due);
                // The due time, not the time the put was made.
                let put_at = start_nanos + u64::try_from(due.as_nanos()).unwrap_or(u64::MAX);
                producer.put(util::payload(put_at, i as u64, ctx.size)).context("put")?;
            }
            let elapsed = start.elapsed().as_secs_f64();
            Ok(if elapsed > 0.0 { items as f64 / elapsed } else { rate })
        });
        let collected = collector.wait(&deadline, bar);
        stop.store(true, Ordering::Release);
        let achieved = producing
            .join()
            .map_err(|_| anyhow::anyhow!("the producer thread died"))?;
        let collected = collected?;
        Ok((achieved?, collected.latencies_ns))
    });
    producer.close();
    consumer.close();
    producer_client.close();
    consumer_client.close();
    let cleanup = util::remove_tree(ctx.admin, &path).and_then(|()| match lock_safe {
        true => util::remove_tree(ctx.admin, &lock_path),
        false => Ok(()),
    });
    let measured = result?;
    cleanup.with_context(|| format!("cleaning up {name}"))?;
    Ok(measured)
}

#[cfg(test)]
mod tests {
    use super::Rate;

    #[test]
    fn rates_are_items_per_second_or_percentages_of_the_ceiling() {
        assert_eq!("500".parse(), Ok(Rate::PerSecond(500.0)));
        assert_eq!("10%".parse(), Ok(Rate::OfCeiling(10.0)));
        assert!("0".parse::<Rate>().is_err());
        assert!("fast".parse::<Rate>().is_err());
        assert_eq!(Rate::OfCeiling(50.0).to_string(), "50%");
    }
}

/// How long before an item is due the producer stops sleeping and yields
/// instead: a sleep ended 78 µs late at the median here (the kernel's timer
/// slack and the wake-up), which counted as the queue's latency.
const SLEEP_MARGIN: Duration = Duration::from_micros(300);

/// Waits until `due`: sleeps until shortly before it, then yields the CPU
/// until it has come.
fn wait_until(due: Instant) {
    if let Some(wait) = due
        .checked_duration_since(Instant::now())
        .and_then(|w| w.checked_sub(SLEEP_MARGIN))
    {
        std::thread::sleep(wait);
    }
    while Instant::now() < due {
        std::thread::yield_now();
    }
}
