//! What the worker processes writing to one directory did, read from their
//! output files (see [`super::worker`]), and to which fault each duplicate
//! and each loss is charged.
//!
//! A worker records an item *before* working on it, as a consumer whose side
//! effect comes first would: every delivery it began counts, so a kill or an
//! expiry mid-item is a duplicate once the item is delivered again. That is
//! the worst case for duplicates, and the case the bounds are about. An item
//! is *finished* only once a worker recorded that its work returned `Ok`
//! (`#done`): an item begun and never finished is lost, however often it was
//! begun.

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
    /// The worker's session when it began it (the one the node was handed
    /// over in).
    pub session: i64,
}

/// One delivery a worker finished: its work returned `Ok`.
#[derive(Clone, Debug)]
pub struct Finished {
    pub item: String,
    pub node: String,
    pub at_micros: u64,
}

/// What one worker process did.
#[derive(Debug, Default)]
pub struct WorkerLog {
    pub deliveries: Vec<Delivery>,
    pub finished: Vec<Finished>,
    /// The sessions that a server said expired under the worker, in order.
    pub sessions_lost: Vec<i64>,
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
    /// How often each item was begun.
    pub delivered: HashMap<String, usize>,
    /// How often each item was finished.
    pub finished: HashMap<String, usize>,
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
            for finished in &log.finished {
                *tally.finished.entry(finished.item.clone()).or_default() += 1;
            }
            tally.workers.insert(number, log);
        }
        tally
    }

    /// Extra deliveries: items begun more than once, counted once per extra
    /// time.
    pub fn duplicates(&self) -> usize {
        self.delivered.values().map(|n| n - 1).sum()
    }

    /// The items of `expected` that no worker finished.
    pub fn unfinished<'a>(&self, expected: &'a [String]) -> Vec<&'a String> {
        expected.iter().filter(|e| !self.finished.contains_key(*e)).collect()
    }

    /// Who began `item`, and when: for a failure message.
    pub fn begun_by(&self, item: &str) -> Vec<(usize, String, u64)> {
        self.workers
            .iter()
            .flat_map(|(w, log)| {
                log.deliveries
                    .iter()
                    .filter(|d| d.item == item)
                    .map(|d| (*w, d.node.clone(), d.at_micros))
            })
            .collect()
    }

    /// Sessions lost by all workers (each counted once).
    pub fn sessions_lost(&self) -> usize {
        self.workers.values().map(|w| w.lost_sessions().len()).sum()
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
        type Begun = (u64, usize, i64);
        let mut by_record: HashMap<(&str, &str), Vec<Begun>> = HashMap::new();
        let mut nodes_of: HashMap<&str, BTreeSet<&str>> = HashMap::new();
        for (&worker, log) in &self.workers {
            for d in &log.deliveries {
                by_record
                    .entry((d.node.as_str(), d.item.as_str()))
                    .or_default()
                    .push((d.at_micros, worker, d.session));
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
            for &(at, worker, session) in &deliveries[..deliveries.len() - 1] {
                let next = deliveries.iter().find(|(t, ..)| *t > at).map_or(at, |(t, ..)| *t);
                attribution.given_up.entry(worker).or_default().insert(node.to_owned());
                attribution.redelivered.push(Redelivered {
                    worker,
                    session,
                    node: node.to_owned(),
                    item: item.to_owned(),
                    at_micros: at,
                    again_at_micros: next,
                });
            }
            // A plain consumer's second delivery needs a claim it logged as ambiguous.
            let ambiguous = deliveries
                .iter()
                .any(|(_, w, _)| self.workers[w].ambiguous_claims.contains(node));
            if ambiguous {
                attribution.ambiguous_claims += deliveries.len() - 1;
            }
        }
        attribution.redelivered.sort_by_key(|r| r.at_micros);
        attribution
    }

    /// Charges every delivery given up (see [`Attribution`]) to the fault
    /// that ended its lease: the expiry of the session it was handed over in,
    /// seen on the server, or the kill of its worker, if it was handed over
    /// in the worker's last session. Any other is unexplained.
    ///
    /// A kill is recorded as beginning just before the signal, so a worker
    /// may still log a delivery after that moment and before it dies: what
    /// counts is the session, not the clock. A worker number is never
    /// reused, so a killed worker logs nothing after its kill.
    pub fn charge(&self, attribution: &Attribution, faults: &[Injected]) -> Charges {
        let mut charges = Charges::default();
        for r in &attribution.redelivered {
            let expired = faults.iter().position(|f| match &f.cost {
                Cost::Expiry { sessions } => sessions.get(&r.worker) == Some(&r.session),
                _ => false,
            });
            let killed = || {
                faults.iter().position(|f| {
                    matches!(f.cost, Cost::Kill { worker } if worker == r.worker)
                        && self.session_of(r.worker) == Some(r.session)
                })
            };
            match expired.or_else(killed) {
                Some(fault) => {
                    charges
                        .nodes
                        .entry((fault, r.worker))
                        .or_default()
                        .insert(r.node.clone());
                    charges.charged.push((fault, r.clone()));
                }
                None => charges.unexplained.push(r.clone()),
            }
        }
        charges
    }

    /// Whether each worker lost exactly the sessions that `faults` were seen
    /// to expire: a message for each worker that lost another, or kept one.
    pub fn sessions_not_owed(&self, faults: &[Injected]) -> Vec<String> {
        let mut expected: BTreeMap<usize, BTreeSet<i64>> = BTreeMap::new();
        for f in faults {
            if let Cost::Expiry { sessions } = &f.cost {
                for (w, s) in sessions {
                    expected.entry(*w).or_default().insert(*s);
                }
            }
        }
        let workers: BTreeSet<usize> = self.workers.keys().chain(expected.keys()).copied().collect();
        workers
            .into_iter()
            .filter_map(|w| {
                let lost = self.workers.get(&w).map(WorkerLog::lost_sessions).unwrap_or_default();
                let owed = expected.remove(&w).unwrap_or_default();
                (lost != owed)
                    .then(|| format!("worker {w} lost sessions {lost:x?}, and the faults expired {owed:x?} of it"))
            })
            .collect()
    }

    /// Charges every item of `produced` that no worker finished to the kill
    /// of the plain consumer whose session deleted (claimed) its node, as the
    /// server's transaction log tells; see [`PlainLosses`].
    pub fn plain_losses(&self, produced: &[String], faults: &[Injected], server: &ServerLog) -> PlainLosses {
        let worker_of: HashMap<i64, usize> = self
            .workers
            .iter()
            .flat_map(|(w, log)| log.sessions.iter().map(move |s| (*s, *w)))
            .collect();
        let mut losses = PlainLosses::default();
        for item in self.unfinished(produced) {
            let nodes = server.nodes_of.get(item.as_str()).cloned().unwrap_or_default();
            let claimers: BTreeSet<Option<usize>> = nodes
                .iter()
                .map(|node| server.deleted_by.get(node).and_then(|s| worker_of.get(s).copied()))
                .collect();
            let kill = |worker: usize| {
                faults
                    .iter()
                    .position(|f| matches!(f.cost, Cost::Kill { worker: w } if w == worker))
            };
            match claimers
                .iter()
                .map(|c| c.and_then(kill))
                .collect::<Option<BTreeSet<usize>>>()
            {
                Some(kills) if !kills.is_empty() => {
                    for kill in kills {
                        losses.by_kill.entry(kill).or_default().insert(item.clone());
                    }
                }
                _ => {
                    let claimed: Vec<(String, Option<i64>)> = nodes
                        .iter()
                        .map(|n| (n.clone(), server.deleted_by.get(n).copied()))
                        .collect();
                    losses.unexplained.push((item.clone(), claimed));
                }
            }
        }
        losses
    }
}

/// What a server's transaction log says of a queue's item nodes.
#[derive(Debug, Default)]
pub struct ServerLog {
    /// The nodes each item was stored in (more than one if a put stored it
    /// twice).
    pub nodes_of: HashMap<String, Vec<String>>,
    /// The session whose delete of each node was applied.
    pub deleted_by: HashMap<String, i64>,
}

impl ServerLog {
    /// Reads the transaction logs in `data_dir` (a server's, or an ensemble
    /// member's, `version-2` folder) for the item nodes of `queue`, whose
    /// data is Curator's item frame of UTF-8 records.
    pub fn read(data_dir: &Path, queue: &str) -> ServerLog {
        let mut server = ServerLog::default();
        let mut logs: Vec<PathBuf> = std::fs::read_dir(data_dir.join("version-2"))
            .expect("the server's transaction logs")
            .map(|e| e.expect("a directory entry").path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("log."))
            })
            .collect();
        logs.sort();
        let prefix = format!("{queue}/");
        for log in logs {
            for (session, txn) in txn_log::read(&log) {
                match txn {
                    txn_log::Txn::Create { path, data } => {
                        let Some(node) = path.strip_prefix(&prefix) else {
                            continue;
                        };
                        let item = zk_queue::inspect::decode_item(zk_queue::inspect::Layout::Curator, &data)
                            .unwrap_or_else(|e| panic!("{path}: {e}"));
                        for record in item.records {
                            let record = String::from_utf8(record).expect("a UTF-8 item");
                            server.nodes_of.entry(record).or_default().push(node.to_owned());
                        }
                    }
                    txn_log::Txn::Delete { path } => {
                        if let Some(node) = path.strip_prefix(&prefix) {
                            server.deleted_by.insert(node.to_owned(), session);
                        }
                    }
                }
            }
        }
        server
    }
}

/// A reader of ZooKeeper's transaction log files (`version-2/log.<zxid>`):
/// the creates and deletes applied, each with the session that sent it.
mod txn_log {
    use std::io::{BufReader, Read};
    use std::path::Path;

    /// `ZKLG`, the magic number of a transaction log file.
    const MAGIC: i32 = 0x5a4b_4c47;
    const CREATE: i32 = 1;
    const DELETE: i32 = 2;
    const MULTI: i32 = 14;
    const CREATE2: i32 = 15;
    const CREATE_CONTAINER: i32 = 19;
    const CREATE_TTL: i32 = 20;

    /// A transaction of interest.
    pub enum Txn {
        Create { path: String, data: Vec<u8> },
        Delete { path: String },
    }

    /// The creates and deletes of the log file at `path`, with their sessions.
    pub fn read(path: &Path) -> Vec<(i64, Txn)> {
        let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut input = BufReader::new(file);
        let mut header = [0; 16];
        input.read_exact(&mut header).expect("a log file header");
        assert_eq!(
            i32::from_be_bytes(header[..4].try_into().unwrap()),
            MAGIC,
            "{} is no transaction log",
            path.display()
        );
        let mut txns = Vec::new();
        loop {
            // Each entry: its checksum, its length and bytes, and `B`. A
            // file is preallocated with zeros: a length of 0 ends it.
            let mut head = [0; 12];
            if input.read_exact(&mut head).is_err() {
                break;
            }
            let len = i32::from_be_bytes(head[8..].try_into().unwrap());
            let Ok(len) = usize::try_from(len) else { break };
            if len == 0 {
                break;
            }
            let mut entry = vec![0; len + 1];
            if input.read_exact(&mut entry).is_err() {
                break;
            }
            let mut r = Reader(&entry[..len]);
            // The header: client (session) id, cxid, zxid, time, type.
            let session = r.long();
            let (_cxid, _zxid, _time) = (r.int(), r.long(), r.long());
            let kind = r.int();
            txns.extend(of_kind(kind, &mut r).into_iter().map(|t| (session, t)));
        }
        txns
    }

    /// The transactions of a record of `kind` (a multi holds several).
    fn of_kind(kind: i32, r: &mut Reader<'_>) -> Vec<Txn> {
        match kind {
            CREATE | CREATE2 | CREATE_CONTAINER | CREATE_TTL => {
                let path = r.string();
                vec![Txn::Create { path, data: r.buffer() }]
            }
            DELETE => vec![Txn::Delete { path: r.string() }],
            MULTI => (0..r.int())
                .flat_map(|_| {
                    let kind = r.int();
                    let data = r.buffer();
                    of_kind(kind, &mut Reader(&data))
                })
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Jute's big-endian encoding.
    struct Reader<'a>(&'a [u8]);

    impl Reader<'_> {
        fn take(&mut self, n: usize) -> &[u8] {
            let (head, rest) = self.0.split_at(n);
            self.0 = rest;
            head
        }

        fn int(&mut self) -> i32 {
            i32::from_be_bytes(self.take(4).try_into().unwrap())
        }

        fn long(&mut self) -> i64 {
            i64::from_be_bytes(self.take(8).try_into().unwrap())
        }

        fn buffer(&mut self) -> Vec<u8> {
            let len = self.int();
            usize::try_from(len).map_or_else(|_| Vec::new(), |n| self.take(n).to_vec())
        }

        fn string(&mut self) -> String {
            String::from_utf8(self.buffer()).expect("a UTF-8 path")
        }
    }
}

impl WorkerLog {
    /// The sessions a server said expired under the worker, each once.
    pub fn lost_sessions(&self) -> BTreeSet<i64> {
        self.sessions_lost.iter().copied().collect()
    }

    /// The nodes of which the worker began a record in `session` and
    /// recorded no end of that record's work (no `#done` after it): of a
    /// worker that is gone, the work it held begun and unfinished when it
    /// died.
    pub fn unfinished_nodes(&self, session: i64) -> BTreeSet<String> {
        self.deliveries
            .iter()
            .filter(|d| d.session == session)
            .filter(|d| {
                !self
                    .finished
                    .iter()
                    .any(|f| f.item == d.item && f.node == d.node && f.at_micros >= d.at_micros)
            })
            .map(|d| d.node.clone())
            .collect()
    }
}

/// A delivery given up unfinished, and when its item was delivered again.
#[derive(Clone, Debug)]
pub struct Redelivered {
    pub worker: usize,
    /// The session it was handed over in.
    pub session: i64,
    pub node: String,
    #[allow(dead_code, reason = "read through `Debug`, in failure messages")]
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

/// A fault a test injected, once its effect was seen.
#[derive(Clone, Debug)]
pub struct Injected {
    /// When it began, in microseconds since the epoch.
    pub at_micros: u64,
    /// What it was, for messages ("restart of member 1").
    pub what: String,
    /// What it may cost the consumers.
    pub cost: Cost,
}

/// What a fault may cost the consumers.
#[derive(Clone, Debug)]
pub enum Cost {
    /// `kill -9` of a worker process: the leases of its last session (at
    /// most a claim window of nodes).
    Kill { worker: usize },
    /// Sessions the server was seen to expire, by worker: each session, and
    /// its leases (at most a claim window of nodes each).
    Expiry { sessions: BTreeMap<usize, i64> },
    /// No session and no lease: a restart, a cut, a leader change, a
    /// blackhole shorter than the session timeout, a lost reply.
    Nothing,
}

/// The faults of a run, in the order they were injected.
#[derive(Debug, Default)]
pub struct Faults(pub Vec<Injected>);

impl Faults {
    /// Records a fault that began at `at_micros`.
    pub fn record(&mut self, at_micros: u64, what: impl Into<String>, cost: Cost) {
        self.0.push(Injected {
            at_micros,
            what: what.into(),
            cost,
        });
    }

    /// The workers killed.
    pub fn killed(&self) -> BTreeSet<usize> {
        self.0
            .iter()
            .filter_map(|f| match f.cost {
                Cost::Kill { worker } => Some(worker),
                _ => None,
            })
            .collect()
    }
}

/// The deliveries given up in a run, each charged to one fault.
#[derive(Debug, Default)]
pub struct Charges {
    /// Per fault (its index in the run's faults) and worker, the nodes given up.
    pub nodes: BTreeMap<(usize, usize), BTreeSet<String>>,
    /// Each delivery given up, with the fault it is charged to.
    pub charged: Vec<(usize, Redelivered)>,
    /// Deliveries given up that no fault explains: each is a broken guarantee.
    pub unexplained: Vec<Redelivered>,
}

impl Charges {
    /// The charges of more than `claim_window` nodes to one fault and worker.
    pub fn over(&self, claim_window: usize, faults: &[Injected]) -> Vec<String> {
        self.nodes
            .iter()
            .filter(|(_, nodes)| nodes.len() > claim_window)
            .map(|((fault, worker), nodes)| {
                format!(
                    "{} cost worker {worker} {} nodes, more than a window of {claim_window}: {nodes:?}",
                    faults[*fault].what,
                    nodes.len()
                )
            })
            .collect()
    }
}

/// The items plain consumers lost, by cause. A plain consumer deletes an
/// item's node when it claims it, so an item is lost when its consumer
/// claimed it and never finished it.
#[derive(Debug, Default)]
pub struct PlainLosses {
    /// Per kill (its index in the run's faults), the items nobody finished
    /// whose nodes its consumer had claimed.
    pub by_kill: BTreeMap<usize, BTreeSet<String>>,
    /// Items nobody finished whose node was claimed by a consumer that was
    /// not killed, or by nobody: each a loss no kill explains.
    pub unexplained: Vec<UnexplainedLoss>,
}

/// An item lost, with its nodes and the session that claimed each.
pub type UnexplainedLoss = (String, Vec<(String, Option<i64>)>);

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
    let number = |field: Option<&str>, what: &str| -> u64 {
        field
            .and_then(|f| f.parse().ok())
            .unwrap_or_else(|| panic!("{}: no {what} in {field:?}", out.display()))
    };
    let session = |field: Option<&str>| -> i64 {
        field
            .and_then(|f| f.parse().ok())
            .unwrap_or_else(|| panic!("{}: no session id in {field:?}", out.display()))
    };
    for line in lines {
        let mut fields = line.split(' ');
        match fields.next() {
            Some("#ready" | "#held") => {}
            Some("#lost") => log.sessions_lost.push(session(fields.next())),
            Some("#lease-lost") => log.leases_lost += 1,
            Some("#session") => log.sessions.push(session(fields.next())),
            Some("#done") => {
                let (item, node) = (fields.next(), fields.next());
                log.finished.push(Finished {
                    item: item.unwrap_or_else(|| panic!("{line:?}: no item")).to_owned(),
                    node: node.unwrap_or_else(|| panic!("{line:?}: no node")).to_owned(),
                    at_micros: number(fields.next(), "time"),
                });
            }
            Some(item) if !item.starts_with('#') => {
                let node = fields.next().unwrap_or_else(|| panic!("{line:?}: no node"));
                log.deliveries.push(Delivery {
                    item: item.to_owned(),
                    node: node.to_owned(),
                    at_micros: number(fields.next(), "time"),
                    session: session(fields.next()),
                });
            }
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
