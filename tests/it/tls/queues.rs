//! The queue family over TLS: a plain queue, a lock-safe queue and the
//! classic recipe's queue move items between two clients, each over its own
//! TLS connection.

use std::time::Duration;

use zk_queue::{QueueBuilder, SimpleQueue, StringSerializer};

use super::{shared_secure_connect_string, tls_client_of, trusting};
use crate::support::queues::{consumer, producer};
use crate::support::recorder::Recorder;
use crate::support::server::unique_path;

const WAIT: Duration = Duration::from_secs(30);

/// Two clients over TLS: a producer's and a consumer's.
fn two_clients() -> (zk_queue::ZkClient, zk_queue::ZkClient) {
    let connect = shared_secure_connect_string();
    (tls_client_of(&connect, trusting()), tls_client_of(&connect, trusting()))
}

fn items(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("item-{i}")).collect()
}

#[test]
fn a_queue_over_tls_delivers_every_item_in_order() {
    let (producing, consuming) = two_clients();
    let path = unique_path("tls-queue");
    let recorder = Recorder::new();
    let _consumer = consumer(&consuming, &path, &recorder).build_queue().unwrap();
    let queue = producer(&producing, &path).build_queue().unwrap();
    for item in items(20) {
        queue.put(item).unwrap();
    }
    assert_eq!(recorder.wait_for(20, WAIT), items(20));
}

#[test]
fn a_lock_safe_queue_over_tls_hands_items_to_take_and_deletes_them_on_ack() {
    let (producing, consuming) = two_clients();
    let path = unique_path("tls-locked");
    let (builder, receiver) = QueueBuilder::new(&consuming, &path, StringSerializer)
        .lock_path(&unique_path("tls-locked-locks"))
        .pull_consumer();
    let _queue = builder.build_queue().unwrap();
    let queue = producer(&producing, &path).build_queue().unwrap();
    for item in items(10) {
        queue.put(item).unwrap();
    }
    let mut got = Vec::new();
    for _ in 0..10 {
        let delivery = receiver.take_timeout(WAIT).unwrap().expect("an item");
        got.push(delivery.ack());
    }
    assert_eq!(got, items(10));
    crate::support::eventually(WAIT, "acknowledged items are deleted", || {
        producing.get_children(&path).unwrap().0.is_empty()
    });
}

#[test]
fn a_simple_queue_over_tls_offers_and_removes_in_order() {
    let (producing, consuming) = two_clients();
    let path = unique_path("tls-simple");
    let producer = SimpleQueue::new(&producing, &path).unwrap();
    let consumer = SimpleQueue::new(&consuming, &path).unwrap();
    for item in items(10) {
        producer.offer(item.as_bytes()).unwrap();
    }
    for item in items(10) {
        assert_eq!(consumer.take_timeout(WAIT).unwrap(), Some(item.into_bytes()));
    }
}
