//! What the example's workload cannot show, read from a Prometheus recorder
//! in this test process: items in flight, lease losses, and releases that
//! are not takes. A queue's handles are registered when it is built, so a
//! test builds its queues with its own recorder in scope
//! (`metrics::with_local_recorder`): they report to it from any thread, and
//! no other test's queue does.

use std::time::Duration;

use crossbeam_channel::{Receiver, Sender};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusRecorder};
use zk_queue::client::CreateMode;
use zk_queue::metrics::names;
use zk_queue::{ConsumeError, Error, QueueBuilder, QueueConsumer, StringSerializer};

use super::exporter::Scrape;
use crate::support::server::unique_path;
use crate::support::{client, eventually};

const WAIT: Duration = Duration::from_secs(20);

/// What `recorder` holds now.
fn scrape(recorder: &PrometheusRecorder) -> Scrape {
    Scrape::parse(&recorder.handle().render())
}

/// A consumer that says when it holds an item, and finishes only when told.
struct Held {
    entered: Sender<()>,
    go: Receiver<()>,
    errors: Sender<String>,
}

impl QueueConsumer<String> for Held {
    fn consume(&self, _: String) -> Result<(), ConsumeError> {
        let _ = self.entered.send(());
        let _ = self.go.recv_timeout(WAIT);
        Ok(())
    }

    fn error(&self, error: &Error) {
        let _ = self.errors.send(error.to_string());
    }
}

#[test]
fn the_in_flight_gauge_shows_a_held_item_and_a_replaced_lock_counts_a_lease_loss() {
    let recorder = PrometheusBuilder::new().build_recorder();
    let path = unique_path("metrics-held");
    let locks = unique_path("metrics-held-locks");
    let client = client();
    let (entered_tx, entered) = crossbeam_channel::bounded(1);
    let (go, go_rx) = crossbeam_channel::bounded(1);
    let (errors_tx, errors) = crossbeam_channel::unbounded();
    let consumer = Held {
        entered: entered_tx,
        go: go_rx,
        errors: errors_tx,
    };
    let queue = metrics::with_local_recorder(&recorder, || {
        QueueBuilder::new(&client, &path, StringSerializer)
            .consumer(consumer)
            .lock_path(&locks)
            .metrics_interval(Duration::from_millis(50))
            .build_queue()
            .unwrap()
    });
    // A second handle of the queue without a sampler, so that only the
    // consumer's sets the gauges.
    let producer = metrics::with_local_recorder(&recorder, || {
        QueueBuilder::new(&client, &path, StringSerializer)
            .metrics_interval(Duration::ZERO)
            .put_in_background(false)
            .build_queue()
            .unwrap()
    });
    producer.put("held".into()).unwrap();
    entered.recv_timeout(WAIT).expect("the consumer holds the item");
    let queue_label = [("queue", path.as_str())];
    eventually(WAIT, "the gauges show the held item", || {
        let now = scrape(&recorder);
        now.get(names::IN_FLIGHT, &queue_label) == Some(1.0) && now.get(names::DEPTH, &queue_label) == Some(1.0)
    });

    // Another holder takes the lock over (as Curator's old holder's
    // unversioned delete allows): the acknowledge finds the lease lost.
    let lock = format!("{locks}/queue-0000000000");
    let other = crate::support::client();
    other.delete(&lock, None).unwrap();
    other.create(&lock, b"new holder", CreateMode::Ephemeral).unwrap();
    go.send(()).unwrap();
    let error = errors.recv_timeout(WAIT).expect("the consumer hears of the loss");
    assert!(error.contains("lost the lock"), "{error}");
    eventually(WAIT, "the lease loss is counted and nothing is in flight", || {
        let now = scrape(&recorder);
        now.get(names::LEASE_LOSSES, &queue_label) == Some(1.0) && now.get(names::IN_FLIGHT, &queue_label) == Some(0.0)
    });
    assert_eq!(queue.stats().lease_lost, 1);
    let now = scrape(&recorder);
    // The consumer answered Ok: taken and acknowledged by the consumer,
    // though its acknowledge then found the lease lost.
    assert_eq!(now.value(names::TAKES, &queue_label), 1.0);
    assert_eq!(now.value(names::ACKS, &queue_label), 1.0);
    assert_eq!(now.value(names::PUTS, &queue_label), 1.0);
    queue.close();
    producer.close();
}

#[test]
fn a_released_pull_delivery_is_not_a_take() {
    let recorder = PrometheusBuilder::new().build_recorder();
    let path = unique_path("metrics-release");
    let client = client();
    let (builder, receiver) = QueueBuilder::new(&client, &path, StringSerializer)
        .lock_path(&unique_path("metrics-release-locks"))
        .metrics_interval(Duration::ZERO)
        .pull_consumer();
    let queue = metrics::with_local_recorder(&recorder, || builder.put_in_background(false).build_queue().unwrap());
    queue.put("once".into()).unwrap();
    receiver.take_timeout(WAIT).unwrap().expect("the item").release();
    assert_eq!(
        receiver.take_timeout(WAIT).unwrap().expect("the item again").ack(),
        "once"
    );
    let queue_label = [("queue", path.as_str())];
    eventually(WAIT, "the acknowledgement is counted", || {
        scrape(&recorder).get(names::ACKS, &queue_label) == Some(1.0)
    });
    let now = scrape(&recorder);
    assert_eq!(now.value(names::TAKES, &queue_label), 1.0, "the release is not a take");
    // Every series of a queue is there from its start, at zero until counted.
    assert_eq!(
        now.get(names::REQUEUES, &[queue_label[0], ("attempt", "1")]),
        Some(0.0),
        "a release is no failed attempt"
    );
    assert_eq!(
        now.value(&format!("{}_count", names::PUT_TO_CONSUME), &queue_label),
        1.0
    );
    assert_eq!(now.get(names::DEPTH, &queue_label), None, "no sampler, no gauge");
    queue.close();
}

#[test]
fn put_failures_pending_puts_consumer_errors_and_dead_letters_waiting_are_recorded() {
    let recorder = PrometheusBuilder::new().build_recorder();
    let server = zk_queue::testing::TestingServer::start().unwrap();
    let client = crate::support::client_of(&server.connect_string());
    let path = unique_path("metrics-failures");
    let dead = unique_path("metrics-failures-dead");
    let queue = metrics::with_local_recorder(&recorder, || {
        QueueBuilder::new(&client, &path, StringSerializer)
            .consumer(|_: String| -> Result<(), ConsumeError> { Err("always fails".into()) })
            .lock_path(&unique_path("metrics-failures-locks"))
            .max_attempts(1)
            .dead_letter_path(&dead)
            .metrics_interval(Duration::from_millis(50))
            .build_queue()
            .unwrap()
    });
    let failing = unique_path("metrics-put-failures");
    let producer = metrics::with_local_recorder(&recorder, || {
        QueueBuilder::new(&client, &failing, StringSerializer)
            .put_in_background(true)
            .metrics_interval(Duration::ZERO)
            .build_queue()
            .unwrap()
    });
    let (label, failing_label) = ([("queue", path.as_str())], [("queue", failing.as_str())]);

    queue.put("poison".into()).unwrap();
    eventually(
        WAIT,
        "the consumer error and the dead letter waiting are recorded",
        || {
            let now = scrape(&recorder);
            now.get(names::CONSUMER_ERRORS, &label) == Some(1.0)
                && now.get(names::DEAD_LETTERS_WAITING, &label) == Some(1.0)
        },
    );

    // A stalled server holds a background put pending.
    server.pause().unwrap();
    producer.put("held up".into()).unwrap();
    assert_eq!(scrape(&recorder).get(names::PUTS_PENDING, &failing_label), Some(1.0));
    server.resume().unwrap();
    assert!(producer.flush_timeout(WAIT));
    assert_eq!(scrape(&recorder).get(names::PUTS_PENDING, &failing_label), Some(0.0));

    // An ephemeral node cannot have children: a queue node replaced by one
    // fails the put.
    let (stored, _) = client.get_children(&failing).unwrap();
    assert_eq!(stored.len(), 1, "{stored:?}");
    client.delete(&format!("{failing}/{}", stored[0]), None).unwrap();
    client.delete(&failing, None).unwrap();
    client.create(&failing, b"", CreateMode::Ephemeral).unwrap();
    producer.put("fails".into()).unwrap();
    assert!(!producer.flush_timeout(WAIT), "the flush reports the failure");
    let now = scrape(&recorder);
    assert_eq!(now.value(names::PUT_FAILURES, &failing_label), 1.0);
    assert_eq!(
        now.value(names::PUTS, &failing_label),
        1.0,
        "the put before it was stored"
    );
    assert_eq!(now.get(names::PUTS_PENDING, &failing_label), Some(0.0));
    producer.close();
    queue.close();
}
