//! The figures of a run: JSON types and the human-readable tables.

use serde::Serialize;
use zk_queue::client::ClientStats;

use super::cases::{Ctx, Measured, Spec};
use super::ceiling::{Ceiling, MULTI_OPS};
use super::cpu::CpuUse;
use super::drain::ChildReport;
use super::env::Machine;
use super::java::JavaCeiling;
use super::latency::LatencyReport;
use super::priority::PriorityReport;
use super::recipes::Recipes;
use super::sharded::ShardedReport;
use super::tails::TailSplit;
use super::util::{percentile_ms, Requests};

/// The `--json` document.
#[derive(Serialize)]
pub struct Document {
    pub command: String,
    pub machine: Machine,
    pub settings: Settings,
    /// The best of the ceilings measured before and after the cases: every
    /// ratio is to it.
    pub ceiling: Ceiling,
    /// Each measurement of the ceiling, before and after the cases.
    pub ceilings: Vec<Ceiling>,
    pub cases: Vec<CaseReport>,
    pub drain: Vec<DrainReport>,
    pub drain_scaling: Option<DrainScaling>,
    pub memory: Option<Memory>,
    /// Open-loop runs: latency at fixed rates below saturation.
    pub latency: Vec<LatencyReport>,
    /// A create and then a delete, one at a time (ms): the least an item's
    /// trip from put to consumer takes.
    pub latency_floor_ms: f64,
    /// Priority backlogs drained while an urgent item is put.
    pub priority_backlogs: Vec<PriorityReport>,
    /// Sharded backlogs put and drained (`--sharded-backlog`).
    pub sharded_backlogs: Vec<ShardedReport>,
    /// The coordination recipes beside Curator's (`--recipes`).
    pub recipes: Option<Recipes>,
    pub total_secs: f64,
    /// Every case and drain finished within its deadline.
    pub ok: bool,
}

#[derive(Debug, Serialize)]
pub struct Settings {
    pub items: usize,
    pub size: usize,
    pub threads: usize,
    pub cases: Vec<String>,
    pub drain_sizes: Vec<usize>,
    pub deadline_factor: f64,
    pub priority_refresh: usize,
    /// The queue cases' consumers' `claim_window`, when not the default.
    pub claim_window: Option<usize>,
}

#[derive(Debug, Serialize)]
pub struct CaseReport {
    pub case: String,
    pub items: usize,
    pub producers: usize,
    pub consumers: usize,
    pub items_per_node: usize,
    /// Consumers with a lock path.
    pub lock_safe: bool,
    /// From the first put to the last consumed item (to the last stored put
    /// for `put`).
    pub secs: Option<f64>,
    pub items_per_s: Option<f64>,
    /// Items stored per second by the producers (first put to last flush).
    pub puts_per_s: Option<f64>,
    /// Put-to-consume latency percentiles (nearest rank), milliseconds.
    pub p50_ms: Option<f64>,
    pub p90_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub max_ms: Option<f64>,
    pub ratio_to_ceiling: Option<f64>,
    /// `put` only: its rate over the server's pipelined create rate (a put
    /// is one create, no delete).
    pub ratio_to_creates: Option<f64>,
    /// `multi` only: its rate over the single-item `e2e` rate.
    pub ratio_to_e2e: Option<f64>,
    /// Items consumed more than once.
    pub duplicates: usize,
    pub consumer_requests_per_item: Option<Requests>,
    pub producer_requests_per_item: Option<Requests>,
    /// The share of the case the consumers' clients (on average) had a
    /// request in flight (`ClientStats::waiting`, set-up included): near 1,
    /// a consumer spent the case waiting on the server's answers.
    pub consumer_waiting_share: Option<f64>,
    /// The same for the producers' clients.
    pub producer_waiting_share: Option<f64>,
    /// Where the machine's CPU went during the case.
    pub cpu: Option<CpuUse>,
    pub error: Option<String>,
}

impl CaseReport {
    pub fn new(
        name: &str,
        ctx: &Ctx,
        spec: &Spec,
        measured: anyhow::Result<Measured>,
        e2e_rate: Option<f64>,
    ) -> CaseReport {
        let mut report = CaseReport {
            case: name.to_owned(),
            items: ctx.items,
            producers: spec.producers,
            consumers: spec.consumers,
            items_per_node: spec.items_per_node,
            lock_safe: spec.lock,
            secs: None,
            items_per_s: None,
            puts_per_s: None,
            p50_ms: None,
            p90_ms: None,
            p99_ms: None,
            max_ms: None,
            ratio_to_ceiling: None,
            ratio_to_creates: None,
            ratio_to_e2e: None,
            duplicates: 0,
            consumer_requests_per_item: None,
            producer_requests_per_item: None,
            consumer_waiting_share: None,
            producer_waiting_share: None,
            cpu: None,
            error: None,
        };
        match measured {
            Ok(mut m) => {
                m.latencies_ns.sort_unstable();
                let rate = ctx.items as f64 / m.secs;
                report.secs = Some(m.secs);
                report.items_per_s = Some(rate);
                report.puts_per_s = Some(ctx.items as f64 / m.put_secs);
                report.p50_ms = percentile_ms(&m.latencies_ns, 50.0);
                report.p90_ms = percentile_ms(&m.latencies_ns, 90.0);
                report.p99_ms = percentile_ms(&m.latencies_ns, 99.0);
                report.max_ms = percentile_ms(&m.latencies_ns, 100.0);
                report.ratio_to_ceiling = Some(rate / ctx.ceiling);
                report.ratio_to_e2e = e2e_rate.map(|e2e| rate / e2e);
                if spec.consumers == 0 {
                    report.ratio_to_creates = Some(rate / ctx.create_ceiling);
                }
                report.duplicates = m.duplicates;
                if !m.consumer_stats.is_empty() {
                    report.consumer_requests_per_item = Some(Requests::per_item(&m.consumer_stats, ctx.items));
                }
                report.producer_requests_per_item = Some(Requests::per_item(&m.producer_stats, ctx.items));
                let share = |stats: &[ClientStats]| {
                    let waited: f64 = stats.iter().map(|s| s.waiting.as_secs_f64()).sum();
                    (!stats.is_empty()).then(|| waited / stats.len() as f64 / m.secs)
                };
                report.consumer_waiting_share = share(&m.consumer_stats);
                report.producer_waiting_share = share(&m.producer_stats);
            }
            Err(e) => report.error = Some(format!("{e:#}")),
        }
        report
    }

    /// Takes the ratios to the ceiling `best` instead.
    pub fn rescale(&mut self, best: &Ceiling) {
        if let Some(rate) = self.items_per_s {
            self.ratio_to_ceiling = Some(rate / best.items_per_s);
            if self.ratio_to_creates.is_some() {
                self.ratio_to_creates = Some(rate / best.creates_per_s);
            }
        }
    }
}

#[derive(Debug, Serialize)]
pub struct DrainReport {
    pub items: usize,
    pub preload_secs: Option<f64>,
    pub preload_per_s: Option<f64>,
    /// From the consumer's start to its last consumed item.
    pub secs: Option<f64>,
    pub items_per_s: Option<f64>,
    pub ratio_to_ceiling: Option<f64>,
    /// The consumer process's peak RSS (VmHWM) at the end of the drain.
    pub peak_rss_mb: Option<f64>,
    /// Its peak RSS after connecting, before the consumer started.
    pub peak_rss_before_mb: Option<f64>,
    pub requests_per_item: Option<Requests>,
    pub error: Option<String>,
}

impl DrainReport {
    pub fn new(items: usize, ceiling: f64, result: anyhow::Result<(f64, ChildReport)>) -> DrainReport {
        match result {
            Ok((preload_secs, child)) => {
                let rate = items as f64 / child.secs;
                DrainReport {
                    items,
                    preload_secs: Some(preload_secs),
                    preload_per_s: Some(items as f64 / preload_secs),
                    secs: Some(child.secs),
                    items_per_s: Some(rate),
                    ratio_to_ceiling: Some(rate / ceiling),
                    peak_rss_mb: Some(child.vmhwm_kb as f64 / 1024.0),
                    peak_rss_before_mb: Some(child.vmhwm_before_kb as f64 / 1024.0),
                    requests_per_item: Some(child.requests_per_item),
                    error: None,
                }
            }
            Err(e) => DrainReport {
                items,
                preload_secs: None,
                preload_per_s: None,
                secs: None,
                items_per_s: None,
                ratio_to_ceiling: None,
                peak_rss_mb: None,
                peak_rss_before_mb: None,
                requests_per_item: None,
                error: Some(format!("{e:#}")),
            },
        }
    }
}

impl DrainReport {
    /// Takes the ratio to the ceiling `best` instead.
    pub fn rescale(&mut self, best: &Ceiling) {
        self.ratio_to_ceiling = self.items_per_s.map(|rate| rate / best.items_per_s);
    }
}

/// The drain rate of the longest queue over that of the shortest.
#[derive(Debug, Serialize)]
pub struct DrainScaling {
    pub smallest: usize,
    pub largest: usize,
    pub ratio_largest_to_smallest: f64,
}

impl DrainScaling {
    pub fn of(drains: &[DrainReport]) -> Option<DrainScaling> {
        let small = drains.iter().min_by_key(|d| d.items)?;
        let large = drains.iter().max_by_key(|d| d.items)?;
        (small.items < large.items).then_some(())?;
        Some(DrainScaling {
            smallest: small.items,
            largest: large.items,
            ratio_largest_to_smallest: large.items_per_s? / small.items_per_s?,
        })
    }
}

/// The peak RSS of the consumer that drained the longest queue.
#[derive(Debug, Serialize)]
pub struct Memory {
    pub items: usize,
    pub peak_rss_mb: f64,
    pub peak_rss_before_mb: f64,
}

impl Memory {
    pub fn of(drains: &[DrainReport]) -> Option<Memory> {
        let large = drains.iter().max_by_key(|d| d.items)?;
        Some(Memory {
            items: large.items,
            peak_rss_mb: large.peak_rss_mb?,
            peak_rss_before_mb: large.peak_rss_before_mb?,
        })
    }
}

/// Human-readable output on stdout; silent with `--json`.
pub struct Out {
    json: bool,
}

/// `12,345` for 12345.4.
pub fn int(value: f64) -> String {
    let digits = format!("{:.0}", value.max(0.0));
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

pub fn opt(value: Option<f64>, f: impl Fn(f64) -> String) -> String {
    value.map_or_else(|| "-".to_owned(), f)
}

impl Out {
    pub fn new(json: bool) -> Out {
        Out { json }
    }

    pub fn header(&self, s: &Settings, m: &Machine) {
        if self.json {
            return;
        }
        println!(
            "zk-queue benchmark: {} items of {} bytes per case; e2e-4x4 with {} producers and {} consumers",
            int(s.items as f64),
            s.size,
            s.threads,
            s.threads
        );
        println!(
            "machine: {} CPUs ({}), {} MB RAM, Linux {}",
            m.nproc,
            m.cpu_model.as_deref().unwrap_or("unknown CPU"),
            opt(m.mem_total_mb, int),
            m.kernel.as_deref().unwrap_or("?")
        );
        println!(
            "server: ZooKeeper {} at {} ({}){}",
            m.server_version.as_deref().unwrap_or("(version unknown)"),
            m.server_connect,
            m.server_origin,
            m.server_data_fs
                .as_deref()
                .map(|fs| format!(", data on {fs}"))
                .unwrap_or_default()
        );
        println!("command: {}", std::env::args().collect::<Vec<_>>().join(" "));
    }

    pub fn ceiling(&self, c: &Ceiling, best: bool) {
        if self.json {
            return;
        }
        println!(
            "\nserver ceiling {} the cases ({} znodes of {} bytes, pipelined, after a warm-up of {}): {} creates/s, {} deletes/s -> {} items/s (create+delete){}",
            c.when,
            int(c.items as f64),
            c.size,
            int(c.warmup_items as f64),
            int(c.creates_per_s),
            int(c.deletes_per_s),
            int(c.items_per_s),
            if best { "; the best: every ratio below is to it" } else { "" }
        );
        println!(
            "other requests, pipelined one per znode: reads {}/s, exists {}/s, lock-safe acknowledge multis {}/s",
            int(c.reads_per_s),
            int(c.exists_per_s),
            int(c.multis_per_s)
        );
        println!(
            "multi ceiling, pipelined multis of {} creates, then of {} deletes: {} creates/s, {} deletes/s -> {} items/s ({:.2} x the per-node ceiling)",
            MULTI_OPS,
            MULTI_OPS,
            int(c.multi_creates_per_s),
            int(c.multi_deletes_per_s),
            int(c.multi_items_per_s),
            c.multi_items_per_s / c.items_per_s
        );
        println!(
            "one request at a time: create {:.2} ms, delete {:.2} ms",
            c.serial_create_ms, c.serial_delete_ms
        );
        match &c.java {
            None => {}
            Some(JavaCeiling { error: Some(e), .. }) => println!("plain Java client, same server: {e}"),
            Some(j) => println!(
                "plain Java client, same server: {} creates/s, {} deletes/s -> {} items/s; ours / Java: creates {}, deletes {}, items {}",
                opt(j.creates_per_s, int),
                opt(j.deletes_per_s, int),
                opt(j.items_per_s, int),
                opt(j.ours_to_java_creates, |v| format!("{v:.2}")),
                opt(j.ours_to_java_deletes, |v| format!("{v:.2}")),
                opt(j.ours_to_java_items, |v| format!("{v:.2}")),
            ),
        }
    }

    pub fn latency(&self, reports: &[LatencyReport], floor_ms: f64) {
        if self.json || reports.is_empty() {
            return;
        }
        println!(
            "\nopen-loop latency (put paced by the clock; floor: a create then a delete, one at a time, {floor_ms:.2} ms)"
        );
        let mut neighbour = None;
        for r in reports {
            if neighbour != Some(r.neighbour) {
                neighbour = Some(r.neighbour);
                println!(
                    "neighbour: {}\n{:<10} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>7} {:>9}",
                    r.neighbour,
                    "consumer",
                    "asked",
                    "items/s",
                    "achieved",
                    "p50 ms",
                    "p90 ms",
                    "p99 ms",
                    "max ms",
                    "busy %",
                    "nbr cores"
                );
            }
            match &r.error {
                Some(e) => println!("{:<10} {:>8} failed: {e}", r.kind, r.asked),
                None => println!(
                    "{:<10} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>7} {:>9}",
                    r.kind,
                    r.asked,
                    int(r.rate),
                    opt(r.achieved_rate, int),
                    opt(r.p50_ms, |v| format!("{v:.2}")),
                    opt(r.p90_ms, |v| format!("{v:.2}")),
                    opt(r.p99_ms, |v| format!("{v:.2}")),
                    opt(r.max_ms, |v| format!("{v:.2}")),
                    opt(r.cpu.as_ref().map(|c| c.machine_busy * 100.0), |v| format!("{v:.0}")),
                    opt(r.neighbour_cores, |v| format!("{v:.2}")),
                ),
            }
            if let Some(split) = &r.split {
                latency_split(split);
            }
        }
    }

    pub fn case_header(&self) {
        if self.json {
            return;
        }
        println!(
            "\n{:<14} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
            "case", "items", "prod/cons", "items/s", "x ceiling", "p50 ms", "p99 ms", "puts/s", "reqs/item"
        );
    }

    pub fn case(&self, r: &CaseReport) {
        if self.json {
            return;
        }
        if let Some(error) = &r.error {
            println!("{:<14} FAILED: {error}", r.case);
            return;
        }
        let requests = r.consumer_requests_per_item.or(r.producer_requests_per_item);
        println!(
            "{:<14} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
            r.case,
            r.items,
            format!("{}/{}", r.producers, r.consumers),
            opt(r.items_per_s, int),
            opt(r.ratio_to_ceiling, |v| format!("{v:.3}")),
            opt(r.p50_ms, |v| format!("{v:.1}")),
            opt(r.p99_ms, |v| format!("{v:.1}")),
            opt(r.puts_per_s, int),
            opt(requests.map(|q| q.total), |v| format!("{v:.2}")),
        );
        if let Some(ratio) = r.ratio_to_creates {
            println!("{:<14} ({ratio:.2} x the pipelined create rate of the ceiling)", "");
        }
        if let Some(ratio) = r.ratio_to_e2e {
            println!("{:<14} ({ratio:.2} x the single-item e2e rate)", "");
        }
        if r.duplicates > 0 {
            println!("{:<14} ({} items consumed twice)", "", r.duplicates);
        }
        if let (Some(c), Some(p)) = (r.consumer_waiting_share, r.producer_waiting_share) {
            println!(
                "{:<14} (waiting on the server: consumers {:.0} %, producers {:.0} % of the case)",
                "",
                c * 100.0,
                p * 100.0
            );
        }
    }

    pub fn drain_header(&self) {
        if self.json {
            return;
        }
        println!("\ndrain of a preloaded queue (1 plain consumer in a child process)");
        println!(
            "{:>8} {:>9} {:>9} {:>10} {:>12} {:>9}",
            "queue", "items/s", "x ceiling", "preload/s", "peak RSS MB", "reqs/item"
        );
    }

    pub fn drain(&self, r: &DrainReport) {
        if self.json {
            return;
        }
        if let Some(error) = &r.error {
            println!("{:>8} FAILED: {error}", r.items);
            return;
        }
        println!(
            "{:>8} {:>9} {:>9} {:>10} {:>12} {:>9}",
            r.items,
            opt(r.items_per_s, int),
            opt(r.ratio_to_ceiling, |v| format!("{v:.3}")),
            opt(r.preload_per_s, int),
            opt(r.peak_rss_mb, |v| format!("{v:.1}")),
            opt(r.requests_per_item.map(|q| q.total), |v| format!("{v:.2}")),
        );
    }

    pub fn footer(&self, scaling: Option<&DrainScaling>, memory: Option<&Memory>) {
        if self.json {
            return;
        }
        if let Some(s) = scaling {
            println!(
                "drain scaling: the {}-item rate is {:.2} x the {}-item rate",
                int(s.largest as f64),
                s.ratio_largest_to_smallest,
                int(s.smallest as f64)
            );
        }
        if let Some(m) = memory {
            println!(
                "memory: peak RSS of the consumer process draining {} items: {:.1} MB ({:.1} MB before it started consuming)",
                int(m.items as f64),
                m.peak_rss_mb,
                m.peak_rss_before_mb
            );
        }
    }
}

/// One line under a latency run: its latency's parts and its tail.
fn latency_split(s: &TailSplit) {
    let ms = |v: Option<f64>| opt(v, |v| format!("{v:.2}"));
    let starts: Vec<String> = s
        .episodes
        .iter()
        .take(10)
        .map(|e| format!("{:.0}", e.start_ms))
        .collect();
    let more = match s.episodes.len() + s.episodes_left_off {
        n if n > starts.len() => format!(" (of {n})"),
        _ => String::new(),
    };
    println!(
        "{:<10} producer late p99 {} max {}, put p99 {} max {}; after the put p50 {} p99 {} max {} ms; \
         {} over 10 ms{}",
        "",
        ms(s.late_p99_ms),
        ms(s.late_max_ms),
        ms(s.put_p99_ms),
        ms(s.put_max_ms),
        ms(s.after_put_p50_ms),
        ms(s.after_put_p99_ms),
        ms(s.after_put_max_ms),
        s.over_10ms,
        match starts.is_empty() {
            true => String::new(),
            false => format!(", episodes due at {} ms{more}", starts.join(", ")),
        }
    );
}
