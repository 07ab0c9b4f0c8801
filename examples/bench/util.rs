//! What the parts share: payloads with put times, the consumed-item
//! collector, deadlines, progress bars, and clean-up.

use std::io::IsTerminal;
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use indicatif::{ProgressBar, ProgressStyle};
use zk_queue::{client::ClientStats, Error, ZkClient};

/// The parent of every run's nodes.
pub const BENCH_ROOT: &str = "/zk-queue-bench";

/// Bytes of an item's header: put time (u64 BE nanoseconds) and index (u64 BE).
pub const HEADER: usize = 16;

/// Nanoseconds since this process's time base (fixed by the first call).
pub fn now_nanos() -> u64 {
    static BASE: OnceLock<Instant> = OnceLock::new();
    u64::try_from(BASE.get_or_init(Instant::now).elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// An item of `size` bytes: put time `put_nanos`, `index`, zero padding.
pub fn payload(put_nanos: u64, index: u64, size: usize) -> Vec<u8> {
    let mut item = vec![0u8; size.max(HEADER)];
    item[..8].copy_from_slice(&put_nanos.to_be_bytes());
    item[8..16].copy_from_slice(&index.to_be_bytes());
    item
}

/// Counts consumed items, their latencies and duplicates, and wakes the
/// waiting thread when all arrived or a producer failed.
pub struct Collector {
    target: usize,
    state: Mutex<State>,
    changed: Condvar,
}

struct State {
    latencies_ns: Vec<u64>,
    seen: Vec<bool>,
    unique: usize,
    duplicates: usize,
    foreign: usize,
    last: Option<Instant>,
    failure: Option<String>,
}

/// What a collector gathered.
pub struct Collected {
    pub last: Instant,
    pub latencies_ns: Vec<u64>,
    pub duplicates: usize,
}

impl Collector {
    pub fn new(target: usize) -> Collector {
        Collector {
            target,
            state: Mutex::new(State {
                latencies_ns: Vec::with_capacity(target),
                seen: vec![false; target],
                unique: 0,
                duplicates: 0,
                foreign: 0,
                last: None,
                failure: None,
            }),
            changed: Condvar::new(),
        }
    }

    /// Records one consumed item (called on a consumer thread).
    pub fn record(&self, item: &[u8]) {
        let now = now_nanos();
        let at = Instant::now();
        let header = item.get(..HEADER).map(|h| {
            let word = |i: usize| u64::from_be_bytes(h[i..i + 8].try_into().expect("8 bytes"));
            (word(0), word(8))
        });
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        match header {
            Some((put, index)) if (index as usize) < self.target => {
                state.latencies_ns.push(now.saturating_sub(put));
                if std::mem::replace(&mut state.seen[index as usize], true) {
                    state.duplicates += 1;
                } else {
                    state.unique += 1;
                    state.last = Some(at);
                    if state.unique == self.target {
                        self.changed.notify_all();
                    }
                }
            }
            _ => state.foreign += 1,
        }
    }

    /// Ends the wait early with an error (a producer failed).
    pub fn fail(&self, why: String) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.failure.get_or_insert(why);
        self.changed.notify_all();
    }

    /// Why the case failed, if a producer said so.
    pub fn failure(&self) -> Option<String> {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).failure.clone()
    }

    pub fn unique(&self) -> usize {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).unique
    }

    /// Waits until every item was consumed once, showing progress on `bar`.
    pub fn wait(&self, deadline: &Deadline, bar: &ProgressBar) -> anyhow::Result<Collected> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            bar.set_position(state.unique as u64);
            if let Some(why) = &state.failure {
                bail!("{why}");
            }
            if state.unique >= self.target {
                let foreign = state.foreign;
                if foreign > 0 {
                    bail!("{foreign} consumed item(s) did not come from this case");
                }
                return Ok(Collected {
                    last: state.last.expect("an item was consumed"),
                    latencies_ns: std::mem::take(&mut state.latencies_ns),
                    duplicates: state.duplicates,
                });
            }
            let now = Instant::now();
            if now >= deadline.at {
                bail!(
                    "{}: {} of {} items consumed",
                    deadline.missed(),
                    state.unique,
                    self.target
                );
            }
            let step = (deadline.at - now).min(Duration::from_millis(100));
            state = self
                .changed
                .wait_timeout(state, step)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
}

/// How long a part may take: `factor` times its expected time (its serial
/// requests at the measured serial request latency), at least 30 s.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    pub factor: f64,
    pub op_secs: f64,
}

impl Budget {
    pub fn deadline(&self, what: &str, serial_requests: f64) -> Deadline {
        let expected = Duration::from_secs_f64(serial_requests * self.op_secs);
        let allowed = Duration::from_secs_f64((expected.as_secs_f64() * self.factor).max(30.0));
        Deadline {
            what: what.to_owned(),
            at: Instant::now() + allowed,
            allowed,
            expected,
            factor: self.factor,
        }
    }
}

/// A part's deadline, named for its error message.
#[derive(Clone, Debug)]
pub struct Deadline {
    pub what: String,
    pub at: Instant,
    pub allowed: Duration,
    pub expected: Duration,
    pub factor: f64,
}

impl Deadline {
    pub fn remaining(&self) -> Duration {
        self.at.saturating_duration_since(Instant::now())
    }

    /// The message of a missed deadline.
    pub fn missed(&self) -> String {
        format!(
            "{} did not finish within {:.0} s ({} x its expected {:.1} s, at least 30 s)",
            self.what,
            self.allowed.as_secs_f64(),
            self.factor,
            self.expected.as_secs_f64()
        )
    }
}

/// Whether progress bars are drawn: only when stderr is a terminal.
pub fn progress_enabled() -> bool {
    std::io::stderr().is_terminal()
}

/// A progress bar on stderr, or a hidden one.
pub fn bar(enabled: bool, len: u64, name: &str) -> ProgressBar {
    if !enabled {
        return ProgressBar::hidden();
    }
    let style = ProgressStyle::with_template("{prefix:>14} [{elapsed_precise}] {wide_bar} {pos}/{len} {per_sec}")
        .expect("a valid template");
    ProgressBar::new(len).with_style(style).with_prefix(name.to_owned())
}

/// A spinner on stderr for a wait of unknown progress, or a hidden one.
pub fn spinner(enabled: bool, name: &str, message: &str) -> ProgressBar {
    if !enabled {
        return ProgressBar::hidden();
    }
    let style =
        ProgressStyle::with_template("{prefix:>14} [{elapsed_precise}] {spinner} {msg}").expect("a valid template");
    ProgressBar::new_spinner()
        .with_style(style)
        .with_prefix(name.to_owned())
        .with_message(message.to_owned())
}

/// Deletes `path` and everything under it; a missing node is fine.
pub fn remove_tree(client: &ZkClient, path: &str) -> anyhow::Result<()> {
    let children = match client.get_children(path) {
        Ok((children, _)) => children,
        Err(Error::NoNode { .. }) => return Ok(()),
        Err(e) => return Err(e).with_context(|| format!("listing {path}")),
    };
    for chunk in children.chunks(1_000) {
        let nodes: Vec<(String, Option<i32>)> = chunk.iter().map(|c| (format!("{path}/{c}"), None)).collect();
        let results = client
            .delete_many(&nodes)
            .with_context(|| format!("deleting under {path}"))?;
        for ((node, _), result) in nodes.iter().zip(results) {
            match result {
                Ok(()) | Err(Error::NoNode { .. }) => {}
                Err(Error::NotEmpty { .. }) => remove_tree(client, node)?,
                Err(e) => return Err(e).with_context(|| format!("deleting {node}")),
            }
        }
    }
    match client.delete(path, None) {
        Ok(()) | Err(Error::NoNode { .. }) => Ok(()),
        Err(e) => Err(e).with_context(|| format!("deleting {path}")),
    }
}

/// Requests per item, by kind.
#[derive(Clone, Copy, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Requests {
    pub create: f64,
    pub delete: f64,
    pub exists: f64,
    pub get_data: f64,
    pub set_data: f64,
    pub get_children: f64,
    pub multi: f64,
    pub other: f64,
    pub total: f64,
}

impl Requests {
    /// The requests of `clients` divided by `items`.
    pub fn per_item(stats: &[ClientStats], items: usize) -> Requests {
        let sum = |f: fn(&ClientStats) -> u64| stats.iter().map(f).sum::<u64>() as f64 / items.max(1) as f64;
        let mut r = Requests {
            create: sum(|s| s.create),
            delete: sum(|s| s.delete),
            exists: sum(|s| s.exists),
            get_data: sum(|s| s.get_data),
            set_data: sum(|s| s.set_data),
            get_children: sum(|s| s.get_children),
            multi: sum(|s| s.multi),
            other: sum(|s| s.other),
            total: 0.0,
        };
        r.total = r.create + r.delete + r.exists + r.get_data + r.set_data + r.get_children + r.multi + r.other;
        r
    }
}

/// Nearest-rank percentile of sorted values, in milliseconds.
pub fn percentile_ms(sorted_ns: &[u64], p: f64) -> Option<f64> {
    if sorted_ns.is_empty() {
        return None;
    }
    let rank = ((p / 100.0) * sorted_ns.len() as f64).ceil() as usize;
    Some(sorted_ns[rank.clamp(1, sorted_ns.len()) - 1] as f64 / 1e6)
}

/// A line of /proc/self/status in kB (`VmHWM`, `VmRSS`).
pub fn proc_status_kb(field: &str) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string("/proc/self/status").context("reading /proc/self/status")?;
    let line = status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .with_context(|| format!("no {field} in /proc/self/status"))?;
    let kb = line.trim().trim_end_matches("kB").trim();
    kb.parse().with_context(|| format!("{field}: {kb:?} is not a number"))
}
