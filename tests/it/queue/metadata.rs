//! `ItemMeta`: what consumers (callback and pull) learn about each item.

use std::sync::Arc;
use std::time::UNIX_EPOCH;

use parking_lot::Mutex;
use zk_queue::{ConsumeError, DeliverAt, ItemMeta, QueueBuilder, StringSerializer, ZkClient};

use crate::queue::{in_millis, WAIT};
use crate::support::queues::producer;
use crate::support::{client, eventually, server::unique_path};

/// The only child of `path` and its creation time in epoch milliseconds.
fn only_node(client: &ZkClient, path: &str) -> (String, u128) {
    let (names, _) = client.get_children(path).unwrap();
    assert_eq!(names.len(), 1, "{names:?}");
    let stat = client.exists(&format!("{path}/{}", names[0])).unwrap().unwrap();
    (names[0].clone(), stat.ctime as u128)
}

fn millis(meta: &ItemMeta) -> u128 {
    meta.put_time().duration_since(UNIX_EPOCH).unwrap().as_millis()
}

#[test]
fn a_callback_consumer_reads_attempt_name_priority_and_first_put_time_across_a_requeue() {
    let path = unique_path("meta-callback");
    let client = client();
    producer(&client, &path)
        .build_priority_queue(0)
        .unwrap()
        .put_multi(vec!["a".into(), "b".into()], 7)
        .unwrap();
    let (node, ctime) = only_node(&client, &path);
    let seen = Arc::new(Mutex::new(Vec::<(String, ItemMeta)>::new()));
    let record = seen.clone();
    let _queue = QueueBuilder::new(&client, &path, StringSerializer)
        .lock_path(&unique_path("meta-callback-locks"))
        .consumer_with_meta(move |item: String, meta: &ItemMeta| -> Result<(), ConsumeError> {
            let first = meta.attempt() == 1;
            record.lock().push((item.clone(), meta.clone()));
            if item == "b" && first {
                return Err("the second record fails once".into());
            }
            Ok(())
        })
        .build_priority_queue(0)
        .unwrap();
    eventually(WAIT, "a, b, then b again", || seen.lock().len() >= 3);
    let seen = seen.lock().clone();
    let items: Vec<&str> = seen.iter().map(|(item, _)| item.as_str()).collect();
    assert_eq!(items, ["a", "b", "b"]);
    let (a, b, again) = (&seen[0].1, &seen[1].1, &seen[2].1);
    assert_eq!(a, b, "the records of one node share its metadata");
    assert_eq!((a.name(), a.attempt(), a.priority()), (node.as_str(), 1, Some(7)));
    assert_eq!((a.id(), a.due()), (None, None));
    assert_eq!(
        millis(a),
        ctime,
        "an item never requeued was put when its node was created"
    );
    assert_ne!(again.name(), node, "the requeued record is a new node");
    assert_eq!((again.attempt(), again.priority()), (2, Some(7)));
    assert_eq!(
        again.put_time(),
        a.put_time(),
        "the first put is kept across the requeue"
    );
}

#[test]
fn pull_deliveries_carry_the_id_the_due_time_and_the_attempt() {
    let client = client();
    let ids = unique_path("meta-pull-id");
    let (builder, receiver) = QueueBuilder::new(&client, &ids, StringSerializer)
        .lock_path(&unique_path("meta-pull-id-locks"))
        .pull_consumer();
    let _queue = builder.build_id_queue().unwrap();
    producer(&client, &ids)
        .build_id_queue()
        .unwrap()
        .put("ship".into(), "order/42")
        .unwrap();
    let first = receiver.take_timeout(WAIT).unwrap().expect("an item");
    let meta = first.meta().clone();
    assert_eq!(
        (meta.id(), meta.attempt(), meta.priority()),
        (Some("order_42"), 1, None)
    );
    assert!(meta.name().starts_with("queue-|order_42|"), "{}", meta.name());
    first.nack("not yet");
    let second = receiver.take_timeout(WAIT).unwrap().expect("requeued");
    assert_eq!((second.meta().id(), second.meta().attempt()), (Some("order_42"), 2));
    assert_eq!(second.meta().put_time(), meta.put_time());
    second.ack();

    let delays = unique_path("meta-pull-delay");
    let (builder, receiver) = QueueBuilder::new(&client, &delays, StringSerializer).pull_consumer();
    let _queue = builder.build_delay_queue().unwrap();
    let due = in_millis(-1_000);
    producer(&client, &delays)
        .build_delay_queue()
        .unwrap()
        .put("remind".into(), due)
        .unwrap();
    let reminder = receiver.take_timeout(WAIT).unwrap().expect("an item");
    assert_eq!(reminder.meta().due(), Some(due));
    assert_eq!((reminder.meta().attempt(), reminder.meta().id()), (1, None));
    assert!(reminder.meta().due() <= Some(DeliverAt::now()));
    reminder.ack();
}
