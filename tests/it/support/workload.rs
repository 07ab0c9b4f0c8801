//! A produce/consume workload of unique items under faults, and the checks
//! that follow it: every item finished, every duplicate charged to one fault
//! within its bound, no lock left.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use zk_queue::{QueueBuilder, StringSerializer, ZkClient};

use super::tally::{Attribution, Charges, Faults, Tally};

/// A thread putting unique items `item-<i>` into a queue, each retried until
/// stored.
pub struct Producer {
    handle: JoinHandle<Produced>,
    /// Set to end the puts early.
    stop: Arc<AtomicBool>,
}

/// What a producer stored.
#[derive(Debug)]
pub struct Produced {
    pub items: Vec<String>,
    /// Puts that failed and were tried again: each may have stored its item
    /// twice (the put guarantee), so each may add a duplicate.
    pub ambiguous: usize,
    /// The items of those puts (a `put_multi` node holds several).
    pub ambiguous_items: usize,
    /// The most items one put stored in one node.
    pub most_per_node: usize,
    /// Nodes put with more than one item (`put_multi`).
    pub multi_nodes: usize,
    /// Puts the queue sent again itself, after a lost reply whose item the
    /// read-back did not find (`QueueStats::puts_resent`): each may have
    /// stored its item twice, if a consumer took the first copy before the
    /// read-back.
    pub resent: usize,
}

impl Produced {
    /// The most items that puts may have stored under a second node.
    pub fn may_store_twice(&self) -> usize {
        self.ambiguous_items + self.resent * self.most_per_node
    }
}

/// What a producer puts: single items or `put_multi` nodes, plain or with
/// priorities, chosen by a seeded random number generator.
#[derive(Clone, Copy, Debug)]
pub struct Mix {
    /// The most records one node holds (1: `put` only).
    pub records: usize,
    /// Put through a priority queue, each node with a priority in `0..4`.
    pub priority: bool,
    pub seed: u64,
}

impl Mix {
    /// One item per node, no priorities.
    pub const PLAIN: Mix = Mix {
        records: 1,
        priority: false,
        seed: 0,
    };
}

/// What holds a producer back, so that work (and with it the requests
/// faults aim at) lasts as long as the run.
pub enum Gate {
    /// Until the consumers writing to `dir` have begun all but `ahead` of the
    /// items put so far.
    Ahead { dir: PathBuf, ahead: usize },
    /// Until the test allows more: at most as many items as it holds.
    Allowed(Arc<AtomicUsize>),
}

impl Gate {
    fn wait(&self, put: usize, stop: &AtomicBool) {
        let open = || match self {
            Gate::Ahead { dir, ahead } => Tally::read(dir).delivered.len() + ahead > put,
            Gate::Allowed(allowed) => allowed.load(Ordering::Relaxed) > put,
        };
        while !open() && !stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Producer {
    /// Puts `count` items, one every `pace`, through its own client of
    /// `connect`, holding back at `gate`, putting `mix`.
    pub fn start_gated(
        connect: &str,
        queue: &str,
        count: usize,
        pace: Duration,
        gate: Option<Gate>,
        mix: Mix,
    ) -> Producer {
        let (connect, queue) = (connect.to_owned(), queue.to_owned());
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = Arc::clone(&stop);
        let handle = std::thread::spawn(move || {
            let client = ZkClient::builder(&connect)
                .session_timeout(Duration::from_secs(20))
                .connection_timeout(Duration::from_secs(20))
                .request_timeout(Duration::from_secs(5))
                .connect()
                .expect("the producer connects");
            let builder = QueueBuilder::new(&client, &queue, StringSerializer).put_in_background(false);
            let sink = if mix.priority {
                Sink::Priority(builder.build_priority_queue(0).expect("the producer's queue"))
            } else {
                Sink::Plain(builder.build_queue().expect("the producer's queue"))
            };
            let mut rng = SplitMix64::new(mix.seed);
            let mut produced = Produced {
                items: Vec::new(),
                ambiguous: 0,
                ambiguous_items: 0,
                most_per_node: 1,
                multi_nodes: 0,
                resent: 0,
            };
            while produced.items.len() < count {
                if let Some(gate) = &gate {
                    gate.wait(produced.items.len(), &stopping);
                }
                if stopping.load(Ordering::Relaxed) {
                    break;
                }
                let records = (1 + rng.below(mix.records as u64) as usize).min(count - produced.items.len());
                let priority = i32::try_from(rng.below(4)).expect("a small priority");
                let first = produced.items.len();
                let items: Vec<String> = (first..first + records).map(|i| format!("item-{i}")).collect();
                let deadline = Instant::now() + Duration::from_secs(120);
                while let Err(e) = sink.put(items.clone(), priority) {
                    assert!(Instant::now() < deadline, "{items:?} could not be stored: {e}");
                    produced.ambiguous += 1;
                    produced.ambiguous_items += records;
                    std::thread::sleep(Duration::from_millis(100));
                }
                produced.most_per_node = produced.most_per_node.max(records);
                produced.multi_nodes += usize::from(records > 1);
                produced.items.extend(items);
                std::thread::sleep(pace);
            }
            produced.resent = usize::try_from(sink.puts_resent()).unwrap_or(usize::MAX);
            produced
        });
        Producer { handle, stop }
    }

    /// Waits for every item to be stored.
    pub fn join(self) -> Produced {
        self.handle.join().expect("the producer")
    }

    /// Ends the puts after the one under way, and tells what was stored.
    pub fn stop(self) -> Produced {
        self.stop.store(true, Ordering::Relaxed);
        self.join()
    }
}

/// The queue a producer puts into.
enum Sink {
    Plain(zk_queue::DistributedQueue<String>),
    Priority(zk_queue::PriorityQueue<String>),
}

impl Sink {
    /// One node: `put` for one item, `put_multi` for more.
    fn put(&self, mut items: Vec<String>, priority: i32) -> zk_queue::Result<()> {
        match (self, items.len()) {
            (Sink::Plain(queue), 1) => queue.put(items.remove(0)),
            (Sink::Plain(queue), _) => queue.put_multi(items),
            (Sink::Priority(queue), 1) => queue.put(items.remove(0), priority),
            (Sink::Priority(queue), _) => queue.put_multi(items, priority),
        }
    }

    fn puts_resent(&self) -> u64 {
        match self {
            Sink::Plain(queue) => queue.stats().puts_resent,
            Sink::Priority(queue) => queue.stats().puts_resent,
        }
    }
}

/// Waits until the queue is empty and no lock is left (an orphaned lock
/// would keep its item or lock node there), then asserts that every produced
/// item was *finished*: a worker recorded that its work returned `Ok`. A
/// lock-safe item leaves the queue only after its work returned, so an item
/// still unfinished then is lost, however often it was begun. Panics after
/// `within`. Returns the workers' tally.
pub fn drain(client: &ZkClient, queue: &str, locks: &str, dir: &Path, produced: &[String], within: Duration) -> Tally {
    let deadline = Instant::now() + within;
    loop {
        let items = client.get_children(queue).map(|(c, _)| c).unwrap_or_default();
        let held = client.get_children(locks).map(|(c, _)| c).unwrap_or_default();
        let tally = Tally::read(dir);
        if items.is_empty() && held.is_empty() {
            assert_finished(&tally, produced);
            return tally;
        }
        if Instant::now() >= deadline {
            let unfinished = tally.unfinished(produced);
            panic!(
                "after {within:?}: {} of {} items finished; unfinished: {unfinished:?}; left in the queue: \
                 {items:?}; locks left: {held:?}",
                produced.len() - unfinished.len(),
                produced.len()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Asserts that a worker finished every item of `produced`; the message
/// names each lost item with who began it.
pub fn assert_finished(tally: &Tally, produced: &[String]) {
    let unfinished = tally.unfinished(produced);
    let begun: Vec<_> = unfinished.iter().map(|item| (item, tally.begun_by(item))).collect();
    assert!(
        unfinished.is_empty(),
        "{} of {} items lost: never finished (item, [(worker, node, begun at)]): {begun:?}",
        unfinished.len(),
        produced.len()
    );
}

/// Asserts that every duplicate of a run of lock-safe consumers is charged to
/// one of the `faults` injected, within its bound, and returns the
/// attribution and the charges:
///
/// - a node delivered again was given up by a worker whose lease a fault
///   ended: a kill of that worker (a node it was handed in its last session)
///   or a session expiry seen on the server (a node handed over in that
///   session); at most `claim_window` nodes per fault and worker. A node
///   given up otherwise fails the run;
/// - the sessions each worker lost are exactly those the faults were seen
///   to expire: a kill, a cut, a restart or a leader change that costs a
///   session fails the run;
/// - an item stored under a second node came from a put that may have
///   stored it twice.
pub fn assert_duplicates_owed(
    tally: &Tally,
    produced: &Produced,
    claim_window: usize,
    faults: &Faults,
) -> (Attribution, Charges) {
    let attribution = tally.attribute();
    let charges = tally.charge(&attribution, &faults.0);
    let per_fault: Vec<(String, usize, usize)> = charges
        .nodes
        .iter()
        .map(|((f, w), nodes)| (faults.0[*f].what.clone(), *w, nodes.len()))
        .collect();
    println!(
        "{} items, {} duplicates: {} deliveries again of {} nodes given up ((fault, worker, nodes): \
         {per_fault:?}), {} items stored twice (at most {}); {} faults, {} kills, {} sessions lost, {} leases \
         lost, {} puts tried again, {} resent",
        produced.items.len(),
        tally.duplicates(),
        attribution.redeliveries,
        attribution.given_up.values().map(BTreeSet::len).sum::<usize>(),
        attribution.stored_twice,
        produced.may_store_twice(),
        faults.0.len(),
        faults.killed().len(),
        tally.sessions_lost(),
        tally.leases_lost(),
        produced.ambiguous,
        produced.resent
    );
    assert!(
        charges.unexplained.is_empty(),
        "deliveries given up that no fault explains (no kill of their worker in the session they were handed over in, \
         no expiry of their session): {:?}",
        charges.unexplained
    );
    let over = charges.over(claim_window, &faults.0);
    assert!(over.is_empty(), "a fault cost more than a window: {over:?}");
    let sessions = tally.sessions_not_owed(&faults.0);
    assert!(
        sessions.is_empty(),
        "sessions lost that no fault was meant to cost, or meant to and did not: {sessions:?}"
    );
    assert!(
        attribution.stored_twice <= produced.may_store_twice(),
        "{} items stored twice, more than the {} puts sent again may store",
        attribution.stored_twice,
        produced.may_store_twice()
    );
    (attribution, charges)
}

/// A small, seeded, repeatable random number generator (splitmix64).
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// How long the server at `addr` (`host:port`) has served: `mntr`'s
/// `zk_uptime`, which starts again when the server starts (and when a
/// member of an ensemble joins a new leader). `None` while it does not
/// serve.
pub fn uptime(addr: &str) -> Option<Duration> {
    use std::io::{Read, Write};
    let addr: std::net::SocketAddr = addr.parse().ok()?;
    let mut stream = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    stream.write_all(b"mntr").ok()?;
    let mut report = String::new();
    stream.read_to_string(&mut report).ok()?;
    report
        .lines()
        .find_map(|line| line.strip_prefix("zk_uptime"))
        .and_then(|ms| ms.trim().parse().ok())
        .map(Duration::from_millis)
}

/// Whether the server at `addr` started since `since`: its uptime, once it
/// serves again (within a minute), is shorter than the time since then.
/// A restart that did not happen leaves the uptime of the server that
/// kept running.
pub fn started_since(addr: &str, since: Instant) -> bool {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(up) = uptime(addr) {
            return up < since.elapsed();
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Whether every marker of `markers` (ephemeral nodes of the sessions they
/// name, see [`super::worker`]) vanished within `within`, as `direct`, a
/// client of the servers themselves, sees: the server expired those
/// sessions.
pub fn sessions_expired(direct: &ZkClient, markers: &[String], within: Duration) -> bool {
    let deadline = Instant::now() + within;
    loop {
        if markers.iter().all(|m| matches!(direct.exists(m), Ok(None))) {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The stated bound on the pick-up after a kill: the items a killed lock-safe
/// consumer had begun are begun again by another within its session timeout
/// (the server expires the session, and its locks with it) and one second
/// (a consumer busy with a backlog lists the lock directory again at most
/// once a second).
pub fn pickup_after_kill(session_timeout: Duration) -> Duration {
    session_timeout + Duration::from_secs(1)
}

/// After worker `victim` was killed at `killed_at` (microseconds since the
/// epoch) and its process is gone, waits until the server expired its last session (its `marker`
/// vanished, as `direct` sees) and every node it had begun in that session
/// and not acknowledged (still in `queue` then, or begun again since) was
/// begun again by another worker. Returns, for each such node, how long
/// after the kill that was, in microseconds.
pub fn wait_picked_up_after_kill(
    dir: &Path,
    direct: &ZkClient,
    queue: &str,
    marker: &str,
    victim: usize,
    killed_at: u64,
) -> Vec<(String, u64)> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let expired = matches!(direct.exists(marker), Ok(None));
        // Listed once the locks are gone, and before the workers' logs are
        // read: a node still there then was not acknowledged, and one
        // acknowledged by then was begun again first, so its new beginning is
        // in the logs read after. (Read the other way round, a node another
        // worker began and acknowledged between the two reads would be
        // neither listed nor seen begun again.)
        let queued: Option<BTreeSet<String>> = expired
            .then(|| direct.get_children(queue).ok())
            .flatten()
            .map(|(names, _)| names.into_iter().collect());
        let tally = Tally::read(dir);
        let log = &tally.workers[&victim];
        let last = log.sessions.last().copied();
        // The victim is gone: what it logged, it began before it died.
        let begun: BTreeSet<&str> = log
            .deliveries
            .iter()
            .filter(|d| Some(d.session) == last)
            .map(|d| d.node.as_str())
            .collect();
        // A node is picked up when another worker begins its first record.
        let mut first_again: HashMap<&str, u64> = HashMap::new();
        for d in tally
            .workers
            .iter()
            .filter(|(w, _)| **w != victim)
            .flat_map(|(_, l)| l.deliveries.iter())
            .filter(|d| d.at_micros > killed_at)
        {
            let at = first_again.entry(d.node.as_str()).or_insert(u64::MAX);
            *at = (*at).min(d.at_micros - killed_at);
        }
        let again = |node: &str| first_again.get(node).copied();
        if let Some(queued) = queued {
            let picked: Vec<(&str, Option<u64>)> = begun.iter().map(|node| (*node, again(node))).collect();
            if picked.iter().all(|(node, p)| p.is_some() || !queued.contains(*node)) {
                return picked
                    .into_iter()
                    .filter_map(|(node, p)| Some((node.to_owned(), p?)))
                    .collect();
            }
        }
        assert!(
            Instant::now() < deadline,
            "after killed worker {victim}: its session expired on the server: {expired}; the nodes it had begun \
             and when another began them again (µs after the kill): {:?}",
            begun.iter().map(|node| (*node, again(node))).collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The nodes that workers gave up with their sessions `expired` (worker,
/// session), as `direct`, a client of the servers themselves, sees once
/// the server expired them and while no worker reaches it: the nodes still
/// in `queue` of which a worker began a record in its expired session. Not
/// acknowledged in that session (the acknowledge is fenced to it), each must
/// be delivered again.
pub fn given_up_with(dir: &Path, direct: &ZkClient, queue: &str, expired: &BTreeMap<usize, i64>) -> BTreeSet<String> {
    let queued: BTreeSet<String> = direct
        .get_children(queue)
        .map(|(names, _)| names.into_iter().collect())
        .unwrap_or_else(|e| panic!("{queue} could not be listed: {e}"));
    let tally = Tally::read(dir);
    expired
        .iter()
        .flat_map(|(w, s)| tally.workers[w].deliveries.iter().filter(move |d| d.session == *s))
        .filter(|d| queued.contains(&d.node))
        .map(|d| d.node.clone())
        .collect()
}

/// After the heal at `healed_at` (microseconds since the epoch) of a
/// blackhole that expired the sessions `expired` (worker, session), waits
/// until a worker began each node of `given_up` again in a live session.
/// Returns, for each, how long after the heal that was, in microseconds.
pub fn wait_picked_up_after_heal(
    dir: &Path,
    given_up: &BTreeSet<String>,
    expired: &BTreeMap<usize, i64>,
    healed_at: u64,
) -> Vec<(String, u64)> {
    let dead: BTreeSet<i64> = expired.values().copied().collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let tally = Tally::read(dir);
        let mut first_again: HashMap<&str, u64> = HashMap::new();
        for d in tally
            .workers
            .values()
            .flat_map(|l| l.deliveries.iter())
            .filter(|d| d.at_micros >= healed_at && !dead.contains(&d.session))
        {
            let at = first_again.entry(d.node.as_str()).or_insert(u64::MAX);
            *at = (*at).min(d.at_micros - healed_at);
        }
        let picked: Vec<(String, Option<u64>)> = given_up
            .iter()
            .map(|node| (node.clone(), first_again.get(node.as_str()).copied()))
            .collect();
        if picked.iter().all(|(_, p)| p.is_some()) {
            return picked.into_iter().filter_map(|(node, p)| Some((node, p?))).collect();
        }
        assert!(
            Instant::now() < deadline,
            "after the heal of a blackhole that expired sessions {expired:x?}: the nodes given up with them and when a \
             worker began them again (µs after the heal): {picked:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Asserts that every node of `pickups` (see [`wait_picked_up_after_kill`])
/// was begun again within [`pickup_after_kill`] of the kill.
pub fn assert_picked_up_in_time(what: &str, pickups: &[(String, u64)], session_timeout: Duration) {
    // The stated bound, with its margin for a loaded machine.
    let bound = super::Bound::of(pickup_after_kill(session_timeout));
    let limit = u64::try_from(bound.allowed().as_micros()).expect("a short bound");
    let late: Vec<&(String, u64)> = pickups.iter().filter(|(_, p)| *p > limit).collect();
    assert!(
        late.is_empty(),
        "{what}: nodes its victim had begun, begun again by another later than {bound} after it \
         ((node, µs after it)): {late:?}"
    );
}
