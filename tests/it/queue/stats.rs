//! A queue handle's statistics (`stats`) and its fresh item count (`len`).

use std::time::{Duration, Instant};

use zk_queue::{client::CreateMode, DistributedQueue};

use crate::support::queues::{consumer, producer};
use crate::support::recorder::Recorder;
use crate::support::{client, server::unique_path};

const WAIT: Duration = Duration::from_secs(30);

/// Waits until nothing is in flight and `done` holds for the stats; returns
/// the stats then.
fn settled(queue: &DistributedQueue<String>, done: impl Fn(&zk_queue::QueueStats) -> bool) -> zk_queue::QueueStats {
    let deadline = Instant::now() + WAIT;
    loop {
        let stats = queue.stats();
        if stats.in_flight == 0 && done(&stats) {
            return stats;
        }
        assert!(Instant::now() < deadline, "stats did not settle: {stats:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_lock_safe_queue_counts_puts_claims_consumption_and_one_requeue() {
    let path = unique_path("stats-requeue");
    let client = client();
    let mut failed = false;
    let recorder = Recorder::new().failing(move |item, _| {
        let fail = item == "fail-once" && !failed;
        failed |= fail;
        fail
    });
    let queue = consumer(&client, &path, &recorder)
        .lock_path(&unique_path("stats-requeue-locks"))
        .put_in_background(false)
        .build_queue()
        .unwrap();
    assert_eq!(queue.stats(), zk_queue::QueueStats::default());
    for item in ["a", "fail-once", "b", "c"] {
        queue.put(item.to_owned()).unwrap();
    }
    queue.put_multi(vec!["m1".to_owned(), "m2".to_owned()]).unwrap();
    recorder.wait_for(6, WAIT);
    let stats = settled(&queue, |s| s.consumed == 6);
    assert_eq!(recorder.deliveries().iter().filter(|d| *d == "fail-once").count(), 2);
    assert_eq!(stats.puts, 6, "items, a multi's counted one by one: {stats:?}");
    assert_eq!(stats.put_failures, 0);
    // Five nodes, and the failed one once more after its requeue.
    assert_eq!(stats.claimed, 6, "{stats:?}");
    assert_eq!(stats.consumed, 6);
    assert_eq!(stats.consumer_errors, 1);
    assert_eq!(stats.requeued, 1);
    assert_eq!(stats.dead_lettered, 0);
    assert_eq!(stats.lease_lost, 0);
    assert_eq!(stats.in_flight, 0);
    assert_eq!(queue.len().unwrap(), 0);
}

#[test]
fn an_item_failing_max_attempts_counts_as_dead_lettered() {
    let path = unique_path("stats-poison");
    let dead = unique_path("stats-poison-dead");
    let client = client();
    let recorder = Recorder::new().failing(|item, _| item == "poison");
    let queue = consumer(&client, &path, &recorder)
        .lock_path(&unique_path("stats-poison-locks"))
        .max_attempts(2)
        .dead_letter_path(&dead)
        .put_in_background(false)
        .build_queue()
        .unwrap();
    queue.put("poison".to_owned()).unwrap();
    queue.put("fine".to_owned()).unwrap();
    let stats = settled(&queue, |s| s.dead_lettered == 1 && s.consumed == 1);
    assert_eq!(client.get_children(&dead).unwrap().0.len(), 1);
    assert_eq!(stats.puts, 2);
    assert_eq!(stats.consumer_errors, 2, "{stats:?}");
    assert_eq!(stats.requeued, 1, "the first failure requeues, the second dead-letters");
    assert_eq!(stats.dead_lettered, 1);
    assert_eq!(stats.claimed, 3);
    assert_eq!(stats.in_flight, 0);
}

#[test]
fn a_plain_consumer_counts_claims_and_a_producer_only_its_puts() {
    let path = unique_path("stats-plain");
    let client = client();
    let recorder = Recorder::new().failing(|item, _| item == "bad");
    let consuming = consumer(&client, &path, &recorder).build_queue().unwrap();
    let putting = producer(&client, &path).build_queue().unwrap();
    for item in ["x", "bad", "y"] {
        putting.put(item.to_owned()).unwrap();
    }
    recorder.wait_for(2, WAIT);
    let stats = settled(&consuming, |s| s.consumed + s.consumer_errors == 3);
    assert_eq!((stats.puts, stats.claimed, stats.consumed), (0, 3, 2), "{stats:?}");
    assert_eq!(
        (stats.consumer_errors, stats.requeued),
        (1, 0),
        "deleted before consumed"
    );
    let stats = putting.stats();
    assert_eq!((stats.puts, stats.claimed, stats.consumed), (3, 0, 0), "{stats:?}");
}

#[test]
fn len_counts_queue_items_but_not_foreign_children() {
    let path = unique_path("stats-len");
    let client = client();
    let gone_path = unique_path("stats-len-gone");
    let gone = producer(&client, &gone_path).build_queue().unwrap();
    client.delete(&gone_path, None).unwrap();
    assert_eq!(gone.len().unwrap(), 0, "no queue node");
    let queue = producer(&client, &path).build_queue().unwrap();
    assert_eq!(queue.len().unwrap(), 0);
    queue.put("one".to_owned()).unwrap();
    queue.put("two".to_owned()).unwrap();
    queue.put_multi(vec!["three".to_owned(), "four".to_owned()]).unwrap();
    client
        .create(&format!("{path}/not-an-item"), b"x", CreateMode::Persistent)
        .unwrap();
    client
        .create(&format!("{path}/qn-"), b"x", CreateMode::PersistentSequential)
        .unwrap();
    assert_eq!(client.get_children(&path).unwrap().0.len(), 5);
    assert_eq!(queue.len().unwrap(), 3, "a multi-item node counts once");
    assert_eq!(queue.stats().puts, 4);
}

#[test]
fn oldest_age_reports_how_long_the_head_has_waited() {
    let client = client();
    let path = unique_path("stats-age");
    let queue = producer(&client, &path).build_priority_queue(0).unwrap();
    assert_eq!(queue.oldest_age().unwrap(), None, "a missing or empty queue has no age");
    queue.put("old".into(), 5).unwrap();
    // The old item ages by this much before the urgent one is put.
    std::thread::sleep(Duration::from_millis(300));
    let before_urgent = std::time::Instant::now();
    queue.put("urgent".into(), 1).unwrap();
    // The head is the urgent item, put just now, not the older one: its age
    // is at most the time since it was put (plus the server clock's
    // millisecond), the old item's at least 300 ms more.
    let age = queue.oldest_age().unwrap().unwrap();
    assert!(
        age <= before_urgent.elapsed() + Duration::from_millis(2),
        "{age:?} is the age of an item older than the head"
    );
}
