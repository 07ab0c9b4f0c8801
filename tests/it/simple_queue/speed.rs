//! `SimpleQueue` requests in flight together: a prefetching take claims a
//! window in the round trips of one item, offers from threads sharing a
//! handle and `put_all` batches are pipelined. Each test runs behind a proxy
//! that delays every forwarded chunk, so a round trip costs at least twice
//! [`DELAY`] and serial requests would take many times the bound asserted.
//! What a prefetch costs when a process dies or lets its handle go.

use std::thread;
use std::time::{Duration, Instant};

use zk_queue::testing::FaultProxy;
use zk_queue::SimpleQueue;

use crate::support::server::{shared_connect_string, unique_path};
use crate::support::{self, client};

/// The proxy's delay per forwarded chunk, each way.
const DELAY: Duration = Duration::from_millis(50);

fn items(n: usize) -> Vec<Vec<u8>> {
    (0..n).map(|i| format!("item-{i:03}").into_bytes()).collect()
}

#[test]
fn a_prefetching_take_claims_a_whole_window_in_the_round_trips_of_one_item() {
    const WINDOW: usize = 40;
    let proxy = FaultProxy::start(&shared_connect_string()).unwrap();
    let slow = support::proxied_client(&proxy);
    let path = unique_path("simple-prefetch-window");
    let stored = items(WINDOW);
    let loader = SimpleQueue::new(&client(), &path).unwrap();
    assert!(loader.put_all(&stored).unwrap().iter().all(Result::is_ok));
    let queue = SimpleQueue::builder(&slow, &path).prefetch(WINDOW).build().unwrap();
    proxy.set_delay(DELAY);

    let started = Instant::now();
    let first = queue.take().unwrap();
    let took = started.elapsed();
    eprintln!("a window of {WINDOW} claimed in {took:?}");
    // One by one, the window's reads and deletes are 80 round trips (8 s)
    // behind this proxy; pipelined, a listing, the reads and the deletes.
    assert!(
        took < 40 * DELAY,
        "the first take claimed {WINDOW} items in {took:?}: not pipelined"
    );
    assert_eq!(queue.prefetched(), WINDOW - 1);
    let sent = slow.stats().total();
    let mut got = vec![first];
    for _ in 1..WINDOW {
        got.push(queue.take().unwrap());
    }
    assert_eq!(slow.stats().total(), sent, "the rest came without a request");
    assert_eq!(got, stored, "in order");
    // One multi-read for the window's data, then one multi of its deletes.
    let stats = slow.stats();
    assert_eq!((stats.get_data, stats.multi, stats.delete), (1, 1, 0));
}

#[test]
fn offers_from_eight_threads_sharing_a_handle_are_in_flight_together() {
    const THREADS: usize = 8;
    const EACH: usize = 4;
    let proxy = FaultProxy::start(&shared_connect_string()).unwrap();
    let slow = support::proxied_client(&proxy);
    let path = unique_path("simple-concurrent-offers");
    let queue = SimpleQueue::new(&slow, &path).unwrap();
    queue.put(b"creates the queue node").unwrap();
    proxy.set_delay(DELAY);

    let started = Instant::now();
    thread::scope(|s| {
        for t in 0..THREADS {
            let queue = &queue;
            s.spawn(move || {
                for i in 0..EACH {
                    queue.offer(format!("{t}-{i}").as_bytes()).unwrap();
                }
            });
        }
    });
    let took = started.elapsed();
    eprintln!("{} offers from {THREADS} threads in {took:?}", THREADS * EACH);
    // One at a time, 32 creates are 32 round trips (3.2 s).
    let serial = 2 * DELAY * (THREADS * EACH) as u32;
    assert!(
        took < serial / 2,
        "{} offers took {took:?}: not in flight together",
        THREADS * EACH
    );
    assert_eq!(queue.len().unwrap(), THREADS * EACH + 1);
}

#[test]
fn put_all_sends_a_batch_at_once_and_stores_it_in_order() {
    const BATCH: usize = 50;
    let proxy = FaultProxy::start(&shared_connect_string()).unwrap();
    let slow = support::proxied_client(&proxy);
    let path = unique_path("simple-put-all");
    let queue = SimpleQueue::new(&slow, &path).unwrap();
    proxy.set_delay(DELAY);

    let stored = items(BATCH);
    let started = Instant::now();
    // The first sends find the queue node missing, create it and send again.
    let results = queue.put_all(&stored).unwrap();
    let took = started.elapsed();
    eprintln!("put_all of {BATCH} items in {took:?}");
    assert!(took < 40 * DELAY, "{BATCH} items took {took:?}: not pipelined");
    let nodes: Vec<String> = results.into_iter().map(Result::unwrap).collect();
    assert!(
        nodes.windows(2).all(|w| w[0] < w[1]),
        "sequence follows the slice: {nodes:?}"
    );
    proxy.set_delay(Duration::ZERO);
    let reader = SimpleQueue::new(&client(), &path).unwrap();
    let got: Vec<Vec<u8>> = std::iter::from_fn(|| reader.try_take().unwrap()).collect();
    assert_eq!(got, stored);
}

#[test]
fn a_dropped_prefetching_handle_hands_its_claimed_items_back_in_order() {
    let path = unique_path("simple-prefetch-release");
    let stored = items(10);
    let direct = client();
    let queue = SimpleQueue::builder(&direct, &path).prefetch(10).build().unwrap();
    assert!(queue.put_all(&stored).unwrap().iter().all(Result::is_ok));
    assert_eq!(queue.take().unwrap(), stored[0]);
    assert_eq!(queue.prefetched(), 9);
    assert!(
        direct.get_children(&path).unwrap().0.is_empty(),
        "claimed: gone from ZooKeeper"
    );
    assert_eq!(queue.len().unwrap(), 9, "len counts the items held");
    assert_eq!(queue.peek().unwrap().as_deref(), Some(stored[1].as_slice()));
    drop(queue);

    let other = SimpleQueue::new(&client(), &path).unwrap();
    let got: Vec<Vec<u8>> = std::iter::from_fn(|| other.try_take().unwrap()).collect();
    assert_eq!(got, stored[1..]);
}

#[test]
fn a_crashed_prefetching_consumer_loses_its_window_and_no_more() {
    const PREFETCH: usize = 10;
    let path = unique_path("simple-prefetch-crash");
    let direct = client();
    let loader = SimpleQueue::new(&direct, &path).unwrap();
    assert!(loader.put_all(&items(3 * PREFETCH)).unwrap().iter().all(Result::is_ok));
    let queue = SimpleQueue::builder(&direct, &path).prefetch(PREFETCH).build().unwrap();
    queue.take().unwrap();
    // A crash: the handle never runs its drop.
    std::mem::forget(queue);
    let left = loader.len().unwrap();
    assert_eq!(left, 2 * PREFETCH, "one window gone (one item taken, the rest lost)");
}
