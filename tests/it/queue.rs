//! Curator-compatible queues against a real server: ports of Curator's
//! `TestDistributedQueue` scenarios and tests of the bugs we do not have.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use zk_queue::{CreateMode, Error, ErrorMode, PutError, PutListener, QueueBuilder, StringSerializer, ZkClient};

use crate::support::queues::{consumer, producer};
use crate::support::recorder::Recorder;
use crate::support::{client, server::unique_path};

const WAIT: Duration = Duration::from_secs(30);

fn items(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i}")).collect()
}

/// A started plain queue whose puts return once stored.
fn plain(client: &ZkClient, path: &str) -> zk_queue::DistributedQueue<String> {
    producer(client, path).build_queue().unwrap()
}

#[test]
fn a_single_consumer_receives_items_in_put_order() {
    let path = unique_path("q-simple");
    let recorder = Recorder::new();
    let client = client();
    let _consumer = consumer(&client, &path, &recorder).build_queue().unwrap();
    let producer = plain(&client, &path);
    for item in items("", 10) {
        producer.put(item).unwrap();
    }
    assert_eq!(recorder.wait_for(10, WAIT), items("", 10));
}

#[test]
fn put_multi_stores_one_node_and_delivers_every_item_in_order() {
    let path = unique_path("q-multi");
    let client = client();
    let producer = plain(&client, &path);
    producer.put_multi(items("", 100)).unwrap();
    assert_eq!(client.get_children(&path).unwrap().0.len(), 1, "one node for 100 items");
    let recorder = Recorder::new();
    let _consumer = consumer(&client, &path, &recorder).build_queue().unwrap();
    assert_eq!(recorder.wait_for(100, WAIT), items("", 100));
}

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
    let queue = QueueBuilder::new(client, path, StringSerializer).build_queue().unwrap();
    let (done, failed) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    queue.add_put_listener(CountingListener(done.clone(), failed.clone()));
    (queue, done, failed)
}

#[test]
fn put_listener_hears_of_every_background_put_and_flush_waits_for_them() {
    let path = unique_path("q-listener");
    let client = client();
    let (queue, done, failed) = counted(&client, &path);
    for item in items("", 50) {
        queue.put(item).unwrap();
    }
    assert!(queue.flush_timeout(WAIT));
    assert_eq!((done.load(Ordering::SeqCst), failed.load(Ordering::SeqCst)), (50, 0));
    assert_eq!(client.get_children(&path).unwrap().0.len(), 50);
}

#[test]
fn a_failed_background_put_reaches_the_listener() {
    let path = unique_path("q-put-fails");
    let client = client();
    let (queue, done, failed) = counted(&client, &path);
    // An ephemeral node cannot have children: replacing the queue node by one makes the put fail.
    client.delete(&path, None).unwrap();
    client.create(&path, b"", CreateMode::Ephemeral).unwrap();
    queue.put("x".into()).unwrap();
    assert!(
        queue.flush_timeout(WAIT),
        "a failed put is finished, not pending forever"
    );
    assert_eq!((done.load(Ordering::SeqCst), failed.load(Ordering::SeqCst)), (0, 1));
}

#[test]
fn requeue_redelivers_a_failed_item_and_delete_mode_drops_it() {
    // Curator's testErrorMode and testRetryAfterFailure_Curator56.
    let path = unique_path("q-error-mode");
    let locks = unique_path("q-error-mode-locks");
    let client = client();
    let recorder = Recorder::new().failing(|item, _| item == "fail-once" || item == "always");
    let requeue = consumer(&client, &path, &recorder)
        .lock_path(&locks)
        .build_queue()
        .unwrap();
    let first = plain(&client, &path);
    first.put("fail-once".into()).unwrap();
    recorder.wait_until(WAIT, |r| r.deliveries().len() >= 2);
    let deliveries = recorder.deliveries();
    assert_eq!(deliveries[..2], ["fail-once", "fail-once"]);
    requeue.close();

    let path = unique_path("q-delete-mode");
    let recorder = Recorder::new().failing(|item, _| item == "always");
    let _delete = consumer(&client, &path, &recorder)
        .lock_path(&locks)
        .error_mode(ErrorMode::Delete)
        .build_queue()
        .unwrap();
    let second = plain(&client, &path);
    second.put("always".into()).unwrap();
    second.put("after".into()).unwrap();
    recorder.wait_for(1, WAIT);
    thread::sleep(Duration::from_millis(500));
    assert_eq!(recorder.deliveries(), ["always", "after"], "not redelivered");
    assert!(client.get_children(&path).unwrap().0.is_empty());
}

#[test]
fn lock_safe_consumers_process_each_item_exactly_once() {
    // Curator's testNoDuplicateProcessing, with four consumer clients.
    let path = unique_path("q-no-dups");
    let locks = unique_path("q-no-dups-locks");
    let seed = client();
    let source = plain(&seed, &path);
    for item in items("", 300) {
        source.put(item).unwrap();
    }
    let recorders: Vec<Recorder> = (0..4).map(|_| Recorder::new()).collect();
    let clients: Vec<ZkClient> = (0..4).map(|_| client()).collect();
    let queues: Vec<_> = clients
        .iter()
        .zip(&recorders)
        .map(|(c, r)| consumer(c, &path, r).lock_path(&locks).build_queue().unwrap())
        .collect();
    let deadline = Instant::now() + WAIT;
    while recorders.iter().map(|r| r.items().len()).sum::<usize>() < 300 {
        assert!(Instant::now() < deadline, "not all consumed");
        thread::sleep(Duration::from_millis(50));
    }
    thread::sleep(Duration::from_millis(300));
    let all: Vec<String> = recorders.iter().flat_map(Recorder::items).collect();
    let distinct: HashSet<&String> = all.iter().collect();
    assert_eq!((all.len(), distinct.len()), (300, 300));
    drop(queues);
    assert!(seed.get_children(&locks).unwrap().0.is_empty(), "no lock left behind");
}

#[test]
fn requeue_does_not_redeliver_records_already_consumed() {
    // Curator redelivers [1, 2, 1, 2, 3]; we deliver [1, 2, 2, 3].
    let path = unique_path("q-partial");
    let client = client();
    let recorder = Recorder::new().failing(|_, delivery| delivery == 1);
    let _queue = consumer(&client, &path, &recorder)
        .lock_path(&unique_path("q-partial-locks"))
        .build_queue()
        .unwrap();
    plain(&client, &path).put_multi(items("", 3)).unwrap();
    recorder.wait_for(3, WAIT);
    assert_eq!(recorder.deliveries(), ["0", "1", "1", "2"]);
}

#[test]
fn an_item_failing_max_attempts_moves_to_the_dead_letter_path() {
    let path = unique_path("q-poison");
    let dead = unique_path("q-poison-dead");
    let client = client();
    let recorder = Recorder::new().failing(|item, _| item == "poison");
    let _queue = consumer(&client, &path, &recorder)
        .lock_path(&unique_path("q-poison-locks"))
        .max_attempts(3)
        .dead_letter_path(&dead)
        .build_queue()
        .unwrap();
    let producer = plain(&client, &path);
    producer.put("poison".into()).unwrap();
    producer.put("fine".into()).unwrap();
    recorder.wait_until(WAIT, |_| {
        client.get_children(&dead).map(|(c, _)| c.len()).unwrap_or(0) == 1
    });
    assert_eq!(recorder.deliveries().iter().filter(|d| *d == "poison").count(), 3);
    assert_eq!(recorder.items(), ["fine"]);
    // The dead letter is a plain queue item another queue can drain.
    let drained = Recorder::new();
    let _dlq = consumer(&client, &dead, &drained).build_queue().unwrap();
    assert_eq!(drained.wait_for(1, WAIT), ["poison"]);
}

#[test]
fn undecodable_items_are_moved_to_dead_letters_or_left_but_never_deleted() {
    let client = client();
    for with_dead_letters in [true, false] {
        let path = unique_path("q-corrupt");
        let dead = unique_path("q-corrupt-dead");
        client.ensure_path(&path).unwrap();
        client
            .create(
                &format!("{path}/queue-"),
                b"not a frame",
                CreateMode::PersistentSequential,
            )
            .unwrap();
        client
            .create(&format!("{path}/qn-foreign"), b"x", CreateMode::Persistent)
            .unwrap();
        let recorder = Recorder::new();
        let mut builder = QueueBuilder::new(&client, &path, StringSerializer).consumer(recorder.clone());
        if with_dead_letters {
            builder = builder.dead_letter_path(&dead);
        }
        let _queue = builder.build_queue().unwrap();
        plain(&client, &path).put("good".into()).unwrap();
        assert_eq!(recorder.wait_for(1, WAIT), ["good"]);
        thread::sleep(Duration::from_millis(300));
        let (mut left, _) = client.get_children(&path).unwrap();
        left.sort();
        if with_dead_letters {
            assert_eq!(left, ["qn-foreign"]);
            let (moved, _) = client.get_children(&dead).unwrap();
            assert_eq!(moved.len(), 1);
            let (data, _) = client.get_data(&format!("{dead}/{}", moved[0])).unwrap();
            assert_eq!(data, b"not a frame", "moved byte for byte");
        } else {
            assert_eq!(left, ["qn-foreign", "queue-0000000000"], "corrupt item left in place");
        }
        assert!(
            recorder.errors().iter().any(|e| e.contains("not a valid queue item")),
            "{:?}",
            recorder.errors()
        );
    }
}

#[test]
fn a_stranded_item_is_picked_up_within_a_second_of_its_holder_closing() {
    let path = unique_path("q-stranded");
    let locks = unique_path("q-stranded-locks");
    let seed = client();
    plain(&seed, &path).put("stranded".into()).unwrap();
    // A dead holder: its lock vanishes with its session.
    let holder = client();
    holder.ensure_path(&locks).unwrap();
    holder
        .create(
            &format!("{locks}/queue-0000000000"),
            b"gone soon",
            CreateMode::Ephemeral,
        )
        .unwrap();
    let recorder = Recorder::new();
    let _queue = consumer(&seed, &path, &recorder)
        .lock_path(&locks)
        .build_queue()
        .unwrap();
    thread::sleep(Duration::from_millis(500));
    assert!(recorder.deliveries().is_empty(), "held by another consumer");
    let closed = Instant::now();
    holder.close();
    recorder.wait_for(1, Duration::from_secs(5));
    assert!(
        closed.elapsed() < Duration::from_secs(1),
        "picked up after {:?}",
        closed.elapsed()
    );
}

#[test]
fn close_waits_for_the_item_being_consumed() {
    let path = unique_path("q-close");
    let client = client();
    let recorder = Recorder::new().slow(Duration::from_millis(700));
    let queue = consumer(&client, &path, &recorder)
        .lock_path(&unique_path("q-close-locks"))
        .build_queue()
        .unwrap();
    plain(&client, &path).put("slow".into()).unwrap();
    recorder.wait_until(WAIT, |r| !r.deliveries().is_empty());
    queue.close();
    assert_eq!(recorder.items(), ["slow"], "close returned after the item finished");
    assert!(
        client.get_children(&path).unwrap().0.is_empty(),
        "and it was acknowledged"
    );
}

#[test]
fn a_built_queue_is_ready_and_a_closed_one_refuses_puts() {
    let client = client();
    let path = unique_path("q-life");
    let queue = producer(&client, &path).build_queue().unwrap();
    queue.put("x".into()).unwrap();
    assert_eq!(queue.len().unwrap(), 1, "stored without a start");
    queue.close();
    assert!(matches!(queue.put("y".into()), Err(Error::InvalidState(_))));
    assert!(matches!(
        queue.try_put("y".into()),
        Err(PutError::Failed(Error::InvalidState(_)))
    ));
    assert_eq!(queue.len().unwrap(), 1, "nothing stored after close");
}

#[test]
fn inconsistent_options_are_refused_at_build() {
    let client = client();
    let b = |path: &str| QueueBuilder::new(&client, path, StringSerializer);
    let refused = |r: zk_queue::Result<zk_queue::DistributedQueue<String>>| match r {
        Err(e) => e.to_string(),
        Ok(_) => panic!("built"),
    };
    assert!(refused(b("/q").lock_path("/q/locks").build_queue()).contains("lock path must not be the queue path"));
    assert!(refused(b("/q").dead_letter_path("/q").build_queue()).contains("dead-letter path must not be"));
    assert!(refused(b("/q").max_attempts(3).build_queue()).contains("needs a dead-letter path"));
    assert!(refused(b("/q").error_mode(ErrorMode::Delete).build_queue()).contains("needs a lock path"));
    assert!(refused(b("/q").max_items(0).build_queue()).contains("max items"));
    assert!(refused(b("q").build_queue()).starts_with("invalid path"));
    assert!(matches!(b("/a|b").build_id_queue(), Err(Error::InvalidPath { .. })));
}

#[test]
fn a_consumer_whose_lock_was_replaced_deletes_nothing_and_hears_lease_lost() {
    // Curator's old holder deletes the lock path unversioned, so a third
    // consumer can lock the item again (at version 0, like ours).
    let path = unique_path("q-replaced-lock");
    let locks = unique_path("q-replaced-lock-locks");
    let client = client();
    let (entered_tx, entered_rx) = crossbeam_channel::bounded::<()>(1);
    let (go_tx, go_rx) = crossbeam_channel::bounded::<()>(1);
    let errors = Arc::new(parking_lot::Mutex::new(Vec::<String>::new()));
    struct Blocking {
        entered: crossbeam_channel::Sender<()>,
        go: crossbeam_channel::Receiver<()>,
        errors: Arc<parking_lot::Mutex<Vec<String>>>,
    }
    impl zk_queue::QueueConsumer<String> for Blocking {
        fn consume(&self, _: String) -> Result<(), zk_queue::ConsumeError> {
            let _ = self.entered.send(());
            let _ = self.go.recv_timeout(WAIT);
            Ok(())
        }
        fn error(&self, error: &Error) {
            self.errors.lock().push(error.to_string());
        }
    }
    let _queue = QueueBuilder::new(&client, &path, StringSerializer)
        .consumer(Blocking {
            entered: entered_tx,
            go: go_rx,
            errors: errors.clone(),
        })
        .lock_path(&locks)
        .build_queue()
        .unwrap();
    plain(&client, &path).put("contested".into()).unwrap();
    entered_rx.recv_timeout(WAIT).unwrap();
    let lock = format!("{locks}/queue-0000000000");
    let other = crate::support::client();
    other.delete(&lock, None).unwrap();
    other.create(&lock, b"new holder", CreateMode::Ephemeral).unwrap();
    go_tx.send(()).unwrap();
    let deadline = Instant::now() + WAIT;
    while errors.lock().is_empty() {
        assert!(Instant::now() < deadline, "no error reported");
        thread::sleep(Duration::from_millis(20));
    }
    assert!(errors.lock()[0].contains("lost the lock"), "{:?}", errors.lock());
    assert_eq!(
        other.get_data(&lock).unwrap().0,
        b"new holder",
        "the new holder's lock is intact"
    );
    assert!(
        client.exists(&format!("{path}/queue-0000000000")).unwrap().is_some(),
        "the item is intact"
    );
}

#[test]
fn a_consumer_lists_the_queue_once_per_pass_not_once_per_item() {
    let path = unique_path("q-listings");
    let seed = client();
    let source = plain(&seed, &path);
    for item in items("", 200) {
        source.put(item).unwrap();
    }
    for lock_safe in [false, true] {
        let path = unique_path("q-listings");
        let source = plain(&seed, &path);
        for item in items("", 200) {
            source.put(item).unwrap();
        }
        let consumer_client = client();
        let recorder = Recorder::new();
        let mut builder = QueueBuilder::new(&consumer_client, &path, StringSerializer).consumer(recorder.clone());
        if lock_safe {
            builder = builder.lock_path(&unique_path("q-listings-locks"));
        }
        let before = consumer_client.stats();
        let queue = builder.build_queue().unwrap();
        recorder.wait_for(200, WAIT);
        queue.close();
        let listings = consumer_client.stats().get_children - before.get_children;
        // One pass takes the preloaded items; a few more follow its own changes.
        assert!(
            listings <= 12,
            "{listings} listings for 200 items (lock-safe: {lock_safe})"
        );
    }
}

#[test]
fn closing_a_lock_safe_consumer_releases_its_prefetched_leases() {
    let path = unique_path("q-prefetch-close");
    let locks = unique_path("q-prefetch-close-locks");
    let client = client();
    let source = plain(&client, &path);
    for item in items("", 30) {
        source.put(item).unwrap();
    }
    let recorder = Recorder::new().slow(Duration::from_millis(300));
    let queue = consumer(&client, &path, &recorder)
        .lock_path(&locks)
        .claim_window(10)
        .final_flush(Duration::from_secs(5))
        .build_queue()
        .unwrap();
    recorder.wait_until(WAIT, |r| !r.deliveries().is_empty());
    // Leases on items not yet consumed are held ahead.
    assert!(client.get_children(&locks).unwrap().0.len() > 1, "prefetched");
    queue.close();
    let consumed = recorder.items();
    assert!(
        client.get_children(&locks).unwrap().0.is_empty(),
        "no lease left after close"
    );
    let (left, _) = client.get_children(&path).unwrap();
    assert_eq!(
        left.len() + consumed.len(),
        30,
        "nothing lost: {} left, {consumed:?}",
        left.len()
    );
    // Another consumer takes the rest, in order.
    let rest = Recorder::new();
    let _other = consumer(&client, &path, &rest).lock_path(&locks).build_queue().unwrap();
    let mut all = consumed;
    all.extend(rest.wait_for(left.len(), WAIT));
    assert_eq!(all, items("", 30));
}
