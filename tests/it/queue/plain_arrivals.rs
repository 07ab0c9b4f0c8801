//! A plain consumer claiming alone learns of new items from the names its
//! arrivals watch reports and takes them without listing the queue again,
//! in the queue's order; it lists again after a disconnection, whose events
//! ZooKeeper drops. Competing with another consumer, it hears of that
//! consumer's deletes and goes back to listing with a one-shot child watch,
//! and every item is still delivered exactly once.

use std::time::Duration;

use zk_queue::testing::FaultProxy;
use zk_queue::{ConnectionState, QueueBuilder, StringSerializer};

use super::{items, WAIT};
use crate::support::queues::{consumer, producer};
use crate::support::recorder::Recorder;
use crate::support::server::{shared_connect_string, unique_path};
use crate::support::{client, proxied_client, wait_for_state};

/// Items put one at a time while a consumer takes them.
const ONE_BY_ONE: usize = 40;

#[test]
fn a_lone_plain_consumer_takes_items_put_one_at_a_time_without_listing_the_queue_again() {
    let path = unique_path("plain-arrivals");
    let producer_client = client();
    let producer = producer(&producer_client, &path).build_queue().unwrap();
    let consumer_client = client();
    let recorder = Recorder::new();
    let queue = consumer(&consumer_client, &path, &recorder).build_queue().unwrap();
    producer.put("first".into()).unwrap();
    recorder.wait_for(1, WAIT);
    let listings_before = consumer_client.stats().get_children;
    for i in 0..ONE_BY_ONE {
        producer.put(format!("item-{i}")).unwrap();
        recorder.wait_for(i + 2, WAIT);
    }
    let listings = consumer_client.stats().get_children - listings_before;
    queue.close();
    println!("{listings} listings for {ONE_BY_ONE} items put one at a time");
    // Listing at each wake (a child watch) is at least one listing per item:
    // the item's create fires it, and the consumer's own delete again.
    assert!(listings <= 2, "{listings} listings for {ONE_BY_ONE} items");
    let expected: Vec<String> = std::iter::once("first".to_string())
        .chain(items("item-", ONE_BY_ONE))
        .collect();
    assert_eq!(recorder.items(), expected);
}

#[test]
fn a_lone_plain_consumer_takes_a_stream_of_items_in_put_order_without_listing_it() {
    const STREAM: usize = 1_000;
    let path = unique_path("plain-arrivals-stream");
    let producer_client = client();
    // Background puts: many items are created while the consumer claims.
    let producer = QueueBuilder::new(&producer_client, &path, StringSerializer)
        .put_in_background(true)
        .build_queue()
        .unwrap();
    let consumer_client = client();
    let recorder = Recorder::new();
    let queue = consumer(&consumer_client, &path, &recorder).build_queue().unwrap();
    producer.put("first".into()).unwrap();
    recorder.wait_for(1, WAIT);
    let listings_before = consumer_client.stats().get_children;
    let stream = items("item-", STREAM);
    for item in &stream {
        producer.put(item.clone()).unwrap();
    }
    assert!(producer.flush_timeout(WAIT), "the puts were not stored");
    recorder.wait_for(STREAM + 1, WAIT);
    let listings = consumer_client.stats().get_children - listings_before;
    queue.close();
    println!("{listings} listings for a stream of {STREAM} items");
    // One worker: the items come in the order they were put, each once.
    let expected: Vec<String> = std::iter::once("first".to_string()).chain(stream).collect();
    assert_eq!(recorder.items(), expected);
    // It lists only to start, after a disconnection or at the rescan
    // interval (30 s); listing per pass listed 4 times here on a quiet
    // machine, more under load.
    assert!(listings <= 2, "{listings} listings for {STREAM} items");
}

#[test]
fn a_plain_consumer_takes_an_item_put_while_it_was_disconnected() {
    let path = unique_path("plain-arrivals-cut");
    let producer_client = client();
    let producer = producer(&producer_client, &path).build_queue().unwrap();
    let proxy = FaultProxy::start(&shared_connect_string()).unwrap();
    let consumer_client = proxied_client(&proxy);
    let states = consumer_client.state_listener();
    let recorder = Recorder::new();
    // No rescan within the test: only listing after the reconnection finds
    // the item.
    let queue = consumer(&consumer_client, &path, &recorder)
        .rescan_interval(Duration::from_secs(600))
        .build_queue()
        .unwrap();
    producer.put("before".into()).unwrap();
    recorder.wait_for(1, WAIT);
    // The item's creation event goes into the blackhole, then the connection
    // is cut.
    proxy.blackhole();
    producer.put("while away".into()).unwrap();
    proxy.cut();
    proxy.heal();
    wait_for_state(&states, ConnectionState::Reconnected, WAIT);
    producer.put("after".into()).unwrap();
    assert_eq!(recorder.wait_for(3, WAIT), ["before", "while away", "after"]);
    queue.close();
}

#[test]
fn a_plain_consumer_competing_with_another_delivers_each_item_once_and_lists_again_instead_of_watching() {
    const BULK: usize = 200;
    let path = unique_path("plain-arrivals-competing");
    let producer_client = client();
    let producer = producer(&producer_client, &path).build_queue().unwrap();
    let (a_client, b_client) = (client(), client());
    // A slow consumer with small windows, so the other takes most items.
    let a = Recorder::new().slow(Duration::from_millis(10));
    let a_queue = consumer(&a_client, &path, &a).claim_window(4).build_queue().unwrap();
    producer.put("first".into()).unwrap();
    a.wait_for(1, WAIT);
    let b = Recorder::new();
    let b_queue = consumer(&b_client, &path, &b).build_queue().unwrap();
    let bulk = items("bulk-", BULK);
    let background = QueueBuilder::new(&producer_client, &path, StringSerializer)
        .put_in_background(true)
        .build_queue()
        .unwrap();
    for item in &bulk {
        background.put(item.clone()).unwrap();
    }
    assert!(background.flush_timeout(WAIT), "the puts were not stored");
    crate::support::eventually(WAIT, "the bulk consumed", || {
        a.items().len() + b.items().len() == BULK + 1
    });
    b_queue.close();
    let mut delivered: Vec<String> = a.items().into_iter().chain(b.items()).collect();
    delivered.sort();
    let mut expected: Vec<String> = std::iter::once("first".to_string()).chain(bulk).collect();
    expected.sort();
    assert_eq!(delivered, expected, "every item exactly once");
    println!("the slow consumer took {} of {BULK}", a.items().len() - 1);

    // Having heard of the other's deletes, the consumer lists with a child
    // watch for a while (its pause before watching arrivals again is longer
    // than this part takes): at least once per item.
    let taken = a.items().len();
    let listings_before = a_client.stats().get_children;
    for i in 0..ONE_BY_ONE {
        producer.put(format!("late-{i}")).unwrap();
        a.wait_for(taken + i + 1, WAIT);
    }
    let listings = a_client.stats().get_children - listings_before;
    a_queue.close();
    println!("{listings} listings for {ONE_BY_ONE} items after the competition");
    assert!(
        listings >= ONE_BY_ONE as u64 / 2,
        "{listings} listings for {ONE_BY_ONE} items: still watching arrivals"
    );
    assert_eq!(a.items()[taken..], items("late-", ONE_BY_ONE)[..]);
}
