//! A produce/consume workload of unique items under faults, and the checks
//! that follow it: nothing lost, duplicates within the bound, no lock left.

use std::path::{Path, PathBuf};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use zk_queue::{QueueBuilder, StringSerializer, ZkClient};

use super::worker::Tally;

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
}

/// Holds a producer back until the consumers writing to `dir` have finished
/// all but `ahead` of the items put so far, so that work (and with it the
/// requests faults aim at) lasts as long as the run.
pub struct Gate {
    pub dir: PathBuf,
    pub ahead: usize,
}

impl Gate {
    fn wait(&self, put: usize) {
        while Tally::read(&self.dir).finished.len() + self.ahead < put {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Producer {
    /// Puts `count` items, one every `pace`, through its own client of `connect`.
    pub fn start(connect: &str, queue: &str, count: usize, pace: Duration) -> Producer {
        Producer::start_gated(connect, queue, count, pace, None)
    }

    /// As [`start`](Self::start), holding back at `gate`.
    pub fn start_gated(connect: &str, queue: &str, count: usize, pace: Duration, gate: Option<Gate>) -> Producer {
        let (connect, queue) = (connect.to_owned(), queue.to_owned());
        let handle = std::thread::spawn(move || {
            let client = ZkClient::builder(&connect)
                .session_timeout(Duration::from_secs(20))
                .connection_timeout(Duration::from_secs(20))
                .request_timeout(Duration::from_secs(5))
                .connect()
                .expect("the producer connects");
            let producer = QueueBuilder::new(&client, &queue, StringSerializer)
                .put_in_background(false)
                .build_queue()
                .expect("the producer's queue");
            let mut produced = Produced {
                items: Vec::with_capacity(count),
                ambiguous: 0,
                resent: 0,
            };
            for i in 0..count {
                if let Some(gate) = &gate {
                    gate.wait(i);
                }
                let item = format!("item-{i}");
                let deadline = Instant::now() + Duration::from_secs(120);
                while let Err(e) = producer.put(item.clone()) {
                    assert!(Instant::now() < deadline, "{item} could not be stored: {e}");
                    produced.ambiguous += 1;
                    std::thread::sleep(Duration::from_millis(100));
                }
                produced.items.push(item);
                std::thread::sleep(pace);
            }
            produced.resent = usize::try_from(producer.stats().puts_resent).unwrap_or(usize::MAX);
            produced
        });
        Producer { handle }
    }

    /// Waits for every item to be stored.
    pub fn join(self) -> Produced {
        self.handle.join().expect("the producer")
    }
}

/// Waits until every produced item was finished, the queue is empty and no
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
            let lost: Vec<&String> = produced.iter().filter(|p| !tally.finished.contains_key(*p)).collect();
            panic!(
                "after {within:?}: {finished} of {} items finished; never finished: {lost:?}; \
                 left in the queue: {items:?}; locks left: {held:?}",
                produced.len()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The most duplicates lock-safe consumers may deliver: each killed process
/// and each expired session gives up at most `claim_window` leases, whose
/// items may have been finished but not acknowledged; each put tried again
/// may have stored its item twice.
pub fn duplicate_bound(claim_window: usize, kills: usize, sessions_lost: usize, ambiguous_puts: usize) -> usize {
    claim_window * (kills + sessions_lost) + ambiguous_puts
}

/// Prints the run's figures and asserts its duplicates stay within `bound`.
pub fn assert_duplicates_within(tally: &Tally, produced: &Produced, bound: usize) {
    println!(
        "{} items, {} duplicates (bound {bound}), {} sessions lost, {} puts tried again, {} resent",
        produced.items.len(),
        tally.duplicates(),
        tally.sessions_lost,
        produced.ambiguous,
        produced.resent
    );
    assert!(
        tally.duplicates() <= bound,
        "{} duplicates, more than {bound}: {tally:?}",
        tally.duplicates()
    );
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
