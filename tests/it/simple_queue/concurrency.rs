//! Many producers and consumers on one `SimpleQueue`: nothing lost, nothing twice.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::Duration;

use zk_queue::SimpleQueue;

use crate::support::{client, server::unique_path};

const PRODUCERS: usize = 4;
const CONSUMERS: usize = 4;
const ITEMS: usize = 4_000;

#[test]
fn four_producers_and_four_consumers_consume_every_item_exactly_once() {
    let path = unique_path("mpmc");
    let consumed = AtomicUsize::new(0);
    let per_consumer: Vec<Vec<String>> = thread::scope(|s| {
        for p in 0..PRODUCERS {
            let path = &path;
            s.spawn(move || {
                let queue = SimpleQueue::new(&client(), path).unwrap();
                for i in (p..ITEMS).step_by(PRODUCERS) {
                    queue.offer(format!("{i}").as_bytes()).unwrap();
                }
            });
        }
        let consumers: Vec<_> = (0..CONSUMERS)
            .map(|_| {
                let (path, consumed) = (&path, &consumed);
                s.spawn(move || {
                    let queue = SimpleQueue::new(&client(), path).unwrap();
                    let mut got = Vec::new();
                    while consumed.load(Ordering::SeqCst) < ITEMS {
                        if let Some(item) = queue.take_timeout(Duration::from_millis(200)).unwrap() {
                            consumed.fetch_add(1, Ordering::SeqCst);
                            got.push(String::from_utf8(item).unwrap());
                        }
                    }
                    got
                })
            })
            .collect();
        consumers.into_iter().map(|c| c.join().unwrap()).collect()
    });
    let all: Vec<&String> = per_consumer.iter().flatten().collect();
    let distinct: HashSet<&String> = all.iter().copied().collect();
    assert_eq!(all.len(), ITEMS, "items delivered (duplicates count twice)");
    assert_eq!(distinct.len(), ITEMS, "distinct items delivered");
    let expected: HashSet<String> = (0..ITEMS).map(|i| i.to_string()).collect();
    assert_eq!(distinct, expected.iter().collect());
    // Each producer's items reach any single consumer in the order offered.
    for got in &per_consumer {
        for p in 0..PRODUCERS {
            let mine: Vec<usize> = got
                .iter()
                .map(|s| s.parse().unwrap())
                .filter(|i| i % PRODUCERS == p)
                .collect();
            assert!(
                mine.windows(2).all(|w| w[0] < w[1]),
                "producer {p} out of order: {mine:?}"
            );
        }
    }
    assert!(
        per_consumer.iter().filter(|g| !g.is_empty()).count() > 1,
        "work was shared"
    );
}

#[test]
fn threads_sharing_one_handle_claim_distinct_items() {
    threads_sharing_one_handle_take_each_item_once(0);
}

#[test]
fn threads_sharing_one_prefetching_handle_take_each_item_once() {
    threads_sharing_one_handle_take_each_item_once(16);
}

fn threads_sharing_one_handle_take_each_item_once(prefetch: usize) {
    let queue = SimpleQueue::builder(&client(), &unique_path("shared-handle"))
        .prefetch(prefetch)
        .build()
        .unwrap();
    for i in 0..400 {
        queue.offer(format!("{i}").as_bytes()).unwrap();
    }
    let taken: Vec<Vec<u8>> = thread::scope(|s| {
        let workers: Vec<_> = (0..4)
            .map(|_| {
                s.spawn(|| {
                    let mut got = Vec::new();
                    while let Some(item) = queue.poll().unwrap() {
                        got.push(item);
                    }
                    got
                })
            })
            .collect();
        workers.into_iter().flat_map(|w| w.join().unwrap()).collect()
    });
    let distinct: HashSet<_> = taken.iter().collect();
    assert_eq!((taken.len(), distinct.len()), (400, 400));
}
