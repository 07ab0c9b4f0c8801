//! The pull form of a consumer: plain threads take and acknowledge items.

use std::thread;
use std::time::{Duration, Instant};

use zk_queue::{Error, QueueBuilder, StringSerializer};

use crate::support::queues::producer;
use crate::support::{client, server::unique_path};

const WAIT: Duration = Duration::from_secs(30);

#[test]
fn threads_take_items_in_order_and_acks_delete_them() {
    let path = unique_path("pull");
    let client = client();
    let (builder, receiver) = QueueBuilder::new(&client, &path, StringSerializer)
        .lock_path(&unique_path("pull-locks"))
        .pull_consumer();
    let _queue = builder.build_queue().unwrap();
    let producer = producer(&client, &path).build_queue().unwrap();
    for i in 0..10 {
        producer.put(i.to_string()).unwrap();
    }
    let mut got = Vec::new();
    for _ in 0..10 {
        let delivery = receiver.take_timeout(WAIT).unwrap().expect("an item");
        got.push(delivery.ack());
    }
    assert_eq!(got, (0..10).map(|i| i.to_string()).collect::<Vec<_>>());
    let deadline = Instant::now() + WAIT;
    while !client.get_children(&path).unwrap().0.is_empty() {
        assert!(Instant::now() < deadline, "acknowledged items are deleted");
        thread::sleep(Duration::from_millis(20));
    }
    assert!(receiver.take_timeout(Duration::from_millis(200)).unwrap().is_none());
}

#[test]
fn an_unacknowledged_delivery_is_requeued_not_lost() {
    let path = unique_path("pull-nack");
    let client = client();
    let (builder, receiver) = QueueBuilder::new(&client, &path, StringSerializer)
        .lock_path(&unique_path("pull-nack-locks"))
        .pull_consumer();
    let _queue = builder.build_queue().unwrap();
    let producer = producer(&client, &path).build_queue().unwrap();
    producer.put("job".into()).unwrap();
    let first = receiver.take_timeout(WAIT).unwrap().unwrap();
    assert_eq!(*first, "job");
    // While the delivery is held, the item stays in ZooKeeper.
    assert_eq!(client.get_children(&path).unwrap().0.len(), 1);
    drop(first); // neither ack nor nack
    let second = receiver.take_timeout(WAIT).unwrap().expect("redelivered");
    assert_eq!(*second, "job");
    second.nack("still failing");
    let third = receiver.take_timeout(WAIT).unwrap().expect("redelivered again");
    third.ack();
}

#[test]
fn take_fails_with_queue_closed_once_the_queue_closes_while_the_client_stays_open() {
    let path = unique_path("pull-close");
    let client = client();
    let (builder, receiver) = QueueBuilder::new(&client, &path, StringSerializer).pull_consumer();
    let queue = builder.build_queue().unwrap();
    let taker = receiver.clone();
    let (result_tx, result) = crossbeam_channel::bounded(1);
    // Not scoped: a take the close never wakes must fail the test, not hang it.
    thread::spawn(move || result_tx.send(taker.take().map(|delivery| delivery.ack())));
    let deadline = Instant::now() + WAIT;
    while receiver.waiting_takers() == 0 {
        assert!(Instant::now() < deadline, "the take never waited");
        thread::sleep(Duration::from_millis(5));
    }
    queue.close();
    let result = result.recv_timeout(WAIT).expect("the waiting take returned");
    assert!(matches!(result, Err(Error::QueueClosed)), "{result:?}");
    assert!(client.exists("/").is_ok(), "the client is still open");
}

#[test]
fn the_errors_channel_tells_of_an_item_moved_to_the_dead_letter_path() {
    let path = unique_path("pull-errors");
    let dead = unique_path("pull-errors-dead");
    let client = client();
    let (builder, receiver) = QueueBuilder::new(&client, &path, StringSerializer)
        .lock_path(&unique_path("pull-errors-locks"))
        .dead_letter_path(&dead)
        .pull_consumer();
    let errors = receiver.errors();
    let _queue = builder.build_queue().unwrap();
    client
        .create(
            &format!("{path}/queue-"),
            b"not a frame",
            zk_queue::client::CreateMode::PersistentSequential,
        )
        .unwrap();
    let producer = producer(&client, &path).build_queue().unwrap();
    producer.put("good".into()).unwrap();
    assert_eq!(receiver.take_timeout(WAIT).unwrap().expect("an item").ack(), "good");
    match errors.recv_timeout(WAIT) {
        Ok(Error::CorruptItem { path: item, .. }) => assert_eq!(item, format!("{path}/queue-0000000000")),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        client.get_children(&dead).unwrap().0.len(),
        1,
        "moved to the dead-letter path"
    );
}

/// The attempts recorded in each item under `path`, by item name.
fn recorded_attempts(client: &zk_queue::ZkClient, path: &str) -> Vec<u32> {
    let (mut names, _) = client.get_children(path).unwrap();
    names.sort();
    names
        .iter()
        .map(|name| {
            let (data, _) = client.get_data(&format!("{path}/{name}")).unwrap();
            zk_queue::inspect::decode_item(zk_queue::inspect::Layout::Curator, &data)
                .unwrap()
                .attempts
        })
        .collect()
}

#[test]
fn closing_a_pull_consumer_charges_no_attempt_to_items_no_caller_took() {
    let path = unique_path("pull-close-clean");
    let (locks, dead) = (
        unique_path("pull-close-clean-locks"),
        unique_path("pull-close-clean-dead"),
    );
    let client = client();
    let producer = producer(&client, &path).build_queue().unwrap();
    for i in 0..4 {
        producer.put(format!("job-{i}")).unwrap();
    }
    producer.close();
    for restart in 0..3 {
        let (builder, receiver) = QueueBuilder::new(&client, &path, StringSerializer)
            .lock_path(&locks)
            .max_attempts(2)
            .dead_letter_path(&dead)
            .pull_consumer();
        let queue = builder.build_queue().unwrap();
        // Wait until the queue has claimed items and offers one, then close
        // without taking anything.
        crate::support::eventually(WAIT, "the consumer locked items", || {
            client.get_children(&locks).map(|(l, _)| !l.is_empty()).unwrap_or(false)
        });
        queue.close();
        drop(receiver);
        assert_eq!(
            recorded_attempts(&client, &path),
            [0, 0, 0, 0],
            "restart {restart}: no attempt charged"
        );
    }
    assert!(
        client.get_children(&dead).map(|(d, _)| d.is_empty()).unwrap_or(true),
        "nothing dead-lettered"
    );
}

#[test]
fn dropping_every_receiver_gives_the_claimed_items_back_without_an_attempt_and_stops_claiming() {
    let path = unique_path("pull-dropped");
    let (locks, dead) = (unique_path("pull-dropped-locks"), unique_path("pull-dropped-dead"));
    let client = client();
    let producer = producer(&client, &path).build_queue().unwrap();
    for i in 0..3 {
        producer.put(format!("job-{i}")).unwrap();
    }
    let (builder, receiver) = QueueBuilder::new(&client, &path, StringSerializer)
        .lock_path(&locks)
        .max_attempts(1)
        .dead_letter_path(&dead)
        .pull_consumer();
    let queue = builder.build_queue().unwrap();
    let shared = receiver.clone();
    crate::support::eventually(WAIT, "the consumer locked items", || {
        client.get_children(&locks).map(|(l, _)| !l.is_empty()).unwrap_or(false)
    });
    drop((receiver, shared));
    crate::support::eventually(WAIT, "every lock released", || {
        let stats = queue.stats();
        stats.released > 0
            && stats.released == stats.claimed
            && client.get_children(&locks).map(|(l, _)| l.is_empty()).unwrap_or(false)
    });
    assert_eq!(recorded_attempts(&client, &path), [0, 0, 0], "no attempt charged");
    assert!(
        client.get_children(&dead).map(|(d, _)| d.is_empty()).unwrap_or(true),
        "nothing dead-lettered (max_attempts 1)"
    );
    // Another consumer takes them all; the receiverless one claims none of
    // them meanwhile, although each lock and delete wakes its watches.
    let claimed = queue.stats().claimed;
    let recorder = crate::support::recorder::Recorder::new();
    let other = crate::support::queues::consumer(&client, &path, &recorder)
        .lock_path(&locks)
        .build_queue()
        .unwrap();
    producer.put("job-3".into()).unwrap();
    recorder.wait_for(4, WAIT);
    assert_eq!(
        queue.stats().claimed,
        claimed,
        "claimed nothing after its receivers were dropped"
    );
    assert_eq!(queue.stats().consumer_errors, 0);
    other.close();
    queue.close();
}

#[test]
fn a_released_delivery_comes_back_without_an_attempt_and_a_multi_keeps_only_its_unacknowledged_records() {
    let path = unique_path("pull-release");
    let client = client();
    let (builder, receiver) = QueueBuilder::new(&client, &path, StringSerializer)
        .lock_path(&unique_path("pull-release-locks"))
        .max_attempts(1)
        .dead_letter_path(&unique_path("pull-release-dead"))
        .pull_consumer();
    let queue = builder.build_queue().unwrap();
    let producer = producer(&client, &path).build_queue().unwrap();
    producer.put("single".into()).unwrap();
    let first = receiver.take_timeout(WAIT).unwrap().expect("an item");
    assert_eq!(first.item(), "single");
    first.release();
    let again = receiver.take_timeout(WAIT).unwrap().expect("the released item again");
    assert_eq!(
        again.item(),
        "single",
        "with max_attempts(1) a counted attempt would have dead-lettered it"
    );
    assert_eq!(again.ack(), "single");

    producer.put_multi(vec!["a".into(), "b".into(), "c".into()]).unwrap();
    assert_eq!(receiver.take_timeout(WAIT).unwrap().expect("a").ack(), "a");
    let b = receiver.take_timeout(WAIT).unwrap().expect("b");
    assert_eq!(b.item(), "b");
    b.release();
    let mut rest = Vec::new();
    for _ in 0..2 {
        rest.push(receiver.take_timeout(WAIT).unwrap().expect("b and c again").ack());
    }
    assert_eq!(rest, ["b", "c"], "the acknowledged record is not delivered again");
    assert!(receiver.take_timeout(Duration::from_millis(300)).unwrap().is_none());
    queue.close();
    producer.close();
}

#[test]
fn closing_a_pull_consumer_reports_the_items_it_released() {
    let path = unique_path("pull-close-report");
    let client = client();
    let producer = producer(&client, &path).build_queue().unwrap();
    producer.put("untaken".into()).unwrap();
    let (builder, _receiver) = QueueBuilder::new(&client, &path, StringSerializer)
        .lock_path(&unique_path("pull-close-report-locks"))
        .pull_consumer();
    let queue = builder.build_queue().unwrap();
    crate::support::eventually(WAIT, "the item is claimed", || queue.stats().claimed == 1);
    let report = queue.close();
    assert_eq!(
        (report.released, report.finished, report.still_running),
        (1, 0, 0),
        "{report:?}"
    );
    assert_eq!(queue.stats().consumer_errors, 0, "a release is not a failure");
    assert_eq!(recorded_attempts(&client, &path), [0]);
    producer.close();
}
