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
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use serde::Serialize;
use zk_queue::{BytesSerializer, ConsumeError, QueueBuilder, ZkClient};

use super::cases::Ctx;
use super::ceiling;
use super::cpu::{self, CpuUse};
use super::java::Peer;
use super::neighbour::{self, Neighbour};
use super::tails::{self, TailSplit};
use super::util::{self, percentile_ms, Collector, Requests};

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

/// The `neighbour` of the runs done alone.
pub const QUIET: &str = "none";
/// The `neighbour` of the runs done beside `--busy-neighbour`'s child.
pub const BUSY: &str = "one core busy";

/// One rate and consumer kind.
#[derive(Debug, Serialize)]
pub struct LatencyReport {
    /// `plain` or `lock-safe` (ours), or `curator` (Curator's plain queue,
    /// producer and consumer on one client of the Java peer).
    pub kind: &'static str,
    /// What ran beside it: `none`, or `one core busy` (`--busy-neighbour`:
    /// a child process spinning on one core).
    pub neighbour: &'static str,
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
    /// Where the machine's CPU went during the run (Curator's: its JVM's
    /// start and warm-up included).
    pub cpu: Option<CpuUse>,
    /// Cores the busy neighbour used on average during the run.
    pub neighbour_cores: Option<f64>,
    /// Where the latency of our runs went, as far as the benchmark sees it.
    pub split: Option<TailSplit>,
    pub error: Option<String>,
}

/// What one run of ours measured.
struct Run {
    achieved: f64,
    latencies_ns: Vec<u64>,
    split: TailSplit,
}

/// What the producer did: the rate it achieved, its schedule's start
/// (`now_nanos`), and when each put call began and returned.
struct Produced {
    achieved: f64,
    start_nanos: u64,
    calls: Vec<(u64, u64)>,
}

/// The figures of a run that finished: rate achieved, p50, p90, p99 and
/// maximum latencies (ms), and our runs' split.
type Figures = (f64, [Option<f64>; 4], Option<TailSplit>);

impl LatencyReport {
    fn new(
        (kind, neighbour): (&'static str, &'static str),
        (asked, rate, items): (Rate, f64, usize),
        measured: anyhow::Result<Figures>,
    ) -> LatencyReport {
        let (achieved_rate, [p50_ms, p90_ms, p99_ms, max_ms], split, error) = match measured {
            Ok((achieved, percentiles, split)) => (Some(achieved), percentiles, split, None),
            Err(e) => (None, [None; 4], None, Some(format!("{e:#}"))),
        };
        LatencyReport {
            kind,
            neighbour,
            asked: asked.to_string(),
            rate,
            achieved_rate,
            items,
            p50_ms,
            p90_ms,
            p99_ms,
            max_ms,
            cpu: None,
            neighbour_cores: None,
            split,
            error,
        }
    }
}

/// The most items Curator's queue is given at one rate.
const CURATOR_ITEMS: usize = 10_000;

/// Runs every rate for `secs` seconds each (see `run_set`); with
/// `busy_neighbour`, all of them again beside a child process that keeps
/// one core busy for exactly those runs. `servers` are the embedded
/// server's processes, for the CPU figures.
pub fn run(
    ctx: &Ctx,
    (rates, secs): (&[Rate], f64),
    java: Option<&Peer>,
    servers: &[u32],
    busy_neighbour: bool,
) -> Vec<LatencyReport> {
    let mut reports = run_set(ctx, (rates, secs), java, servers, None);
    if busy_neighbour && !rates.is_empty() {
        // Beyond every run's own deadline (Curator's peer's, and ten times
        // a schedule, at least 30 s), in case this process hangs: the child
        // also ends when this process is gone, and is killed when dropped.
        let per_rate = 210.0 + 2.0 * ((10.0 * secs).max(30.0) + 60.0);
        let timeout = Duration::from_secs_f64(rates.len() as f64 * per_rate);
        match Neighbour::start(timeout) {
            Ok(neighbour) => reports.extend(run_set(ctx, (rates, secs), java, servers, Some(&neighbour))),
            Err(e) => {
                let failed: anyhow::Result<Figures> = Err(e.context("the busy neighbour"));
                reports.push(LatencyReport::new(("plain", BUSY), (rates[0], 0.0, 0), failed));
            }
        }
    }
    reports
}

/// Measures where the CPU went during one run.
struct Watch<'a> {
    meter: cpu::Meter,
    neighbour: Option<(&'a Neighbour, Option<u64>, Instant)>,
}

impl<'a> Watch<'a> {
    fn start(servers: &[u32], neighbour: Option<&'a Neighbour>) -> Watch<'a> {
        Watch {
            meter: cpu::Meter::start(servers),
            neighbour: neighbour.map(|n| (n, n.ticks(), Instant::now())),
        }
    }

    fn stop(self, report: &mut LatencyReport) {
        report.cpu = self.meter.stop();
        report.neighbour_cores = self
            .neighbour
            .and_then(|(n, ticks, since)| neighbour::cores(n, ticks, since));
    }
}

/// Runs every rate for `secs` seconds each: Curator's plain queue through
/// `java` (when the Java peers compiled), then a plain and a lock-safe
/// consumer of ours; beside `neighbour` when given.
fn run_set(
    ctx: &Ctx,
    (rates, secs): (&[Rate], f64),
    java: Option<&Peer>,
    servers: &[u32],
    neighbour: Option<&Neighbour>,
) -> Vec<LatencyReport> {
    let label = if neighbour.is_some() { BUSY } else { QUIET };
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
            let watch = Watch::start(servers, neighbour);
            let measured = peer
                .curator_latency(ctx.admin, ctx.connect, &path, (per_second, items, ctx.size, warmup))
                .map(|m| {
                    (
                        m.achieved_rate,
                        [Some(m.p50_ms), Some(m.p90_ms), Some(m.p99_ms), Some(m.max_ms)],
                        None,
                    )
                });
            let mut report = LatencyReport::new(("curator", label), (rate, per_second, items), measured);
            watch.stop(&mut report);
            reports.push(report);
        }
        for lock_safe in [false, true] {
            let kind = if lock_safe { "lock-safe" } else { "plain" };
            let bar = util::bar(ctx.show_progress, items as u64, &format!("latency {kind} {rate}"));
            let watch = Watch::start(servers, neighbour);
            let measured = measure(ctx, per_second, items, lock_safe, &bar).map(|mut run| {
                run.latencies_ns.sort_unstable();
                let at = |percent| percentile_ms(&run.latencies_ns, percent);
                (run.achieved, [at(50.0), at(90.0), at(99.0), at(100.0)], Some(run.split))
            });
            let mut report = LatencyReport::new((kind, label), (rate, per_second, items), measured);
            watch.stop(&mut report);
            bar.finish_and_clear();
            reports.push(report);
        }
    }
    reports
}

/// When item `i` of a schedule at `rate` is due, after its start.
fn due(i: usize, rate: f64) -> Duration {
    Duration::from_secs_f64(i as f64 / rate)
}

/// Puts `items` on schedule at `rate` and consumes them; returns the rate
/// achieved, every latency, and their split.
fn measure(ctx: &Ctx, rate: f64, items: usize, lock_safe: bool, bar: &indicatif::ProgressBar) -> anyhow::Result<Run> {
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
    // When each item first reached the consumer (`now_nanos`; 0: not yet).
    let arrivals = Arc::new(Mutex::new(vec![0u64; items]));
    let consumer_client = ZkClient::connect(ctx.connect).context("connecting the consumer")?;
    let (record, arrived) = (Arc::clone(&collector), Arc::clone(&arrivals));
    let mut builder = QueueBuilder::new(&consumer_client, &path, BytesSerializer).consumer(
        move |item: Vec<u8>| -> Result<(), ConsumeError> {
            let now = util::now_nanos();
            record.record(&item);
            if let Some(index) = item.get(8..util::HEADER) {
                let index = u64::from_be_bytes(index.try_into().expect("8 bytes"));
                let mut arrived = arrived.lock().unwrap_or_else(|e| e.into_inner());
                let first = usize::try_from(index)
                    .ok()
                    .and_then(|i| arrived.get_mut(i))
                    .filter(|at| **at == 0);
                if let Some(at) = first {
                    *at = now;
                }
            }
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
    let result: anyhow::Result<(Produced, Vec<u64>)> = std::thread::scope(|s| {
        let producing = s.spawn(|| -> anyhow::Result<Produced> {
            let start = Instant::now();
            let start_nanos = util::now_nanos();
            // When each put call began and returned (`now_nanos`).
            let mut calls = Vec::with_capacity(items);
            for i in 0..items {
                if stop.load(Ordering::Acquire) {
                    bail!("stopped");
                }
                let due_in = due(i, rate);
                wait_until(start + due_in);
                // The due time, not the time the put was made.
                let put_at = start_nanos + u64::try_from(due_in.as_nanos()).unwrap_or(u64::MAX);
                let began = util::now_nanos();
                producer.put(util::payload(put_at, i as u64, ctx.size)).context("put")?;
                calls.push((began, util::now_nanos()));
            }
            let elapsed = start.elapsed().as_secs_f64();
            Ok(Produced {
                achieved: if elapsed > 0.0 { items as f64 / elapsed } else { rate },
                start_nanos,
                calls,
            })
        });
        let collected = collector.wait(&deadline, bar);
        stop.store(true, Ordering::Release);
        let produced = producing
            .join()
            .map_err(|_| anyhow::anyhow!("the producer thread died"))?;
        let collected = collected?;
        Ok((produced?, collected.latencies_ns))
    });
    let requests = Requests::per_item(&[consumer_client.stats()], items);
    producer.close();
    consumer.close();
    producer_client.close();
    consumer_client.close();
    let cleanup = util::remove_tree(ctx.admin, &path).and_then(|()| match lock_safe {
        true => util::remove_tree(ctx.admin, &lock_path),
        false => Ok(()),
    });
    let (produced, latencies_ns) = result?;
    cleanup.with_context(|| format!("cleaning up {name}"))?;
    let arrivals = std::mem::take(&mut *arrivals.lock().unwrap_or_else(|e| e.into_inner()));
    let dues: Vec<u64> = (0..items)
        .map(|i| produced.start_nanos + u64::try_from(due(i, rate).as_nanos()).unwrap_or(u64::MAX))
        .collect();
    let mut parts = tails::split(&dues, &produced.calls, &arrivals);
    parts.consumer_requests_per_item = requests;
    Ok(Run {
        achieved: produced.achieved,
        latencies_ns,
        split: parts,
    })
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
