//! The rest of Curator's queue test scenarios (`TestDistributedQueue`,
//! `TestDistributedPriorityQueue`, `TestDistributedIdQueue`,
//! `TestBoundedDistributedQueue`), ported to this crate's queues.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use zk_queue::testing::TestingServer;
use zk_queue::{QueueBuilder, StringSerializer};

use crate::support::queues::{consumer, producer};
use crate::support::recorder::Recorder;
use crate::support::{client, client_of, server::unique_path};

const WAIT: Duration = Duration::from_secs(60);

#[test]
fn several_consumer_threads_process_every_item_once() {
    // testCustomExecutor: a pool instead of the direct executor.
    let path = unique_path("sc-threads");
    let client = client();
    let source = producer(&client, &path).build_queue().unwrap();
    for i in 0..300 {
        source.put(i.to_string()).unwrap();
    }
    let recorder = Recorder::new().slow(Duration::from_millis(2));
    let _queue = consumer(&client, &path, &recorder)
        .consumer_threads(4)
        .lock_path(&unique_path("sc-threads-locks"))
        .build_queue()
        .unwrap();
    let got = recorder.wait_for(300, WAIT);
    let distinct: HashSet<&String> = got.iter().collect();
    assert_eq!(distinct.len(), 300);
    thread::sleep(Duration::from_millis(200));
    assert_eq!(recorder.deliveries().len(), 300, "no item dispatched twice");
}

#[test]
fn items_a_failing_consumer_gives_up_go_to_the_healthy_one() {
    // testSafetyWithCrash: consumer 1 fails every item after its tenth.
    let path = unique_path("sc-crash");
    let locks = unique_path("sc-crash-locks");
    let client = client();
    let source = producer(&client, &path).build_queue().unwrap();
    for i in 0..100 {
        source.put(i.to_string()).unwrap();
    }
    let sick = Recorder::new()
        .failing(|_, delivery| delivery >= 10)
        .slow(Duration::from_millis(5));
    let healthy = Recorder::new().slow(Duration::from_millis(5));
    let (sick_client, healthy_client) = (client.clone(), crate::support::client());
    let _one = consumer(&sick_client, &path, &sick)
        .lock_path(&locks)
        .build_queue()
        .unwrap();
    let _two = consumer(&healthy_client, &path, &healthy)
        .lock_path(&locks)
        .build_queue()
        .unwrap();
    let deadline = Instant::now() + WAIT;
    while sick.items().len() + healthy.items().len() < 100 {
        assert!(Instant::now() < deadline, "not all consumed");
        thread::sleep(Duration::from_millis(20));
    }
    let (done_by_sick, done_by_healthy): (HashSet<String>, HashSet<String>) = (
        sick.items().into_iter().collect(),
        healthy.items().into_iter().collect(),
    );
    assert!(done_by_sick.is_disjoint(&done_by_healthy), "no item consumed by both");
    assert_eq!(done_by_sick.len() + done_by_healthy.len(), 100);
    let failed: HashSet<String> = sick
        .deliveries()
        .into_iter()
        .filter(|d| !done_by_sick.contains(d))
        .collect();
    assert!(
        failed.is_subset(&done_by_healthy),
        "every item the sick consumer failed was consumed"
    );
}

#[test]
fn two_producers_one_consumer_get_every_item_once() {
    // testMultiPutterSingleGetter.
    let path = unique_path("sc-two-producers");
    let client = client();
    let recorder = Recorder::new();
    let _consumer = consumer(&client, &path, &recorder).build_queue().unwrap();
    thread::scope(|s| {
        for range in [0..50, 50..100] {
            let path = &path;
            s.spawn(move || {
                let client = crate::support::client();
                let queue = QueueBuilder::new(&client, path, StringSerializer)
                    .build_queue()
                    .unwrap();
                for i in range {
                    queue.put(i.to_string()).unwrap();
                }
                assert!(queue.flush_timeout(WAIT));
            });
        }
    });
    let got: HashSet<String> = recorder.wait_for(100, WAIT).into_iter().collect();
    assert_eq!(got, (0..100).map(|i| i.to_string()).collect());
}

#[test]
fn flush_puts_reports_pending_puts_until_the_server_answers() {
    // testFlush, with a stalled server instead of an artificially delayed create.
    let server = TestingServer::start().unwrap();
    let client = client_of(&server.connect_string());
    let path = unique_path("sc-flush");
    let queue = QueueBuilder::new(&client, &path, StringSerializer)
        .build_queue()
        .unwrap();
    server.pause().unwrap();
    queue.put("held up".into()).unwrap();
    assert!(
        !queue.flush_timeout(Duration::from_millis(500)),
        "the put is still pending"
    );
    server.resume().unwrap();
    assert!(queue.flush_timeout(WAIT));
    assert_eq!(client.get_children(&path).unwrap().0.len(), 1);
}

#[test]
fn an_urgent_item_put_while_taking_comes_right_after_the_item_in_hand() {
    // testSortingWhileTaking: min 0 and a hand-off consumer (the pull form).
    let path = unique_path("sc-sorting");
    let client = client();
    let source = producer(&client, &path).build_priority_queue(0).unwrap();
    for i in 0..10 {
        source.put(i.to_string(), 10).unwrap();
    }
    let (builder, receiver) = QueueBuilder::new(&client, &path, StringSerializer).pull_consumer();
    let _queue = builder.build_priority_queue(0).unwrap();
    assert_eq!(receiver.take_timeout(WAIT).unwrap().unwrap().ack(), "0");
    source.put("1000".into(), 1).unwrap();
    // "1" was already claimed for the next taker; then the urgent item.
    assert_eq!(receiver.take_timeout(WAIT).unwrap().unwrap().ack(), "1");
    assert_eq!(receiver.take_timeout(WAIT).unwrap().unwrap().ack(), "1000");
}

#[test]
fn a_requeued_id_item_keeps_its_id() {
    // testRequeuingWithLock (CURATOR-224).
    let path = unique_path("sc-id-requeue");
    let client = client();
    let delivered = Arc::new(AtomicUsize::new(0));
    let counter = delivered.clone();
    let _queue = QueueBuilder::new(&client, &path, StringSerializer)
        .consumer(move |_: String| -> Result<(), zk_queue::ConsumeError> {
            counter.fetch_add(1, Ordering::SeqCst);
            thread::sleep(Duration::from_millis(200));
            Err("always fails".into())
        })
        .lock_path(&unique_path("sc-id-requeue-locks"))
        .build_id_queue()
        .unwrap();
    let source = producer(&client, &path).build_id_queue().unwrap();
    source.put("job".into(), "the-id").unwrap();
    let deadline = Instant::now() + WAIT;
    while delivered.load(Ordering::SeqCst) < 2 {
        assert!(Instant::now() < deadline);
        thread::sleep(Duration::from_millis(20));
    }
    let (names, _) = client.get_children(&path).unwrap();
    assert!(names.iter().all(|n| n.starts_with("queue-|the-id|")), "{names:?}");
    assert_eq!(names.len(), 1);
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
    let stop = AtomicBool::new(false);
    let largest = thread::scope(|s| {
        let sampler = s.spawn(|| {
            let watcher = crate::support::client();
            let mut largest = 0;
            while !stop.load(Ordering::SeqCst) {
                if let Ok((names, _)) = watcher.get_children(&path) {
                    largest = largest.max(names.len());
                }
                thread::sleep(Duration::from_millis(2));
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
        stop.store(true, Ordering::SeqCst);
        sampler.join().unwrap()
    });
    assert!(
        largest <= MAX + PRODUCERS,
        "{largest} items in a queue bounded at {MAX}"
    );
    assert!(largest >= MAX / 2, "the bound was reached ({largest})");
}
