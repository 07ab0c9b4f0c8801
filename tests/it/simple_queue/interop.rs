//! `SimpleQueue` shares queues with Java: the classic ZooKeeper recipe and
//! Curator's `SimpleDistributedQueue`, in both directions.

use std::time::Duration;

use zk_queue::testing::TestingServer;
use zk_queue::SimpleQueue;

use crate::support::java::{expected_items, run_peer, spawn_peer};
use crate::support::{client, client_of, server::shared_connect_string, server::unique_path, wait_for_watches};

const N: usize = 200;

fn take_all(queue: &SimpleQueue, n: usize) -> Vec<String> {
    (0..n)
        .map(|_| {
            let item = queue
                .take_timeout(Duration::from_secs(30))
                .unwrap()
                .expect("item within 30 s");
            String::from_utf8(item).unwrap()
        })
        .collect()
}

fn java_offers_rust_takes(mode: &str) {
    let path = unique_path(mode);
    run_peer(mode, &shared_connect_string(), &path, N, "java-").unwrap();
    let queue = SimpleQueue::new(&client(), &path).unwrap();
    assert_eq!(queue.len().unwrap(), N);
    assert_eq!(take_all(&queue, N), expected_items("java-", N));
    assert_eq!(queue.poll().unwrap(), None);
}

fn rust_offers_java_takes(mode: &str) {
    let path = unique_path(mode);
    let queue = SimpleQueue::new(&client(), &path).unwrap();
    for item in expected_items("rust-", N) {
        queue.offer(item.as_bytes()).unwrap();
    }
    let taken = run_peer(mode, &shared_connect_string(), &path, N, "").unwrap();
    assert_eq!(taken, expected_items("rust-", N));
    assert_eq!(queue.len().unwrap(), 0);
}

#[test]
fn rust_takes_in_order_what_the_java_classic_recipe_offers() {
    java_offers_rust_takes("classic-offer");
}

#[test]
fn java_classic_recipe_takes_in_order_what_rust_offers() {
    rust_offers_java_takes("classic-take");
}

#[test]
fn rust_takes_in_order_what_curator_simple_queue_offers() {
    java_offers_rust_takes("simple-offer");
}

#[test]
fn curator_simple_queue_takes_in_order_what_rust_offers() {
    rust_offers_java_takes("simple-take");
}

#[test]
fn a_blocked_java_consumer_receives_items_rust_offers_later() {
    // A server of its own: the Java take's watch is the only one on it.
    let server = TestingServer::start().unwrap();
    let path = unique_path("java-waits");
    let client = client_of(&server.connect_string());
    // The Java recipe's take() throws NodeExistsException if someone else
    // creates a missing queue node while it does (one of its known bugs).
    client.ensure_path(&path).unwrap();
    let queue = SimpleQueue::new(&client, &path).unwrap();
    let consumer = spawn_peer("classic-take", &server.connect_string(), &path, 20, "").unwrap();
    // The Java take found the queue empty and waits on its watch.
    wait_for_watches(&server, 1);
    for item in expected_items("late-", 20) {
        queue.offer(item.as_bytes()).unwrap();
    }
    assert_eq!(consumer.wait().unwrap(), expected_items("late-", 20));
}

#[test]
fn rust_and_java_consumers_share_one_queue_without_duplicates() {
    let path = unique_path("mixed");
    let queue = SimpleQueue::new(&client(), &path).unwrap();
    for item in expected_items("m-", 100) {
        queue.offer(item.as_bytes()).unwrap();
    }
    let java = spawn_peer("simple-take", &shared_connect_string(), &path, 40, "").unwrap();
    let mut rust = take_all(&queue, 60);
    let mut all = java.wait().unwrap();
    all.append(&mut rust);
    all.sort();
    let mut expected = expected_items("m-", 100);
    expected.sort();
    assert_eq!(all, expected);
}
