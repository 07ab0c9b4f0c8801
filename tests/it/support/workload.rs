//! A produce/consume workload of unique items under faults, and the checks
//! that follow it: nothing lost, every duplicate owed to a fault that allows
//! it, no lock left.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use zk_queue::{QueueBuilder, StringSerializer, ZkClient};

use super::tally::{Attribution, Tally};

/// A thread putting unique items `item-<i>` into a queue, each retried until
/// stored.
pub struct Producer {
    handle: JoinHandle<Produced>,
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
    /// Puts that may have stored their item twice.
    pub fn sent_again(&self) -> usize {
        self.ambiguous + self.resent
    }

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

/// Holds a producer back until the consumers writing to `dir` have begun
/// all but `ahead` of the items put so far, so that work (and with it the
/// requests faults aim at) lasts as long as the run.
pub struct Gate {
    pub dir: PathBuf,
    pub ahead: usize,
}

impl Gate {
    fn wait(&self, put: usize) {
        while Tally::read(&self.dir).delivered.len() + self.ahead < put {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Producer {
    /// Puts `count` items, one every `pace`, through its own client of `connect`.
    pub fn start(connect: &str, queue: &str, count: usize, pace: Duration) -> Producer {
        Producer::start_gated(connect, queue, count, pace, None, Mix::PLAIN)
    }

    /// As [`start`](Self::start), holding back at `gate`, putting `mix`.
    pub fn start_gated(
        connect: &str,
        queue: &str,
        count: usize,
        pace: Duration,
        gate: Option<Gate>,
        mix: Mix,
    ) -> Producer {
        let (connect, queue) = (connect.to_owned(), queue.to_owned());
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
                items: Vec::with_capacity(count),
                ambiguous: 0,
                ambiguous_items: 0,
                most_per_node: 1,
                multi_nodes: 0,
                resent: 0,
            };
            while produced.items.len() < count {
                if let Some(gate) = &gate {
                    gate.wait(produced.items.len());
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
        Producer { handle }
    }

    /// Waits for every item to be stored.
    pub fn join(self) -> Produced {
        self.handle.join().expect("the producer")
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

/// Waits until every produced item was delivered, the queue is empty and no
/// lock is left (an orphaned lock would keep its item or lock node there);
/// panics after `within`. Returns the workers' tally.
pub fn drain(client: &ZkClient, queue: &str, locks: &str, dir: &Path, produced: &[String], within: Duration) -> Tally {
    let deadline = Instant::now() + within;
    loop {
        let tally = Tally::read(dir);
        let finished = tally.distinct_of(produced);
        let items = client.get_children(queue).map(|(c, _)| c).unwrap_or_default();
        let held = client.get_children(locks).map(|(c, _)| c).unwrap_or_default();
        if finished == produced.len() && items.is_empty() && held.is_empty() {
            return tally;
        }
        if Instant::now() >= deadline {
            let lost: Vec<&String> = produced.iter().filter(|p| !tally.delivered.contains_key(*p)).collect();
            panic!(
                "after {within:?}: {finished} of {} items delivered; never delivered: {lost:?}; \
                 left in the queue: {items:?}; locks left: {held:?}",
                produced.len()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Asserts that every duplicate of a run of lock-safe consumers is owed to a
/// fault that allows it, and returns the attribution:
///
/// - a node delivered again was given up by a worker that was killed (a
///   member of `killed`) or lost a session, each at most `claim_window`
///   nodes per kill and per lost session: no duplicate from any other worker;
/// - an item stored under a second node came from a put that may have
///   stored it twice.
pub fn assert_duplicates_owed(
    tally: &Tally,
    produced: &Produced,
    claim_window: usize,
    killed: &BTreeSet<usize>,
) -> Attribution {
    let attribution = tally.attribute();
    let leases_of = |worker: usize| {
        let faults = usize::from(killed.contains(&worker)) + tally.workers.get(&worker).map_or(0, |w| w.sessions_lost);
        claim_window * faults
    };
    println!(
        "{} items, {} duplicates: {} deliveries again of {} nodes given up (by worker: {:?}), {} items stored \
         twice (at most {}); {} kills, {} sessions lost, {} leases lost, {} puts tried again, {} resent",
        produced.items.len(),
        tally.duplicates(),
        attribution.redeliveries,
        attribution.given_up.values().map(BTreeSet::len).sum::<usize>(),
        attribution
            .given_up
            .iter()
            .map(|(w, n)| (*w, n.len()))
            .collect::<Vec<_>>(),
        attribution.stored_twice,
        produced.may_store_twice(),
        killed.len(),
        tally.sessions_lost(),
        tally.leases_lost(),
        produced.ambiguous,
        produced.resent
    );
    let unaccounted = attribution.unaccounted(leases_of);
    assert!(
        unaccounted.is_empty(),
        "duplicates not owed to a kill or an expiry: {unaccounted:?}"
    );
    assert!(
        attribution.stored_twice <= produced.may_store_twice(),
        "{} items stored twice, more than the {} puts sent again may store",
        attribution.stored_twice,
        produced.may_store_twice()
    );
    attribution
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
