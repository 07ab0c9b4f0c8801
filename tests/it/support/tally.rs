//! What the worker processes writing to one directory did, read from their
//! output files (see [`super::worker`]), and to whom each duplicate is owed.
//!
//! A worker records an item *before* working on it, as a consumer whose side
//! effect comes first would: every delivery it began counts, so a kill or an
//! expiry mid-item is a duplicate once the item is delivered again. That is
//! the worst case for duplicates, and the case the bounds are about.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

/// The log line of a plain consumer that delivers an item whose claiming
/// delete it could not confirm (see `engine/claim.rs`).
const AMBIGUOUS_CLAIM: &str = ": a claiming delete's reply was lost and the item is gone";

/// One delivery a worker began.
#[derive(Clone, Debug)]
pub struct Delivery {
    pub item: String,
    /// The node the item came from (its records share it).
    pub node: String,
    /// When the worker began it, in microseconds since the epoch.
    pub at_micros: u64,
}

/// What one worker process did.
#[derive(Debug, Default)]
pub struct WorkerLog {
    pub deliveries: Vec<Delivery>,
    /// Sessions that expired under the worker.
    pub sessions_lost: usize,
    /// Acknowledges fenced off because the lease was lost.
    pub leases_lost: usize,
    /// The sessions the worker had, in order.
    pub sessions: Vec<i64>,
    /// Nodes a plain consumer delivered without knowing its claim was its own.
    pub ambiguous_claims: BTreeSet<String>,
}

/// What the workers writing to `dir` did, all together.
#[derive(Debug, Default)]
pub struct Tally {
    /// Each worker's log, by worker number.
    pub workers: BTreeMap<usize, WorkerLog>,
    /// How often each item was delivered.
    pub delivered: HashMap<String, usize>,
}

impl Tally {
    pub fn read(dir: &Path) -> Tally {
        let mut tally = Tally::default();
        let outs: Vec<PathBuf> = std::fs::read_dir(dir)
            .expect("the workers' directory")
            .map(|e| e.expect("a directory entry").path())
            .filter(|p| p.extension().is_some_and(|e| e == "out"))
            .collect();
        for out in outs {
            let Some(number) = worker_number(&out) else {
                continue;
            };
            let log = read_log(&out);
            for delivery in &log.deliveries {
                *tally.delivered.entry(delivery.item.clone()).or_default() += 1;
            }
            tally.workers.insert(number, log);
        }
        tally
    }

    /// Extra deliveries: items delivered more than once, counted once per
    /// extra time.
    pub fn duplicates(&self) -> usize {
        self.delivered.values().map(|n| n - 1).sum()
    }

    /// How many distinct items of `expected` were delivered.
    pub fn distinct_of<'a>(&self, expected: impl IntoIterator<Item = &'a String>) -> usize {
        expected.into_iter().filter(|e| self.delivered.contains_key(*e)).count()
    }

    /// Sessions lost by all workers.
    pub fn sessions_lost(&self) -> usize {
        self.workers.values().map(|w| w.sessions_lost).sum()
    }

    /// Leases lost by all workers.
    pub fn leases_lost(&self) -> usize {
        self.workers.values().map(|w| w.leases_lost).sum()
    }

    /// The current session of worker `n`.
    pub fn session_of(&self, n: usize) -> Option<i64> {
        self.workers.get(&n).and_then(|w| w.sessions.last().copied())
    }

    /// Sorts every duplicate by its cause; see [`Attribution`].
    pub fn attribute(&self) -> Attribution {
        let mut by_record: HashMap<(&str, &str), Vec<(u64, usize)>> = HashMap::new();
        let mut nodes_of: HashMap<&str, BTreeSet<&str>> = HashMap::new();
        for (&worker, log) in &self.workers {
            for d in &log.deliveries {
                by_record
                    .entry((d.node.as_str(), d.item.as_str()))
                    .or_default()
                    .push((d.at_micros, worker));
                nodes_of.entry(d.item.as_str()).or_default().insert(d.node.as_str());
            }
        }
        let mut attribution = Attribution {
            stored_twice: nodes_of.values().map(|nodes| nodes.len() - 1).sum(),
            ..Attribution::default()
        };
        for ((node, item), mut deliveries) in by_record {
            if deliveries.len() < 2 {
                continue;
            }
            deliveries.sort_unstable();
            attribution.redeliveries += deliveries.len() - 1;
            // Every delivery but the last was given up unfinished by its worker.
            for &(at, worker) in &deliveries[..deliveries.len() - 1] {
                let next = deliveries.iter().find(|(t, _)| *t > at).map_or(at, |(t, _)| *t);
                attribution.given_up.entry(worker).or_default().insert(node.to_owned());
                attribution.redelivered.push(Redelivered {
                    worker,
                    node: node.to_owned(),
                    item: item.to_owned(),
                    at_micros: at,
                    again_at_micros: next,
                });
            }
            // A plain consumer's second delivery needs a claim it logged as ambiguous.
            let ambiguous = deliveries
                .iter()
                .any(|(_, w)| self.workers[w].ambiguous_claims.contains(node));
            if ambiguous {
                attribution.ambiguous_claims += deliveries.len() - 1;
            }
        }
        attribution.redelivered.sort_by_key(|r| r.at_micros);
        attribution
    }
}

/// A delivery given up unfinished, and when its item was delivered again.
#[derive(Clone, Debug)]
pub struct Redelivered {
    pub worker: usize,
    pub node: String,
    pub item: String,
    pub at_micros: u64,
    pub again_at_micros: u64,
}

/// Every duplicate of a run, by cause.
///
/// A duplicate is either the same record of the same node delivered again (a
/// lease given up unfinished, or a plain consumer's ambiguous claim), or the
/// same item stored under a second node (a put stored twice). The two kinds
/// add up to [`Tally::duplicates`].
#[derive(Debug, Default)]
pub struct Attribution {
    /// Deliveries of a node's record after its first.
    pub redeliveries: usize,
    /// Per worker, the nodes it began and another delivery followed: the
    /// leases it gave up unfinished.
    pub given_up: BTreeMap<usize, BTreeSet<String>>,
    /// Every delivery given up, oldest first.
    pub redelivered: Vec<Redelivered>,
    /// Redeliveries of nodes one of whose deliverers logged an ambiguous claim.
    pub ambiguous_claims: usize,
    /// Items stored under more than one node, counted once per extra node.
    pub stored_twice: usize,
}

impl Attribution {
    /// The duplicates owed to workers that `may_give_up` does not excuse,
    /// or that gave up more than `leases_of(worker)` nodes: each is a broken
    /// guarantee. Empty when every duplicate is accounted for.
    pub fn unaccounted(&self, leases_of: impl Fn(usize) -> usize) -> Vec<String> {
        self.given_up
            .iter()
            .filter(|(&worker, nodes)| nodes.len() > leases_of(worker))
            .map(|(worker, nodes)| {
                format!(
                    "worker {worker} gave up {} leases, more than the {} its faults allow: {nodes:?}",
                    nodes.len(),
                    leases_of(*worker)
                )
            })
            .collect()
    }
}

/// Now, in microseconds since the epoch: the clock deliveries are recorded by.
pub fn now_micros() -> u64 {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    u64::try_from(since.expect("a clock after 1970").as_micros()).expect("micros fit")
}

fn worker_number(out: &Path) -> Option<usize> {
    out.file_stem()?.to_str()?.strip_prefix("worker-")?.parse().ok()
}

/// The log of worker `n` writing to `dir` (empty before it wrote one).
pub fn read_worker(dir: &Path, n: usize) -> WorkerLog {
    read_log(&dir.join(format!("worker-{n}.out")))
}

fn read_log(out: &Path) -> WorkerLog {
    let text = std::fs::read_to_string(out).unwrap_or_default();
    let mut log = WorkerLog::default();
    let mut lines: Vec<&str> = text.lines().collect();
    // A worker killed while writing leaves a partial last line.
    if !text.ends_with('\n') {
        lines.pop();
    }
    for line in lines {
        let mut fields = line.split(' ');
        match (fields.next(), fields.next(), fields.next()) {
            (Some("#ready"), ..) => {}
            (Some("#lost"), ..) => log.sessions_lost += 1,
            (Some("#lease-lost"), ..) => log.leases_lost += 1,
            (Some("#session"), Some(id), _) => log.sessions.push(id.parse().expect("a session id")),
            (Some(item), Some(node), Some(at)) => log.deliveries.push(Delivery {
                item: item.to_owned(),
                node: node.to_owned(),
                at_micros: at.parse().expect("a time"),
            }),
            _ => panic!("{}: unexpected line {line:?}", out.display()),
        }
    }
    let stderr = std::fs::read_to_string(out.with_extension("err")).unwrap_or_default();
    for line in stderr.lines() {
        if let Some(path) = line.find(AMBIGUOUS_CLAIM).map(|end| &line[..end]) {
            let node = path.rsplit('/').next().unwrap_or(path);
            log.ambiguous_claims.insert(node.to_owned());
        }
    }
    log
}
