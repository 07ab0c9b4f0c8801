//! Items a crashed lock-safe consumer abandons (its locks vanish, the items
//! stay) go to a busy consumer at once, not after its backlog.

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use zk_queue::{inspect, ConsumeError, DistributedQueue, QueueBuilder, StringSerializer, ZkClient};

use super::WAIT;
use crate::support::server::unique_path;
use crate::support::{client, eventually, Bound};

/// Items in the backlog behind the abandoned ones.
const BACKLOG: usize = 300;
/// Items each crashing consumer holds.
const HELD: usize = 4;
/// The stated bound: a busy consumer takes abandoned items within a second
/// of their locks vanishing.
const PICKED_UP_WITHIN: Duration = Duration::from_secs(1);

/// Deliveries a consumer saw, and when.
type Seen = Arc<Mutex<Vec<(String, Instant)>>>;

/// A consumer that holds `HELD` items until its client closes.
struct Holder {
    client: ZkClient,
    /// The items it holds (each registered consumer claims from its own
    /// stripe of the queue, not necessarily the head).
    held: Vec<String>,
    _queue: DistributedQueue<String>,
    _release: crossbeam_channel::Sender<()>,
}

fn holder(direct: &ZkClient, path: &str, locks: &str) -> Holder {
    let client = client();
    let (release, held) = crossbeam_channel::unbounded::<()>();
    let queue = QueueBuilder::new(&client, path, StringSerializer)
        .lock_path(locks)
        .claim_window(HELD)
        .consumer(move |_: String| -> Result<(), ConsumeError> {
            let _ = held.recv();
            Err("crashed".into())
        })
        .build_queue()
        .unwrap();
    let listed = || direct.get_children(locks).map(|(l, _)| l).unwrap_or_default();
    let before = listed();
    eventually(WAIT, "the holder locks its items", || {
        listed().len() == before.len() + HELD
    });
    // A lock is named as its item: read what the new ones lock.
    let held = listed()
        .into_iter()
        .filter(|lock| !before.contains(lock))
        .map(|name| {
            let (data, _) = direct.get_data(&format!("{path}/{name}")).unwrap();
            let item = inspect::decode_item(inspect::Layout::Curator, &data).unwrap();
            String::from_utf8(item.records[0].clone()).unwrap()
        })
        .collect();
    Holder {
        client,
        held,
        _queue: queue,
        _release: release,
    }
}

/// Returns once `consumer` sends a listing: busy with a backlog, a
/// lock-safe consumer lists nothing but its lock directory, again and again
/// at most once per check.
fn just_after_a_listing(consumer: &ZkClient) {
    let before = consumer.stats().get_children;
    eventually(WAIT, "the busy consumer lists the lock directory", || {
        consumer.stats().get_children > before
    });
}

/// `holders` consumers lock items in turn; a busy consumer works
/// through the backlog behind them; the holders crash one after another,
/// each once the busy consumer took what the one before abandoned. Each
/// crash's items must reach the busy consumer well before its backlog ends.
fn abandoned_items_reach_a_busy_consumer(name: &str, holders: usize) {
    let (path, locks) = (unique_path(name), unique_path(&format!("{name}-locks")));
    let direct = client();
    let producer = QueueBuilder::new(&direct, &path, StringSerializer)
        .put_in_background(true)
        .build_queue()
        .unwrap();
    for i in 0..holders * HELD + BACKLOG {
        producer.put(format!("job-{i}")).unwrap();
    }
    assert!(producer.flush_timeout(WAIT));
    let doomed: Vec<Holder> = (0..holders).map(|_| holder(&direct, &path, &locks)).collect();

    // B works through the backlog, 15 ms an item: about 5 s of work.
    let seen = Seen::default();
    let b_client = client();
    let b = {
        let seen = Arc::clone(&seen);
        QueueBuilder::new(&b_client, &path, StringSerializer)
            .lock_path(&locks)
            .claim_window(4)
            .consumer(move |item: String| -> Result<(), ConsumeError> {
                std::thread::sleep(Duration::from_millis(15));
                seen.lock().push((item, Instant::now()));
                Ok(())
            })
            .build_queue()
            .unwrap()
    };
    eventually(WAIT, "B is busy with the backlog", || seen.lock().len() >= 20);

    for (n, holder) in doomed.iter().enumerate() {
        // The worst case: B listed the lock directory just now, so its next
        // listing, which finds the locks gone, is a whole check away.
        just_after_a_listing(&b_client);
        // The holder crashes: its session ends, and the server deletes its locks.
        holder.client.close();
        let vanished = Instant::now();
        let held = &holder.held;
        eventually(WAIT, "B takes what the crashed holder held", || {
            let seen = seen.lock();
            held.iter().all(|job| seen.iter().any(|(item, _)| item == job))
        });
        let seen_now = seen.lock().clone();
        let last = held
            .iter()
            .map(|job| seen_now.iter().position(|(item, _)| item == job).unwrap())
            .max()
            .unwrap();
        let picked_up = seen_now[last].1 - vanished;
        eprintln!(
            "holder {n}: abandoned items taken {picked_up:?} after its session closed, with {} of {BACKLOG} backlog items left",
            holders * HELD + BACKLOG - seen_now.len()
        );
        // Not after the backlog: B had most of it still to do.
        assert!(
            last < BACKLOG * 3 / 4,
            "holder {n}: taken as the {last}th delivery, after the backlog (picked up after {picked_up:?})"
        );
        // Within the stated second of the locks vanishing (which covers the
        // items B had in hand, 8 × 15 ms), plus its load margin.
        Bound::of(PICKED_UP_WITHIN).check(format!("holder {n}: the pick-up of its abandoned items"), picked_up);
    }
    eventually(WAIT, "B finishes the backlog", || {
        seen.lock().len() >= holders * HELD + BACKLOG
    });
    b.close();
}

#[test]
fn a_busy_consumer_takes_the_items_a_crashed_consumer_abandoned_within_a_second_of_their_locks_vanishing() {
    abandoned_items_reach_a_busy_consumer("abandoned", 1);
}

#[test]
fn a_busy_consumer_also_takes_the_items_of_a_second_crash_in_the_same_pass() {
    abandoned_items_reach_a_busy_consumer("abandoned-twice", 2);
}
