//! A client told that its servers are older than 3.6
//! ([`ZkClientBuilder::without_multi_read`],
//! [`ZkClientBuilder::without_persistent_watches`]) never sends what such
//! a server would refuse, and its queue consumers still drain a queue in
//! order.

use std::time::Duration;

use zk_queue::testing::TestingServer;
use zk_queue::{ZkClient, ZkClientBuilder};

use super::WAIT;
use crate::support::queues::{consumer, producer};
use crate::support::recorder::Recorder;
use crate::support::server::{shared_connect_string, unique_path};
use crate::support::{client, client_of, eventually};

/// A builder of a client of `connect` with the timeouts of the tests.
fn builder(connect: &str) -> ZkClientBuilder {
    ZkClient::builder(connect)
        .session_timeout(Duration::from_secs(10))
        .connection_timeout(Duration::from_secs(10))
        .request_timeout(Duration::from_secs(10))
}

/// Puts `count` items into the plain queue `path`, has a consumer on
/// `consuming` drain them, and returns how many data reads that client sent.
fn drain(consuming: &ZkClient, path: &str, count: usize) -> u64 {
    let producing = client();
    let queue = producer(&producing, path).build_queue().unwrap();
    let items: Vec<String> = (0..count).map(|i| format!("item-{i:04}")).collect();
    for item in &items {
        queue.put(item.clone()).unwrap();
    }
    let before = consuming.stats().get_data;
    let recorder = Recorder::new();
    let consumer_queue = consumer(consuming, path, &recorder).build_queue().unwrap();
    assert_eq!(recorder.wait_for(count, WAIT), items, "drained in order");
    consumer_queue.close();
    assert!(recorder.errors().is_empty(), "{:?}", recorder.errors());
    consuming.stats().get_data - before
}

#[test]
fn a_client_without_multi_reads_reads_each_queue_item_with_a_request_of_its_own() {
    const ITEMS: usize = 200;
    let connect = shared_connect_string();
    let old = builder(&connect).without_multi_read().connect().unwrap();
    let reads = drain(&old, &unique_path("no-multi-read"), ITEMS);
    assert!(reads >= ITEMS as u64, "{reads} data reads for {ITEMS} items");

    // The same traffic on a client with multi-reads: far fewer requests,
    // so the count above tells the two ways apart.
    let current = client_of(&connect);
    let reads = drain(&current, &unique_path("multi-read"), ITEMS);
    assert!(reads < ITEMS as u64 / 4, "{reads} data reads for {ITEMS} items");
}

/// The data watches `server` holds, by path (`wchp`): persistent watches
/// are among them, one-shot child watches are not.
fn data_watch_paths(server: &TestingServer) -> String {
    server.four_letter_word("wchp", Duration::from_secs(5)).unwrap()
}

/// Runs a priority consumer of `path` on `consuming` while items come in
/// before and after it is idle; returns what `server` reports of its data
/// watches while it waits for more.
fn drain_priority(server: &TestingServer, consuming: &ZkClient, path: &str) -> String {
    let producing = client_of(&server.connect_string());
    let queue = producer(&producing, path).build_priority_queue(10).unwrap();
    for (item, priority) in [("low", 9), ("high", 1), ("middle", 5)] {
        queue.put(item.into(), priority).unwrap();
    }
    let recorder = Recorder::new();
    let consumer_queue = consumer(consuming, path, &recorder).build_priority_queue(10).unwrap();
    assert_eq!(recorder.wait_for(3, WAIT), ["high", "middle", "low"]);
    // Idle now: new items wake it.
    for round in 0..3 {
        queue.put(format!("later-{round}"), 1).unwrap();
        recorder.wait_for(4 + round, WAIT);
    }
    let watches = data_watch_paths(server);
    consumer_queue.close();
    assert!(recorder.errors().is_empty(), "{:?}", recorder.errors());
    assert_eq!(recorder.items()[3..], ["later-0", "later-1", "later-2"]);
    watches
}

#[test]
fn a_priority_consumer_without_persistent_watches_lists_instead_and_drains_in_order() {
    let server = TestingServer::start().unwrap();
    let old = builder(&server.connect_string())
        .without_persistent_watches()
        .connect()
        .unwrap();
    let path = unique_path("no-persistent-watch");
    let watches = drain_priority(&server, &old, &path);
    assert!(!watches.contains(&path), "a watch on the queue: {watches}");
    assert_eq!(old.stats().other, 0, "a request besides reads and writes was sent");

    // The same traffic on a client with persistent watches: its watch shows,
    // so the check above can see one.
    let current = client_of(&server.connect_string());
    let path = unique_path("persistent-watch");
    let watches = drain_priority(&server, &current, &path);
    assert!(watches.contains(&path), "no watch on the queue: {watches}");
    eventually(WAIT, "the watch is removed with its consumer", || {
        !data_watch_paths(&server).contains(&path)
    });
}
