//! Redelivery back-off: a failed item comes back after a pause that grows
//! with its failures, which holds across consumers and crashes, and which
//! Curator's consumers do not need to know about. A requeued delay item
//! keeps its due time.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use parking_lot::Mutex;
use zk_queue::inspect::{decode_item, ItemName, Layout};
use zk_queue::{ConsumeError, DeliverAt, ItemMeta, QueueBuilder, StringSerializer, ZkClient};

use crate::queue::WAIT;
use crate::support::java::PeerCommand;
use crate::support::queues::producer;
use crate::support::{client, eventually, server::shared_connect_string, server::unique_path};

const MS: fn(u64) -> Duration = Duration::from_millis;

/// Deliveries a consumer saw: attempt and when.
type Seen = Arc<Mutex<Vec<(u32, Instant, SystemTime)>>>;

/// A builder whose consumer records every delivery and fails the first
/// `failures` of each item.
fn failing(client: &ZkClient, path: &str, failures: u32, seen: &Seen) -> QueueBuilder<String> {
    let seen = seen.clone();
    QueueBuilder::new(client, path, StringSerializer).consumer_with_meta(
        move |_: String, meta: &ItemMeta| -> Result<(), ConsumeError> {
            seen.lock().push((meta.attempt(), Instant::now(), SystemTime::now()));
            if meta.attempt() <= failures {
                return Err(format!("failing attempt {}", meta.attempt()).into());
            }
            Ok(())
        },
    )
}

fn put(client: &ZkClient, path: &str, item: &str) {
    producer(client, path).build_queue().unwrap().put(item.into()).unwrap();
}

/// The one item node of `path` once it records a failed delivery, and its
/// not-before time.
fn requeued(client: &ZkClient, path: &str) -> Option<SystemTime> {
    let (names, _) = client.get_children(path).ok()?;
    let (data, _) = client.get_data(&format!("{path}/{}", names.first()?)).ok()?;
    let item = decode_item(Layout::Curator, &data).ok()?;
    (item.attempts > 0).then_some(item.not_before).flatten()
}

#[test]
fn failed_deliveries_are_spaced_by_a_growing_back_off() {
    let path = unique_path("backoff-spacing");
    let client = client();
    let seen = Seen::default();
    let _queue = failing(&client, &path, 3, &seen)
        .lock_path(&unique_path("backoff-spacing-locks"))
        .redelivery_backoff(MS(300), MS(1_000))
        .build_queue()
        .unwrap();
    put(&client, &path, "flaky");
    eventually(WAIT, "four deliveries", || seen.lock().len() >= 4);
    let seen = seen.lock().clone();
    let attempts: Vec<u32> = seen.iter().map(|(a, ..)| *a).collect();
    assert_eq!(attempts, [1, 2, 3, 4]);
    // Equal jitter: at least half of 300 ms, 600 ms, then the 1 s cap (the
    // not-before time has millisecond precision: 5 ms of slack).
    for (i, least) in [MS(145), MS(295), MS(495)].into_iter().enumerate() {
        let gap = seen[i + 1].1 - seen[i].1;
        assert!(gap >= least, "gap {i}: {gap:?} < {least:?}");
        assert!(gap < Duration::from_secs(10), "gap {i}: {gap:?}");
    }
}

#[test]
fn zero_back_off_redelivers_at_once() {
    let path = unique_path("backoff-zero");
    let client = client();
    let seen = Seen::default();
    let _queue = failing(&client, &path, 1, &seen)
        .lock_path(&unique_path("backoff-zero-locks"))
        .redelivery_backoff(Duration::ZERO, Duration::ZERO)
        .build_queue()
        .unwrap();
    put(&client, &path, "flaky");
    eventually(WAIT, "two deliveries", || seen.lock().len() >= 2);
    let seen = seen.lock().clone();
    let gap = seen[1].1 - seen[0].1;
    // The default back-off would wait at least 500 ms.
    assert!(gap < MS(450), "redelivered after {gap:?}");
}

#[test]
fn a_crashed_consumers_backed_off_item_waits_for_its_time_with_every_other_consumer() {
    let client = client();
    for lock_safe in [true, false] {
        let path = unique_path("backoff-crash");
        let locks = unique_path("backoff-crash-locks");
        // The first consumer fails the item once and dies.
        let doomed = crate::support::client();
        let first = Seen::default();
        let queue = failing(&doomed, &path, u32::MAX, &first)
            .lock_path(&locks)
            .redelivery_backoff(Duration::from_secs(2), Duration::from_secs(2))
            .build_queue()
            .unwrap();
        put(&client, &path, "job");
        let mut not_before = None;
        eventually(WAIT, "the item is requeued with a back-off", || {
            not_before = requeued(&client, &path);
            not_before.is_some()
        });
        let not_before = not_before.unwrap();
        // Its session ends (its locks vanish) before its queue stops.
        doomed.close();
        drop(queue);

        // Another consumer of ours takes it, but not before its time.
        let second = Seen::default();
        let mut builder = failing(&client, &path, 0, &second);
        if lock_safe {
            builder = builder.lock_path(&locks);
        }
        let _queue = builder.build_queue().unwrap();
        eventually(WAIT, "the item is redelivered", || !second.lock().is_empty());
        let (attempt, _, at) = second.lock()[0];
        assert_eq!(attempt, 2, "the failure survived the crash (lock-safe: {lock_safe})");
        assert!(
            at + MS(5) >= not_before,
            "taken {:?} before its time (lock-safe: {lock_safe})",
            not_before.duration_since(at).unwrap_or_default()
        );
    }
}

#[test]
fn curator_takes_a_backed_off_item_as_an_ordinary_one() {
    let path = unique_path("backoff-curator");
    let client = client();
    let seen = Seen::default();
    let queue = failing(&client, &path, u32::MAX, &seen)
        .lock_path(&unique_path("backoff-curator-locks"))
        .redelivery_backoff(Duration::from_secs(600), Duration::from_secs(600))
        .build_queue()
        .unwrap();
    put(&client, &path, "job");
    eventually(WAIT, "the item is requeued with a back-off", || {
        requeued(&client, &path).is_some()
    });
    queue.close();
    let taken = PeerCommand::new("curator-consume", &shared_connect_string(), &path, 1)
        .timeout(WAIT)
        .run()
        .unwrap();
    assert_eq!(taken, ["job"]);
}

/// The due time a delay item's node name records, epoch milliseconds.
fn due_in_name(name: &str) -> i64 {
    ItemName::parse(name, Some(Layout::Curator))
        .and_then(|item| item.due)
        .unwrap_or_else(|| panic!("{name} is not a delay item"))
}

#[test]
fn a_delay_item_waits_for_its_due_time_and_keeps_it_when_requeued() {
    let path = unique_path("backoff-delay-due");
    let client = client();
    let (builder, receiver) = QueueBuilder::new(&client, &path, StringSerializer)
        .lock_path(&unique_path("backoff-delay-due-locks"))
        .redelivery_backoff(Duration::ZERO, Duration::ZERO)
        .pull_consumer();
    let _queue = builder.build_delay_queue().unwrap();
    let producer = producer(&client, &path).build_delay_queue().unwrap();
    producer.put("reminder".into(), DeliverAt::after(MS(1_500))).unwrap();
    let (names, _) = client.get_children(&path).unwrap();
    let [original]: [String; 1] = names.try_into().unwrap();
    let due = due_in_name(&original);

    let first = receiver.take_timeout(WAIT).unwrap().expect("delivered once due");
    let first_at = DeliverAt::now().epoch_millis();
    assert_eq!(first.meta().name(), original);
    assert!(first_at >= due, "delivered {} ms before its due time", due - first_at);
    assert_eq!(first.meta().due().map(DeliverAt::epoch_millis), Some(due));
    first.nack("failing once");

    let second = receiver.take_timeout(WAIT).unwrap().expect("delivered again");
    let requeued = second.meta().name().to_owned();
    assert_eq!(second.meta().attempt(), 2);
    assert_ne!(requeued, original, "requeued under a new node");
    let (names, _) = client.get_children(&path).unwrap();
    assert_eq!(names, [requeued.as_str()], "the requeued node replaced the original");
    // The requeued node's name records the original node's due time, and so
    // does what the consumer is told.
    assert_eq!(due_in_name(&requeued), due, "{requeued} against {original}");
    assert_eq!(second.meta().due().map(DeliverAt::epoch_millis), Some(due));
    second.ack();
}
