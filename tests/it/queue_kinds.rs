//! Priority, delay, id and bounded queues: ports of Curator's
//! `TestDistributedPriorityQueue`, `TestDistributedDelayQueue`,
//! `TestDistributedIdQueue` and `TestBoundedDistributedQueue`, and the bugs we
//! do not have.

use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant, SystemTime};

use zk_queue::testing::TestingServer;
use zk_queue::{ConnectionState, CreateMode, DeliverAt, QueueBuilder, StringSerializer};

use crate::support::queues::{consumer, producer};
use crate::support::recorder::Recorder;
use crate::support::{client, client_of, server::unique_path};

const WAIT: Duration = Duration::from_secs(30);

fn in_millis(ms: i64) -> DeliverAt {
    let now = SystemTime::now();
    let at = if ms >= 0 {
        now + Duration::from_millis(ms as u64)
    } else {
        now - Duration::from_millis(ms.unsigned_abs())
    };
    DeliverAt::from(at)
}

#[test]
fn priority_queue_delivers_lower_priorities_first_over_the_whole_range() {
    // Curator's testSimple: random priorities, value = priority.
    let path = unique_path("prio-range");
    let client = client();
    let producer = producer(&client, &path).build_priority_queue(0).unwrap();
    let mut priorities: Vec<i32> = (0..100).map(|_| fastrand::i32(..)).collect();
    priorities.extend([i32::MIN, i32::MAX, 0, -1, 1]);
    for p in &priorities {
        producer.put(p.to_string(), *p).unwrap();
    }
    let recorder = Recorder::new();
    let _consumer = consumer(&client, &path, &recorder).build_priority_queue(0).unwrap();
    let got: Vec<i32> = recorder
        .wait_for(priorities.len(), WAIT)
        .iter()
        .map(|s| s.parse().unwrap())
        .collect();
    priorities.sort();
    assert_eq!(got, priorities);
}

#[test]
fn equal_priorities_come_out_in_put_order() {
    let path = unique_path("prio-fifo");
    let client = client();
    let producer = producer(&client, &path).build_priority_queue(1).unwrap();
    for i in 0..20 {
        producer.put(format!("{}-{i}", i % 2), i % 2).unwrap();
    }
    let recorder = Recorder::new();
    let _consumer = consumer(&client, &path, &recorder).build_priority_queue(1).unwrap();
    let got = recorder.wait_for(20, WAIT);
    let expected: Vec<String> = (0..20)
        .filter(|i| i % 2 == 0)
        .chain((0..20).filter(|i| i % 2 == 1))
        .map(|i| format!("{}-{i}", i % 2))
        .collect();
    assert_eq!(got, expected);
}

#[test]
fn a_late_urgent_item_overtakes_after_min_items_before_refresh() {
    // Curator's testMinItemsBeforeRefresh: min = 3, ten items at priorities
    // 10..19; an item put at priority 1 after the first is taken comes out
    // within the next few.
    let path = unique_path("prio-refresh");
    let client = client();
    let producer = producer(&client, &path).build_priority_queue(3).unwrap();
    for i in 0..10 {
        producer.put(i.to_string(), 10 + i).unwrap();
    }
    // Slow enough that a put delayed by load still lands within a few items.
    let recorder = Recorder::new().slow(Duration::from_millis(300));
    let _consumer = consumer(&client, &path, &recorder).build_priority_queue(3).unwrap();
    recorder.wait_for(1, WAIT);
    producer.put("urgent".into(), 1).unwrap();
    let got = recorder.wait_for(11, WAIT);
    let position = got.iter().position(|s| s == "urgent").unwrap();
    assert!(position > 0 && position < 6, "urgent came out at {position}: {got:?}");
}

#[test]
fn a_requeued_item_keeps_its_priority() {
    // Curator requeues as plain `queue-<seq>`, which sorts before every
    // priority name: the failed low-priority item would jump the queue.
    let path = unique_path("prio-requeue");
    let client = client();
    let (started_tx, started_rx) = crossbeam_channel::bounded::<()>(1);
    let (go_tx, go_rx) = crossbeam_channel::bounded::<()>(1);
    let seen = std::sync::Arc::new(parking_lot::Mutex::new(Vec::new()));
    let record = seen.clone();
    let _consumer = QueueBuilder::new(&client, &path, StringSerializer)
        .consumer(move |item: String| -> Result<(), zk_queue::ConsumeError> {
            let first = !record.lock().contains(&item);
            record.lock().push(item.clone());
            if item == "low" && first {
                // Fail only after the urgent items exist.
                let _ = started_tx.send(());
                let _ = go_rx.recv_timeout(WAIT);
                return Err("first delivery fails".into());
            }
            Ok(())
        })
        .lock_path(&unique_path("prio-requeue-locks"))
        .build_priority_queue(1)
        .unwrap();
    let producer = producer(&client, &path).build_priority_queue(1).unwrap();
    producer.put("low".into(), 100).unwrap();
    started_rx.recv_timeout(WAIT).unwrap();
    for i in 0..5 {
        producer.put(format!("high-{i}"), 1).unwrap();
    }
    go_tx.send(()).unwrap();
    let deadline = Instant::now() + WAIT;
    while seen.lock().len() < 7 {
        assert!(Instant::now() < deadline, "{:?}", seen.lock());
        thread::sleep(Duration::from_millis(20));
    }
    let expected = ["low", "high-0", "high-1", "high-2", "high-3", "high-4", "low"];
    assert_eq!(*seen.lock(), expected, "the requeued item keeps priority 100");
}

#[test]
fn delay_queue_holds_items_until_due_then_orders_by_due_time() {
    // Curator's testBasic, testLateAddition and testSorting (shuffled due times).
    let path = unique_path("delay");
    let client = client();
    let producer = producer(&client, &path).build_delay_queue().unwrap();
    let base = in_millis(-10_000).epoch_millis();
    let mut order: Vec<i64> = (0..50).collect();
    fastrand::shuffle(&mut order);
    for i in &order {
        producer
            .put(i.to_string(), DeliverAt::from_epoch_millis(base + i).unwrap())
            .unwrap();
    }
    producer.put("far future".into(), in_millis(i32::MAX as i64)).unwrap();
    producer.put("soon".into(), in_millis(1_500)).unwrap();
    let recorder = Recorder::new();
    let _consumer = QueueBuilder::new(&client, &path, StringSerializer)
        .consumer(recorder.clone())
        .build_delay_queue()
        .unwrap();
    let started = Instant::now();
    let due: Vec<String> = recorder.wait_for(50, WAIT);
    assert_eq!(
        due,
        (0..50).map(|i| i.to_string()).collect::<Vec<_>>(),
        "due order, not put order"
    );
    let got = recorder.wait_for(51, WAIT);
    assert_eq!(got[50], "soon");
    assert!(
        started.elapsed() >= Duration::from_millis(1_400),
        "delivered early: {:?}",
        started.elapsed()
    );
    thread::sleep(Duration::from_millis(500));
    assert_eq!(recorder.items().len(), 51, "the far-future item is not delivered");
}

#[test]
fn delay_items_due_at_the_same_time_come_out_in_put_order() {
    let path = unique_path("delay-ties");
    let client = client();
    let producer = producer(&client, &path).build_delay_queue().unwrap();
    let at = in_millis(-1_000);
    for i in 0..30 {
        producer.put(i.to_string(), at).unwrap();
    }
    let recorder = Recorder::new();
    let _consumer = consumer(&client, &path, &recorder).build_delay_queue().unwrap();
    assert_eq!(
        recorder.wait_for(30, WAIT),
        (0..30).map(|i| i.to_string()).collect::<Vec<_>>()
    );
}

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
    assert!(queue.remove("").is_ok());
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
fn put_timeout_on_a_full_queue_honours_its_deadline_under_churn() {
    // Curator restarts maxWait on every child change: 1 s became 6 s.
    let path = unique_path("bounded");
    let client = client();
    let queue = QueueBuilder::new(&client, &path, StringSerializer)
        .max_items(2)
        .build_queue()
        .unwrap();
    queue.put("a".into()).unwrap();
    queue.put("b".into()).unwrap();
    let stop = AtomicBool::new(false);
    let waited = thread::scope(|s| {
        s.spawn(|| {
            // Unrelated churn: a foreign child comes and goes.
            let other = crate::support::client();
            while !stop.load(Ordering::SeqCst) {
                let (node, _) = other
                    .create(&format!("{path}/other-"), b"", CreateMode::EphemeralSequential)
                    .unwrap();
                thread::sleep(Duration::from_millis(100));
                other.delete(&node, None).unwrap();
            }
        });
        let started = Instant::now();
        let stored = queue.put_timeout("c".into(), Duration::from_secs(1));
        stop.store(true, Ordering::SeqCst);
        assert_eq!(
            stored.unwrap_err().into_inner(),
            Some("c".to_string()),
            "the queue was full"
        );
        started.elapsed()
    });
    assert!(
        waited >= Duration::from_secs(1) && waited < Duration::from_secs(3),
        "waited {waited:?}"
    );
}

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
fn the_consumer_hears_of_connection_changes_and_items_survive_a_long_outage() {
    // Curator's testLongNetworkPartition, and CURATOR-336 (stateChanged never called).
    let mut server = TestingServer::start().unwrap();
    let consumer_client = zk_queue::ZkClient::builder(&server.connect_string())
        .session_timeout(Duration::from_secs(2))
        .connection_timeout(Duration::from_secs(2))
        .request_timeout(Duration::from_secs(2))
        .connect()
        .unwrap();
    let path = unique_path("partition");
    let recorder = Recorder::new();
    let _consumer = consumer(&consumer_client, &path, &recorder).build_queue().unwrap();
    server.kill().unwrap();
    thread::sleep(Duration::from_secs(4)); // twice the session timeout
    server.restart().unwrap();
    let producer_client = client_of(&server.connect_string());
    let producer = producer(&producer_client, &path).build_queue().unwrap();
    producer.put("after the partition".into()).unwrap();
    assert_eq!(recorder.wait_for(1, WAIT), ["after the partition"]);
    let states = recorder.states();
    assert!(states.contains(&ConnectionState::Suspended), "{states:?}");
    assert!(states.contains(&ConnectionState::Reconnected), "{states:?}");
}
