//! Building, putting and closing, beyond Curator's tests: a failed background
//! put, a closed queue, options that contradict each other, a put deadline
//! that Curator does not keep, and the order of items put at one priority or
//! due time.

use std::sync::atomic::Ordering;
use std::thread;
use std::time::{Duration, Instant};

use zk_queue::{client::CreateMode, Error, ErrorMode, PutError, QueueBuilder, StringSerializer};

use crate::queue::{counted, in_millis, WAIT};
use crate::support::queues::{consumer, producer};
use crate::support::recorder::Recorder;
use crate::support::{client, server::unique_path, Stop};

#[test]
fn a_failed_background_put_reaches_the_listener() {
    let path = unique_path("q-put-fails");
    let client = client();
    let (queue, done, failed) = counted(&client, &path);
    // An ephemeral node cannot have children: replacing the queue node by one makes the put fail.
    client.delete(&path, None).unwrap();
    client.create(&path, b"", CreateMode::Ephemeral).unwrap();
    queue.put("x".into()).unwrap();
    assert!(!queue.flush_timeout(WAIT), "the flush reports the failure");
    assert_eq!((done.load(Ordering::SeqCst), failed.load(Ordering::SeqCst)), (0, 1));
    assert!(
        queue.flush_timeout(WAIT),
        "a failed put is finished, not pending forever, and reported once"
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
    assert!(matches!(queue.put("y".into()), Err(Error::QueueClosed)));
    assert!(matches!(
        queue.try_put("y".into()),
        Err(PutError::Failed(Error::QueueClosed))
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
    let (pull, _receiver) = b("/q").consumer_threads(4).pull_consumer();
    assert!(refused(pull.build_queue()).contains("consumer threads do not apply to a pull consumer"));
    assert!(matches!(b("/a|b").build_id_queue(), Err(Error::InvalidPath { .. })));
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
    let stop = Stop::new();
    let waited = thread::scope(|s| {
        let _stop = stop.on_drop();
        s.spawn(|| {
            // Unrelated churn: a foreign child comes and goes.
            let other = crate::support::client();
            while !stop.stopped() {
                let (node, _) = other
                    .create(&format!("{path}/other-"), b"", CreateMode::EphemeralSequential)
                    .unwrap();
                thread::sleep(Duration::from_millis(100));
                other.delete(&node, None).unwrap();
            }
        });
        let started = Instant::now();
        let stored = queue.put_timeout("c".into(), Duration::from_secs(1));
        stop.stop();
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
