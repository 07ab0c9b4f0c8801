//! Bad input and hostile data: every row of GUARANTEES.md's "Bad input and
//! hostile data" table has a test in this folder (or names one elsewhere).
//! Bad input gets a typed error before any request, and loses nothing.
//!
//! - `invalid_paths`: invalid and conflicting paths.
//! - `empty_and_oversized`: empty items, no items, items over the packet limit.
//! - `corrupt_and_foreign`: corrupt items and foreign names in the queue.
//! - `deleted_nodes`: the queue, lock or dead-letter node deleted under a
//!   running consumer.
//! - `nodes_with_children`: a node with children among the items.
//! - `long_listings`: more children than one listing reply holds at the
//!   default packet limit.

mod corrupt_and_foreign;
mod deleted_nodes;
mod empty_and_oversized;
mod invalid_paths;
mod long_listings;
mod nodes_with_children;

use std::cell::Cell;
use std::collections::BTreeSet;
use std::time::Duration;

use zk_queue::client::ClientStats;
use zk_queue::{DistributedQueue, ItemReceiver, ZkClient};

use crate::support::queues::producer;
use crate::support::recorder::Recorder;

/// The longest wait for anything a test here waits on.
const WAIT: Duration = Duration::from_secs(30);

/// The children of `path`, sorted.
fn children(client: &ZkClient, path: &str) -> BTreeSet<String> {
    client.get_children(path).unwrap().0.into_iter().collect()
}

/// The requests `client` has sent, by kind: its stats with the time it
/// waited for answers left out. That time is measured, and grows when the
/// answer to a request sent earlier (by a started queue, say) comes, so two
/// snapshots around work that sends nothing may differ in it alone.
fn requests_sent(client: &ZkClient) -> ClientStats {
    let mut stats = client.stats();
    stats.waiting = Duration::ZERO;
    stats
}

/// A started queue at `path` whose puts return once stored, and which
/// sends nothing of its own: no metrics sampler, whose `exists` of the
/// queue node, sent from its own thread once the queue is built, could
/// land among the requests a test counts.
fn started_producer(client: &ZkClient, path: &str) -> DistributedQueue<String> {
    let builder = producer(client, path);
    #[cfg(feature = "metrics")]
    let builder = builder.metrics_interval(Duration::ZERO);
    builder.build_queue().unwrap()
}

/// What a consumer variant under test delivers.
enum Taker {
    /// A callback consumer, and how many of its items were taken already.
    Callback(Recorder, Cell<usize>),
    Pull(ItemReceiver<String>),
}

impl Taker {
    /// The next `n` items delivered.
    fn take(&self, n: usize) -> Vec<String> {
        match self {
            Taker::Callback(recorder, taken) => {
                let from = taken.get();
                taken.set(from + n);
                recorder.wait_for(from + n, WAIT)[from..from + n].to_vec()
            }
            Taker::Pull(receiver) => (0..n)
                .map(|_| {
                    let delivery = receiver.take_timeout(WAIT).unwrap().expect("an item");
                    let item = delivery.item().clone();
                    delivery.ack();
                    item
                })
                .collect(),
        }
    }
}
