//! Ports of Curator's `TestDistributedIdQueue`.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use zk_queue::{QueueBuilder, StringSerializer};

use crate::queue::WAIT;
use crate::support::queues::{consumer, producer};
use crate::support::recorder::Recorder;
use crate::support::{client, server::unique_path};

#[test]
fn id_queue_keeps_put_order_and_removes_ids_with_separators() {
    // Curator's testOrdering; and remove of ids containing '/' and '|', which
    // Curator's remove can never match.
    let path = unique_path("ids");
    let client = client();
    let queue = producer(&client, &path).build_id_queue().unwrap();
    let ids: Vec<String> = (0..20).map(|i| format!("job/{i}|{}", fastrand::u32(..))).collect();
    for (i, id) in ids.iter().enumerate() {
        queue.put(i.to_string(), id).unwrap();
    }
    queue.put("dup".into(), &ids[3]).unwrap();
    assert_eq!(queue.remove(&ids[3]).unwrap(), 2);
    assert_eq!(queue.remove(&ids[3]).unwrap(), 0);
    // No item can have the empty id: removing it removes nothing (the 19
    // left are all delivered below).
    assert_eq!(queue.remove("").unwrap(), 0);
    assert!(matches!(
        queue.put("x".into(), ""),
        Err(zk_queue::Error::InvalidArgument(_))
    ));
    let recorder = Recorder::new();
    let _consumer = consumer(&client, &path, &recorder).build_id_queue().unwrap();
    let expected: Vec<String> = (0..20).filter(|i| *i != 3).map(|i| i.to_string()).collect();
    assert_eq!(recorder.wait_for(19, WAIT), expected);
}

#[test]
fn remove_skips_an_item_a_consumer_holds() {
    // Curator's testDeletingWithLock.
    let path = unique_path("ids-held");
    let locks = unique_path("ids-held-locks");
    let client = client();
    let release = std::sync::Arc::new(AtomicBool::new(false));
    let hold = release.clone();
    let _consumer = QueueBuilder::new(&client, &path, StringSerializer)
        .consumer(move |_: String| -> Result<(), zk_queue::ConsumeError> {
            while !hold.load(Ordering::SeqCst) {
                thread::sleep(Duration::from_millis(10));
            }
            Ok(())
        })
        .lock_path(&locks)
        .build_id_queue()
        .unwrap();
    let producer = producer(&client, &path).lock_path(&locks).build_id_queue().unwrap();
    producer.put("held".into(), "id").unwrap();
    let deadline = Instant::now() + WAIT;
    // Wait until the consumer holds it.
    while client.get_children(&locks).map(|(c, _)| c.len()).unwrap_or(0) == 0 {
        assert!(Instant::now() < deadline);
        thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(producer.remove("id").unwrap(), 0, "held items are skipped");
    release.store(true, Ordering::SeqCst);
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
fn remove_right_after_a_background_put_removes_its_item() {
    let path = unique_path("ids-background");
    let client = client();
    // Background puts: `put` returns before the item is stored.
    let queue = QueueBuilder::new(&client, &path, StringSerializer)
        .put_in_background(true)
        .build_id_queue()
        .unwrap();
    for _ in 0..50 {
        queue.put("cancel me".into(), "order-1").unwrap();
    }
    assert_eq!(queue.remove("order-1").unwrap(), 50);
    assert_eq!(queue.len().unwrap(), 0, "nothing is left to deliver");
}
