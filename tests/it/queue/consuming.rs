//! Consumers, beyond Curator's tests: Curator's consumer bugs we do not have
//! (records redelivered, a requeue losing its priority, stranded items, a
//! replaced lock, a listing per item, `stateChanged` never called) and this
//! crate's own consumer features (dead letters, corrupt items, close,
//! prefetched leases).

use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use zk_queue::testing::{FaultProxy, TestingServer};
use zk_queue::{client::CreateMode, ConnectionState, Error, QueueBuilder, StringSerializer};

use crate::queue::{items, plain, WAIT};
use crate::support::queues::{consumer, producer};
use crate::support::recorder::Recorder;
use crate::support::{
    client, client_of, server::unique_path, session_marker, short_session_client, wait_for_server_expiry, Bound,
};

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
        // The consumer told of the corrupt item, and an item put after that
        // came through: it has dealt with the corrupt one and moved on.
        recorder.wait_until(WAIT, |r| {
            r.errors().iter().any(|e| e.contains("not a valid queue item"))
        });
        plain(&client, &path).put("after".into()).unwrap();
        assert_eq!(recorder.wait_for(2, WAIT), ["good", "after"]);
        if with_dead_letters {
            crate::support::eventually(WAIT, "the corrupt item is moved", || {
                client.get_children(&path).unwrap().0 == ["qn-foreign"]
            });
        }
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
    // Put behind the stranded item: once it is delivered, the consumer has
    // gone past the stranded one and found it held.
    plain(&seed, &path).put("canary".into()).unwrap();
    let recorder = Recorder::new();
    let _queue = consumer(&seed, &path, &recorder)
        .lock_path(&locks)
        .build_queue()
        .unwrap();
    assert_eq!(
        recorder.wait_for(1, WAIT),
        ["canary"],
        "the stranded item is held by another consumer"
    );
    let closed = Instant::now();
    holder.close();
    assert_eq!(recorder.wait_for(2, WAIT), ["canary", "stranded"]);
    Bound::of(Duration::from_secs(1)).check("the pick-up after the holder closed", closed.elapsed());
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

#[test]
fn the_consumer_hears_of_connection_changes_and_items_survive_a_long_outage() {
    // Curator's testLongNetworkPartition, and CURATOR-336 (stateChanged never called).
    let server = TestingServer::start().unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).unwrap();
    let direct = client_of(&server.connect_string());
    let consumer_client = short_session_client(&proxy.connect_string());
    let session = consumer_client.session_id().unwrap();
    let path = unique_path("partition");
    let recorder = Recorder::new();
    let _consumer = consumer(&consumer_client, &path, &recorder).build_queue().unwrap();
    let producer = producer(&direct, &path).build_queue().unwrap();
    producer.put("before".into()).unwrap();
    assert_eq!(recorder.wait_for(1, WAIT), ["before"]);
    // The consumer is cut off until the server expires its session; the
    // items put meanwhile wait in the queue through the outage.
    let marker = session_marker(&consumer_client, &direct);
    proxy.blackhole();
    for i in 0..3 {
        producer.put(format!("during-{i}")).unwrap();
    }
    wait_for_server_expiry(&direct, &marker);
    proxy.heal();
    producer.put("after".into()).unwrap();
    let mut consumed = recorder.wait_for(5, WAIT);
    consumed.sort();
    assert_eq!(consumed, ["after", "before", "during-0", "during-1", "during-2"]);
    assert_ne!(consumer_client.session_id().unwrap(), session, "a new session");
    let states = recorder.states();
    let lost = states.iter().position(|s| *s == ConnectionState::Lost);
    assert!(lost.is_some(), "the consumer heard of the expiry: {states:?}");
    assert!(
        states[..lost.unwrap()].contains(&ConnectionState::Suspended),
        "{states:?}"
    );
    assert!(
        states[lost.unwrap()..].contains(&ConnectionState::Reconnected),
        "{states:?}"
    );
}

#[test]
fn a_thousand_jobs_with_a_fifth_failing_once_log_one_info_line_per_failure_and_no_warning() {
    const N: usize = 1000;
    crate::support::logs::start();
    let path = unique_path("q-quiet-failures");
    let client = client();
    let mut failed = std::collections::HashSet::new();
    // Every fifth job fails on its first attempt.
    let recorder = Recorder::new().failing(move |item: &str, _| {
        let n: usize = item.trim_start_matches("job-").parse().unwrap();
        n % 5 == 0 && failed.insert(item.to_owned())
    });
    let queue = consumer(&client, &path, &recorder)
        .lock_path(&unique_path("q-quiet-failures-locks"))
        .max_attempts(3)
        .dead_letter_path(&unique_path("q-quiet-failures-dead"))
        .build_queue()
        .unwrap();
    let producer = producer(&client, &path).build_queue().unwrap();
    for i in 0..N {
        producer.put(format!("job-{i}")).unwrap();
    }
    recorder.wait_for(N, WAIT);
    queue.close();
    producer.close();
    let lines = crate::support::logs::lines_with(&path);
    eprintln!(
        "{} log lines naming the queue for {N} jobs, {} failures",
        lines.len(),
        N / 5
    );
    let loud: Vec<_> = lines.iter().filter(|l| l.level <= log::Level::Warn).collect();
    assert!(
        loud.is_empty(),
        "a failure that is retried is not an operator's concern: {loud:?}"
    );
    let told = lines
        .iter()
        .filter(|l| l.level == log::Level::Info && l.message.contains("failed on attempt 1"))
        .count();
    assert_eq!(told, N / 5, "one line per failure");
}

/// A consumer that holds each item until the queue starts closing (or, if
/// `forever`, until the test lets it go).
struct HoldsUntilClosing {
    started: crossbeam_channel::Sender<String>,
    closing: crossbeam_channel::Receiver<()>,
    tell_closing: crossbeam_channel::Sender<()>,
    forever: crossbeam_channel::Receiver<()>,
}

impl zk_queue::QueueConsumer<String> for HoldsUntilClosing {
    fn consume(&self, item: String) -> Result<(), zk_queue::ConsumeError> {
        self.started.send(item).unwrap();
        let _ = self.closing.recv();
        let _ = self.forever.recv();
        Ok(())
    }

    fn closing(&self) {
        let _ = self.tell_closing.send(());
    }
}

#[test]
fn close_reports_items_that_finished_while_closing_and_items_still_running_at_its_deadline() {
    let client = client();
    for (name, forever) in [("finishes", false), ("overruns", true)] {
        let path = unique_path(&format!("q-close-report-{name}"));
        let (started, started_rx) = crossbeam_channel::unbounded();
        let (tell_closing, closing) = crossbeam_channel::unbounded();
        let (let_go, forever_rx) = crossbeam_channel::unbounded::<()>();
        let holder = HoldsUntilClosing {
            started,
            closing,
            tell_closing,
            forever: forever_rx,
        };
        let queue = QueueBuilder::new(&client, &path, StringSerializer)
            .lock_path(&unique_path(&format!("q-close-report-{name}-locks")))
            .consumer(holder)
            .build_queue()
            .unwrap();
        producer(&client, &path)
            .build_queue()
            .unwrap()
            .put("job".into())
            .unwrap();
        assert_eq!(started_rx.recv_timeout(WAIT).unwrap(), "job");
        // Without `forever` the consumer finishes as soon as closing begins.
        let let_go = forever.then_some(let_go);
        let report = queue.close_timeout(Duration::from_millis(500));
        if forever {
            assert_eq!((report.finished, report.still_running), (0, 1), "{name}: {report:?}");
            assert!(!report.is_complete());
            drop(let_go);
        } else {
            assert_eq!((report.finished, report.still_running), (1, 0), "{name}: {report:?}");
            assert!(report.is_complete());
        }
        assert_eq!(
            queue.close(),
            zk_queue::CloseReport::default(),
            "a second close reports nothing"
        );
    }
}

/// Records the name of the thread each callback runs on.
#[derive(Clone, Default)]
struct Threads(Arc<parking_lot::Mutex<Vec<(&'static str, String)>>>);

impl Threads {
    fn note(&self, callback: &'static str) {
        let name = thread::current().name().unwrap_or("unnamed").to_owned();
        self.0.lock().push((callback, name));
    }

    fn seen(&self) -> Vec<(&'static str, String)> {
        self.0.lock().clone()
    }
}

impl zk_queue::QueueConsumer<String> for Threads {
    fn consume(&self, _item: String) -> Result<(), zk_queue::ConsumeError> {
        self.note("consume");
        Ok(())
    }

    fn state_changed(&self, _state: ConnectionState) {
        self.note("state_changed");
    }

    fn error(&self, _error: &Error) {
        self.note("error");
    }
}

impl zk_queue::PutListener<String> for Threads {
    fn put_completed(&self, _items: &[String]) {
        self.note("put_completed");
    }
}

#[test]
fn user_callbacks_run_on_the_queues_own_threads_never_on_the_clients() {
    let server = TestingServer::start().unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).unwrap();
    let client = client_of(&proxy.connect_string());
    let direct = client_of(&server.connect_string());
    let path = unique_path("q-callback-threads");
    direct.ensure_path(&path).unwrap();
    // A corrupt item, for the consumer's `error`.
    direct
        .create(
            &format!("{path}/queue-"),
            b"not a frame",
            CreateMode::PersistentSequential,
        )
        .unwrap();
    let threads = Threads::default();
    let queue = QueueBuilder::new(&client, &path, StringSerializer)
        .put_in_background(true)
        .consumer(threads.clone())
        .build_queue()
        .unwrap();
    queue.add_put_listener(threads.clone());
    queue.put("item".into()).unwrap();
    // A cut, for `state_changed`.
    let states = client.state_listener();
    proxy.cut();
    crate::support::wait_for_state(&states, ConnectionState::Reconnected, WAIT);
    crate::support::eventually(WAIT, "every callback ran", || {
        let seen = threads.seen();
        ["consume", "state_changed", "error", "put_completed"]
            .iter()
            .all(|callback| seen.iter().any(|(c, _)| c == callback))
    });
    for (callback, thread) in threads.seen() {
        // The client's own thread reads every reply and event of the
        // connection: user code there would hold up the whole session.
        assert!(
            thread.starts_with("zk-queue-") && thread != "zk-queue-session" && thread != "zk-queue-release",
            "{callback} ran on thread {thread:?}"
        );
    }
    let consume_threads: Vec<String> = threads
        .seen()
        .into_iter()
        .filter(|(c, _)| *c == "consume")
        .map(|(_, t)| t)
        .collect();
    assert!(
        consume_threads.iter().all(|t| t == "zk-queue-worker"),
        "the consumer runs on the queue's worker threads: {consume_threads:?}"
    );
}
