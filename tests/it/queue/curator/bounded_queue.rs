//! Ports of Curator's `TestBoundedDistributedQueue`.

use std::thread;
use std::time::Duration;

use zk_queue::{QueueBuilder, StringSerializer};

use crate::queue::WAIT;
use crate::support::queues::{consumer, producer};
use crate::support::recorder::Recorder;
use crate::support::{client, server::unique_path, Stop};

#[test]
fn a_bounded_queue_accepts_again_once_a_consumer_makes_room() {
    // Curator's TestBoundedDistributedQueue testSimple, in short.
    let path = unique_path("bounded-room");
    let client = client();
    let producer = QueueBuilder::new(&client, &path, StringSerializer)
        .max_items(1)
        .build_queue()
        .unwrap();
    producer.put("1".into()).unwrap();
    let full = producer
        .put_timeout("2".into(), Duration::from_millis(300))
        .unwrap_err();
    assert_eq!(full.into_inner(), Some("2".to_string()), "the item comes back");
    assert!(producer.try_put("2".into()).unwrap_err().is_full());
    let recorder = Recorder::new();
    let _consumer = consumer(&client, &path, &recorder).build_queue().unwrap();
    for i in 2..=5 {
        producer.put_timeout(i.to_string(), WAIT).unwrap();
    }
    assert_eq!(recorder.wait_for(5, WAIT), ["1", "2", "3", "4", "5"]);
}

#[test]
fn bounded_producers_overshoot_by_at_most_one_item_each() {
    // TestBoundedDistributedQueue testMulti: Curator only asserts at most
    // max_items × producers; we document max_items + producers.
    const PRODUCERS: usize = 4;
    const MAX: usize = 10;
    let path = unique_path("sc-bounded");
    let client = client();
    let recorder = Recorder::new().slow(Duration::from_millis(5));
    let _consumer = consumer(&client, &path, &recorder)
        .lock_path(&unique_path("sc-bounded-locks"))
        .build_queue()
        .unwrap();
    let stop = Stop::new();
    let largest = thread::scope(|s| {
        let _stop = stop.on_drop();
        let sampler = s.spawn(|| {
            let watcher = crate::support::client();
            let mut largest = 0;
            while !stop.stopped() {
                // Back to back, one listing after another: the closest look
                // at the queue's size a client can take.
                if let Ok((names, _)) = watcher.get_children(&path) {
                    largest = largest.max(names.len());
                }
            }
            largest
        });
        let producers: Vec<_> = (0..PRODUCERS)
            .map(|p| {
                let path = &path;
                s.spawn(move || {
                    let client = crate::support::client();
                    let queue = producer(&client, path).max_items(MAX).build_queue().unwrap();
                    for i in 0..100 {
                        queue.put(format!("{p}-{i}")).unwrap();
                    }
                })
            })
            .collect();
        for producer in producers {
            producer.join().unwrap();
        }
        recorder.wait_for(PRODUCERS * 100, WAIT);
        stop.stop();
        sampler.join().unwrap()
    });
    assert!(
        largest <= MAX + PRODUCERS,
        "{largest} items in a queue bounded at {MAX}"
    );
    assert!(largest >= MAX / 2, "the bound was reached ({largest})");
}
