//! A priority consumer keeps its ordered view current from the names of the
//! items created since its listing, instead of listing a deep backlog again
//! every `min_items_before_refresh` items; an urgent item still overtakes.
//! Without a lock path, it takes the items created after a pass that left
//! nothing behind without listing the queue again. It lists again after a
//! disconnection, whose events ZooKeeper drops.

use std::time::{Duration, Instant};

use zk_queue::testing::{FaultProxy, TestingServer};
use zk_queue::{ConnectionState, QueueBuilder};

use super::WAIT;
use crate::support::queues::consumer;
use crate::support::recorder::Recorder;
use crate::support::server::{shared_connect_string, unique_path};
use crate::support::{client, client_of, proxied_client, wait_for_state, wait_for_watches, watch_count};

const BACKLOG: usize = 10_000;
const REFRESH: usize = 10;

#[test]
fn an_urgent_item_overtakes_a_ten_thousand_item_backlog_without_the_backlog_being_listed_again() {
    let path = unique_path("arrivals");
    let producer_client = client();
    let producer = QueueBuilder::new(&producer_client, &path, zk_queue::StringSerializer)
        .put_in_background(true)
        .build_priority_queue(REFRESH)
        .unwrap();
    for i in 0..BACKLOG {
        producer.put(format!("backlog-{i}"), 10).unwrap();
    }
    assert!(producer.flush_timeout(WAIT), "the backlog was not stored");

    let consumer_client = client();
    let recorder = Recorder::new().slow(Duration::from_millis(1));
    let queue = consumer(&consumer_client, &path, &recorder)
        .build_priority_queue(REFRESH)
        .unwrap();
    recorder.wait_for(100, WAIT);
    let listings_before = consumer_client.stats().get_children;
    let put_at = Instant::now();
    producer.put("urgent".into(), 1).unwrap();
    assert!(producer.flush_timeout(WAIT));
    let before_put = recorder.items().len();
    recorder.wait_until(WAIT, |r| r.items().iter().any(|i| i == "urgent"));
    let waited = put_at.elapsed();
    // Another 500 items: 50 looks for urgent items.
    let items = recorder.wait_for(before_put + 500, WAIT);
    let at = items.iter().position(|i| i == "urgent").unwrap();
    let listings = consumer_client.stats().get_children - listings_before;
    queue.close();
    println!(
        "urgent item delivered {waited:?} after its put, {} items after the put returned; {listings} listings over the next 500 items",
        at.saturating_sub(before_put)
    );
    // Claimed ahead (a window of REFRESH), then at most REFRESH more before
    // the next look for urgent items.
    assert!(
        at < before_put + 3 * REFRESH,
        "the urgent item came {} items after its put",
        at - before_put
    );
    assert!(at < BACKLOG / 2, "it did not overtake the backlog");
    // Listing the backlog again at each look would be one listing per
    // REFRESH items.
    assert!(listings <= 2, "{listings} listings of the backlog over 500 items");
}

#[test]
fn an_urgent_item_created_while_the_consumer_was_disconnected_still_overtakes_the_backlog() {
    // ZooKeeper drops the events of a connection loss: the consumer lists
    // again after one instead of trusting its arrivals.
    let path = unique_path("arrivals-cut");
    let producer_client = client();
    let producer = QueueBuilder::new(&producer_client, &path, zk_queue::StringSerializer)
        .put_in_background(true)
        .build_priority_queue(REFRESH)
        .unwrap();
    for i in 0..3_000 {
        producer.put(format!("backlog-{i}"), 10).unwrap();
    }
    assert!(producer.flush_timeout(WAIT), "the backlog was not stored");

    let proxy = FaultProxy::start(&shared_connect_string()).unwrap();
    let consumer_client = proxied_client(&proxy);
    let states = consumer_client.state_listener();
    // Slow enough that the scanner mostly waits to hand items over, with no
    // request of its own in flight to fail when the connection goes (which
    // would make it list again anyway).
    let recorder = Recorder::new().slow(Duration::from_millis(20));
    let queue = consumer(&consumer_client, &path, &recorder)
        .build_priority_queue(REFRESH)
        .unwrap();
    recorder.wait_for(20, WAIT);
    // The item's creation event goes nowhere: into the blackhole, or to the
    // connection cut after it.
    proxy.blackhole();
    producer.put("urgent".into(), 1).unwrap();
    assert!(producer.flush_timeout(WAIT));
    proxy.cut();
    proxy.heal();
    wait_for_state(&states, ConnectionState::Reconnected, WAIT);
    let reconnected_at = recorder.items().len();
    recorder.wait_until(WAIT, |r| r.items().iter().any(|i| i == "urgent"));
    let items = recorder.items();
    let at = items.iter().position(|i| i == "urgent").unwrap();
    queue.close();
    println!(
        "urgent item delivered {} items after the reconnection",
        at.saturating_sub(reconnected_at)
    );
    assert!(
        at < reconnected_at + 3 * REFRESH,
        "the urgent item came {} items after the reconnection",
        at.saturating_sub(reconnected_at)
    );
}

#[test]
fn a_priority_consumer_takes_items_put_one_at_a_time_without_listing_the_queue_again() {
    const ITEMS: usize = 30;
    let path = unique_path("arrivals-whole");
    let producer_client = client();
    let producer = QueueBuilder::new(&producer_client, &path, zk_queue::StringSerializer)
        .put_in_background(false)
        .build_priority_queue(REFRESH)
        .unwrap();
    let consumer_client = client();
    let recorder = Recorder::new();
    let queue = consumer(&consumer_client, &path, &recorder)
        .build_priority_queue(REFRESH)
        .unwrap();
    producer.put("first".into(), 1).unwrap();
    recorder.wait_for(1, WAIT);
    let listings_before = consumer_client.stats().get_children;
    for i in 0..ITEMS {
        producer.put(format!("item-{i}"), 1).unwrap();
        recorder.wait_for(i + 2, WAIT);
    }
    let listings = consumer_client.stats().get_children - listings_before;
    queue.close();
    println!("{listings} listings for {ITEMS} items put one at a time");
    // Listing at each wake would be at least one listing per item.
    assert!(listings <= 2, "{listings} listings for {ITEMS} items");
    let expected: Vec<String> = std::iter::once("first".to_string())
        .chain((0..ITEMS).map(|i| format!("item-{i}")))
        .collect();
    assert_eq!(recorder.items(), expected);
}

#[test]
fn a_priority_consumer_takes_an_item_put_while_it_was_disconnected() {
    let path = unique_path("arrivals-whole-cut");
    let producer_client = client();
    let producer = QueueBuilder::new(&producer_client, &path, zk_queue::StringSerializer)
        .put_in_background(false)
        .build_priority_queue(REFRESH)
        .unwrap();
    let proxy = FaultProxy::start(&shared_connect_string()).unwrap();
    let consumer_client = proxied_client(&proxy);
    let states = consumer_client.state_listener();
    let recorder = Recorder::new();
    // No rescan within the test: only listing after the reconnection finds
    // the item.
    let queue = consumer(&consumer_client, &path, &recorder)
        .rescan_interval(Duration::from_secs(600))
        .build_priority_queue(REFRESH)
        .unwrap();
    producer.put("before".into(), 1).unwrap();
    recorder.wait_for(1, WAIT);
    // The item's creation event goes into the blackhole, then the connection
    // is cut.
    proxy.blackhole();
    producer.put("while away".into(), 1).unwrap();
    proxy.cut();
    proxy.heal();
    wait_for_state(&states, ConnectionState::Reconnected, WAIT);
    assert_eq!(recorder.wait_for(2, WAIT), ["before", "while away"]);
    queue.close();
}

#[test]
fn a_closed_priority_consumer_leaves_no_watch_behind_on_a_client_that_stays_open() {
    // A server of its own: only this consumer watches on it.
    let server = TestingServer::start().unwrap();
    let client = client_of(&server.connect_string());
    let path = unique_path("arrivals-close");
    let recorder = Recorder::new();
    let queue = consumer(&client, &path, &recorder)
        .build_priority_queue(REFRESH)
        .unwrap();
    let producer = QueueBuilder::new(&client, &path, zk_queue::StringSerializer)
        .build_priority_queue(REFRESH)
        .unwrap();
    producer.put("one".into(), 1).unwrap();
    assert!(producer.flush_timeout(WAIT));
    recorder.wait_for(1, WAIT);
    // The queue's child watch and its arrivals watch.
    crate::support::eventually(WAIT, "the consumer's watches", || watch_count(&server) >= 2);
    queue.close();
    producer.close();
    wait_for_watches(&server, 0);
    client.close();
}
