//! Where the machine's CPU went during a part of the run: how busy all its
//! CPUs were, and how many cores the embedded server and this process used
//! (from `/proc`; Linux only, `None` elsewhere or for a server not started
//! here). On a machine whose CPUs the server and the clients share, a part
//! that keeps every CPU busy is bound by CPU, not by round trips.

use std::time::Instant;

use serde::Serialize;

use super::ceiling::Ceiling;
use super::report::{opt, CaseReport};

/// `/proc` counts CPU time in these ticks per second (`USER_HZ`, 100 on
/// every Linux architecture this runs on).
pub const TICKS_PER_S: f64 = 100.0;

/// What one part used.
#[derive(Clone, Debug, Serialize)]
pub struct CpuUse {
    /// The share of all the machine's CPU time that was busy, 0 to 1.
    pub machine_busy: f64,
    /// Cores the embedded server's JVMs used on average.
    pub server_cores: Option<f64>,
    /// Cores this process used on average (its drain child not included).
    pub bench_cores: f64,
}

/// A meter started at the beginning of a part.
pub struct Meter {
    servers: Vec<u32>,
    at: Instant,
    start: Option<Sample>,
}

struct Sample {
    busy: u64,
    total: u64,
    server: Option<u64>,
    bench: u64,
}

impl Meter {
    /// Starts measuring; `servers` are the embedded server processes.
    pub fn start(servers: &[u32]) -> Meter {
        Meter {
            servers: servers.to_vec(),
            at: Instant::now(),
            start: sample(servers),
        }
    }

    /// What the part used since the start; `None` without `/proc`.
    pub fn stop(self) -> Option<CpuUse> {
        let end = sample(&self.servers)?;
        let start = self.start?;
        let secs = self.at.elapsed().as_secs_f64();
        let total = end.total.saturating_sub(start.total);
        if total == 0 || secs <= 0.0 {
            return None;
        }
        let cores = |ticks: u64| ticks as f64 / TICKS_PER_S / secs;
        Some(CpuUse {
            machine_busy: end.busy.saturating_sub(start.busy) as f64 / total as f64,
            server_cores: match (start.server, end.server) {
                (Some(a), Some(b)) => Some(cores(b.saturating_sub(a))),
                _ => None,
            },
            bench_cores: cores(end.bench.saturating_sub(start.bench)),
        })
    }
}

fn sample(servers: &[u32]) -> Option<Sample> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let fields: Vec<u64> = stat
        .lines()
        .next()?
        .split_whitespace()
        .skip(1)
        .filter_map(|v| v.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal ...
    let total: u64 = fields.iter().take(8).sum();
    let idle = fields.get(3).copied().unwrap_or(0) + fields.get(4).copied().unwrap_or(0);
    let server = if servers.is_empty() {
        None
    } else {
        servers.iter().map(|pid| process_ticks(&pid.to_string())).sum()
    };
    Some(Sample {
        busy: total.saturating_sub(idle),
        total,
        server,
        bench: process_ticks("self")?,
    })
}

/// User and system ticks of a process (`utime` + `stime` of its `stat`).
pub fn process_ticks(pid: &str) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces: the fields follow its closing ')'.
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After ')': state is field 3 of stat(5); utime and stime are 14 and 15.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}

/// Where the CPU went: the ceiling measurements and every case.
pub fn print(json: bool, ceilings: &[Ceiling], cases: &[CaseReport]) {
    if json {
        return;
    }
    let parts = ceilings
        .iter()
        .map(|c| (format!("ceiling {}", c.when), c.cpu.as_ref()))
        .chain(cases.iter().map(|r| (r.case.clone(), r.cpu.as_ref())));
    println!(
        "\nCPU ({} CPUs shared by the server and the benchmark)\n{:<16} {:>13} {:>13} {:>12}",
        std::thread::available_parallelism().map_or(0, usize::from),
        "part",
        "machine busy",
        "server cores",
        "bench cores"
    );
    for (part, cpu) in parts {
        if let Some(cpu) = cpu {
            println!(
                "{part:<16} {:>12.0}% {:>13} {:>12.2}",
                cpu.machine_busy * 100.0,
                opt(cpu.server_cores, |v| format!("{v:.2}")),
                cpu.bench_cores
            );
        }
    }
}
