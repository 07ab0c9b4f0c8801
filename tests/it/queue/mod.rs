//! The Curator-style queues (`QueueBuilder`) against a real server.
//!
//! - `curator/`: ports of Apache Curator's queue tests, one file per Curator
//!   test class.
//! - `producing`, `consuming`: what those ports leave out: Curator's bugs we
//!   do not have, and this crate's own options.
//! - `pull`, `pull_window`, `stats`, `dead_letters`, `raw`, `removing`: the
//!   pull consumer (and how many deliveries its takers may hold), a handle's
//!   statistics, `DeadLetters`, `RawQueue`, and `IdQueue::remove` against
//!   held items.
//! - `fences`: the fence on a lock-safe consumer's lease (creation zxid,
//!   version, session) as a whole.
//! - `curator_interop`: queues shared with Curator itself, in Java.

mod arrivals;
mod backoff;
mod batched_writes;
mod claim_windows;
mod coalescing;
mod competing;
mod consuming;
mod curator;
mod curator_interop;
mod dead_letter_batches;
mod dead_letters;
mod fences;
mod lock_windows;
mod metadata;
mod plain_arrivals;
mod producing;
mod pull;
mod pull_window;
mod raw;
mod read_ahead;
mod removing;
mod requeue_batches;
mod sharded;
mod sharded_bound;
mod stats;
mod stripes;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use zk_queue::{DeliverAt, Error, PutListener, QueueBuilder, StringSerializer, ZkClient};

use crate::support::queues::producer;

/// The longest wait for anything the Curator ports and the tests beside them
/// wait on.
const WAIT: Duration = Duration::from_secs(60);

/// `n` items: `prefix` followed by 0, 1, 2 and so on.
fn items(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i}")).collect()
}

/// A started plain queue whose puts return once stored.
fn plain(client: &ZkClient, path: &str) -> zk_queue::DistributedQueue<String> {
    producer(client, path).build_queue().unwrap()
}

/// Counts the items of finished puts: stored, then failed.
struct CountingListener(Arc<AtomicUsize>, Arc<AtomicUsize>);
impl PutListener<String> for CountingListener {
    fn put_completed(&self, items: &[String]) {
        self.0.fetch_add(items.len(), Ordering::SeqCst);
    }
    fn put_failed(&self, items: &[String], _error: &Error) {
        self.1.fetch_add(items.len(), Ordering::SeqCst);
    }
}

/// A started queue with background puts and a listener counting
/// (stored, failed) items.
fn counted(client: &ZkClient, path: &str) -> (zk_queue::DistributedQueue<String>, Arc<AtomicUsize>, Arc<AtomicUsize>) {
    let queue = QueueBuilder::new(client, path, StringSerializer)
        .put_in_background(true)
        .build_queue()
        .unwrap();
    let (done, failed) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    queue.add_put_listener(CountingListener(done.clone(), failed.clone()));
    (queue, done, failed)
}

/// The moment `ms` milliseconds from now (before now if `ms` is negative).
fn in_millis(ms: i64) -> DeliverAt {
    let now = SystemTime::now();
    let at = if ms >= 0 {
        now + Duration::from_millis(ms as u64)
    } else {
        now - Duration::from_millis(ms.unsigned_abs())
    };
    DeliverAt::from(at)
}
