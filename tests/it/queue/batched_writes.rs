//! Writes batched into multis, nodes unchanged: puts that meet in the put
//! thread and `SimpleQueue::put_all` go out as multis of creates (one node
//! per item, as before), bounded by count and packet size; a lost multi
//! reply neither loses nor duplicates items; Curator's consumer and the
//! classic recipe read what the batched producers wrote; a multi of deletes
//! that loses one node to a competitor deletes the others.

use std::time::Duration;

use zk_queue::testing::{FaultProxy, Request};
use zk_queue::{inspect, QueueBuilder, SimpleQueue, StringSerializer, ZkClient};

use crate::support::java::{expected_items, run_peer, PeerCommand};
use crate::support::server::{shared_connect_string, unique_path};
use crate::support::{self, client, eventually};

const WAIT: Duration = Duration::from_secs(60);

/// The decoded items stored under `path`, one per node, in queue order.
fn stored(direct: &ZkClient, path: &str) -> Vec<String> {
    let (names, _) = direct.get_children(path).unwrap();
    let kind = inspect::Kind::detect(&names);
    inspect::order(&names, inspect::Layout::Curator, kind)
        .iter()
        .map(|item| {
            let (data, _) = direct.get_data(&format!("{path}/{}", item.name)).unwrap();
            let records = inspect::decode_item(inspect::Layout::Curator, &data).unwrap().records;
            assert_eq!(records.len(), 1, "{}: one item per node", item.name);
            String::from_utf8(records[0].clone()).unwrap()
        })
        .collect()
}

#[test]
fn background_puts_go_out_as_multis_one_node_each_and_curators_consumer_reads_them_in_order() {
    const ITEMS: usize = 1_000;
    let client = client();
    let path = unique_path("batched-background-puts");
    let queue = QueueBuilder::new(&client, &path, StringSerializer)
        .put_in_background(true)
        .build_queue()
        .unwrap();
    let before = client.stats();
    let items: Vec<String> = (0..ITEMS).map(|i| format!("item {i:04}")).collect();
    for item in &items {
        queue.put(item.clone()).unwrap();
    }
    assert!(queue.flush_timeout(WAIT), "every put finished");
    let after = client.stats();
    let (multis, creates) = (after.multi - before.multi, after.create - before.create);
    // One create each would be 1,000 writes; the put thread gathers what
    // waits while a batch is in flight, up to 64 creates a multi. Load can
    // shrink the batches, so the bound is a quarter of that, not 1/64.
    assert!(multis > 0, "no multi sent ({creates} creates)");
    assert!(
        multis + creates <= (ITEMS / 4) as u64,
        "{multis} multis and {creates} creates for {ITEMS} puts"
    );
    assert_eq!(stored(&client, &path), items, "one node per item, in put order");
    let taken = PeerCommand::new("curator-consume", &shared_connect_string(), &path, ITEMS)
        .timeout(WAIT)
        .run()
        .unwrap();
    assert_eq!(taken, items);
}

#[test]
fn simple_queue_put_all_is_one_multi_per_64_items_and_the_classic_recipe_takes_them_in_order() {
    const ITEMS: usize = 200;
    let client = client();
    let path = unique_path("batched-put-all");
    let queue = SimpleQueue::new(&client, &path).unwrap();
    queue.put(b"creates the queue node").unwrap();
    assert_eq!(
        queue.poll().unwrap().as_deref(),
        Some(b"creates the queue node".as_slice())
    );
    let items = expected_items("rust-", ITEMS);
    let before = client.stats();
    let results = queue.put_all(&items).unwrap();
    let after = client.stats();
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    assert_eq!(
        (after.multi - before.multi, after.create - before.create),
        (ITEMS.div_ceil(64) as u64, 0),
        "multis and creates sent"
    );
    let paths: Vec<&String> = results.iter().map(|r| r.as_ref().unwrap()).collect();
    let mut sorted = paths.clone();
    sorted.sort();
    assert_eq!(paths, sorted, "sequence numbers in the slice's order");
    let taken = run_peer("classic-take", &shared_connect_string(), &path, ITEMS, "").unwrap();
    assert_eq!(taken, items);
}

#[test]
fn curators_simple_queue_takes_what_put_all_wrote() {
    const ITEMS: usize = 150;
    let path = unique_path("batched-put-all-curator");
    let queue = SimpleQueue::new(&client(), &path).unwrap();
    let items = expected_items("rust-", ITEMS);
    assert!(queue.put_all(&items).unwrap().iter().all(Result::is_ok));
    let taken = run_peer("simple-take", &shared_connect_string(), &path, ITEMS, "").unwrap();
    assert_eq!(taken, items);
}

#[test]
fn put_all_splits_its_multis_by_the_servers_packet_size() {
    // Three of these fit the default 1 MB packet, four do not.
    const SIZE: usize = 300_000;
    const ITEMS: usize = 9;
    let client = client();
    let path = unique_path("batched-put-all-large");
    let queue = SimpleQueue::new(&client, &path).unwrap();
    queue.put(b"first").unwrap();
    let items: Vec<Vec<u8>> = (0..ITEMS).map(|i| vec![b'a' + i as u8; SIZE]).collect();
    let before = client.stats();
    let results = queue.put_all(&items).unwrap();
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    assert_eq!(client.stats().multi - before.multi, 3, "three items a multi");
    assert_eq!(queue.take().unwrap(), b"first");
    for item in &items {
        assert_eq!(&queue.take().unwrap(), item);
    }
}

#[test]
fn put_all_keeps_its_order_around_an_item_too_large_to_share_a_multi() {
    // Too large to share the default 1 MB packet with an item of 1 KB, so
    // it is created alone, between runs that share multis (the first run
    // ends at 64 items, just before it).
    let large = vec![b'L'; 1_048_000];
    let small = |what: &str, i: usize| {
        let mut item = format!("{what}-{i:02}-").into_bytes();
        item.resize(1_000, b'.');
        item
    };
    let client = client();
    let path = unique_path("batched-put-all-order");
    let queue = SimpleQueue::new(&client, &path).unwrap();
    let mut items: Vec<Vec<u8>> = (0..64).map(|i| small("before", i)).collect();
    items.push(large);
    items.extend((0..70).map(|i| small("after", i)));
    let before = client.stats();
    let results = queue.put_all(&items).unwrap();
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    assert!(
        client.stats().multi - before.multi >= 2,
        "the small items shared multis"
    );
    for (n, item) in items.iter().enumerate() {
        assert!(&queue.take().unwrap() == item, "item {n} out of order");
    }
}

#[test]
fn a_put_all_whose_multi_reply_is_lost_fails_its_items_as_unknown_and_stored_each_once() {
    const ITEMS: usize = 10;
    let proxy = FaultProxy::start(&shared_connect_string()).unwrap();
    let client = support::proxied_client(&proxy);
    let direct = support::client();
    let path = unique_path("batched-put-all-reply-lost");
    direct.ensure_path(&path).unwrap();
    let queue = SimpleQueue::new(&client, &path).unwrap();
    let items = expected_items("lost-", ITEMS);
    proxy.drop_reply_to(Request::Multi);
    let results = queue.put_all(&items).unwrap();
    assert!(!proxy.dropping_reply(), "the fault fired");
    assert!(
        results.iter().all(|r| matches!(r, Err(e) if e.is_retryable())),
        "{results:?}"
    );
    // The multi was applied whole: every item once, in order.
    let reader = SimpleQueue::new(&direct, &path).unwrap();
    let mut got = Vec::new();
    while let Some(item) = reader.poll().unwrap() {
        got.push(String::from_utf8(item).unwrap());
    }
    assert_eq!(got, items);
}

#[test]
fn background_puts_whose_multi_reply_is_lost_are_not_resent_when_part_of_the_multi_was_taken() {
    const ITEMS: usize = 10;
    let proxy = FaultProxy::start(&shared_connect_string()).unwrap();
    let client = support::proxied_client(&proxy);
    let direct = support::client();
    let path = unique_path("batched-puts-reply-lost-taken");
    let queue = QueueBuilder::new(&client, &path, StringSerializer)
        .put_in_background(true)
        .build_queue()
        .unwrap();
    queue.put("creates the queue node".into()).unwrap();
    assert!(queue.flush_timeout(WAIT));
    let (names, _) = direct.get_children(&path).unwrap();
    direct.delete(&format!("{path}/{}", names[0]), None).unwrap();
    // Every forwarded chunk waits, so the producer's reconnection after the
    // loss is still under way when the link is cut off below.
    proxy.set_delay(Duration::from_millis(300));
    proxy.drop_reply_to(Request::Multi);
    let items: Vec<String> = (0..ITEMS).map(|i| format!("item {i}")).collect();
    for item in &items {
        queue.put(item.clone()).unwrap();
    }
    eventually(WAIT, "the multi's reply was dropped", || !proxy.dropping_reply());
    // Partitioned until this test has taken an item: the producer cannot
    // read back before, however the load orders the two.
    proxy.blackhole();
    // The newest node belongs to the last multi applied (the one whose reply
    // was lost, or one sent behind it): take it, as a consumer could before
    // the producer reads back. Which item it holds depends on how the puts
    // were batched, so it is read, not assumed.
    let (mut names, _) = direct.get_children(&path).unwrap();
    names.sort();
    let newest = names.last().unwrap().clone();
    let before = stored(&direct, &path);
    direct.delete(&format!("{path}/{newest}"), None).unwrap();
    let after = stored(&direct, &path);
    let taken: Vec<&String> = before.iter().filter(|item| !after.contains(item)).collect();
    assert_eq!(taken.len(), 1, "one item taken: {before:?} then {after:?}");
    let taken = taken[0].clone();
    proxy.set_delay(Duration::ZERO);
    proxy.heal();
    assert!(queue.flush_timeout(WAIT), "every put finished");
    assert_eq!(queue.stats().puts_resent, 0, "the rest of its multi was found");
    let left = stored(&direct, &path);
    assert_eq!(left.len(), ITEMS - 1, "no item stored twice: {left:?}");
    assert!(
        !left.contains(&taken),
        "the taken item {taken:?} was not put again: {left:?}"
    );
}

#[test]
fn a_multi_of_deletes_that_finds_one_node_gone_deletes_the_others() {
    let client = client();
    let path = unique_path("batched-deletes-competitor");
    client.ensure_path(&path).unwrap();
    let nodes: Vec<(String, Option<i32>)> = (0..10).map(|i| (format!("{path}/n{i}"), None)).collect();
    for (node, _) in &nodes {
        client
            .create(node, b"x", zk_queue::client::CreateMode::Persistent)
            .unwrap();
    }
    // Another consumer took one of them.
    support::client().delete(&nodes[4].0, None).unwrap();
    let before = client.stats();
    let results = client.delete_in_multis(&nodes).unwrap();
    let after = client.stats();
    for (i, result) in results.iter().enumerate() {
        match i {
            4 => assert!(matches!(result, Err(e) if e.is_no_node()), "{result:?}"),
            _ => assert!(result.is_ok(), "{i}: {result:?}"),
        }
    }
    assert_eq!(
        (after.multi - before.multi, after.delete - before.delete),
        (2, 0),
        "the multi, then again without the gone node"
    );
    assert!(client.get_children(&path).unwrap().0.is_empty());
}

#[test]
fn put_all_into_a_deleted_queue_node_creates_it_again_and_sends_each_refused_multi_once_more() {
    const ITEMS: usize = 100;
    let client = client();
    let path = unique_path("batched-put-all-recreated");
    let queue = SimpleQueue::new(&client, &path).unwrap();
    queue.put(b"creates the queue node").unwrap();
    assert!(queue.poll().unwrap().is_some());
    // A reaped container, say: every create of both multis finds no parent.
    client.delete(&path, None).unwrap();
    let items = expected_items("again-", ITEMS);
    let before = client.stats();
    let results = queue.put_all(&items).unwrap();
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    assert_eq!(
        client.stats().multi - before.multi,
        2 * ITEMS.div_ceil(64) as u64,
        "each multi refused whole, then sent again"
    );
    let mut got = Vec::new();
    while let Some(item) = queue.poll().unwrap() {
        got.push(String::from_utf8(item).unwrap());
    }
    assert_eq!(got, items);
}

#[test]
fn deletes_that_keep_finding_nodes_gone_fall_back_to_single_deletes_after_two_contested_rounds() {
    let client = client();
    let path = unique_path("batched-deletes-contested");
    client.ensure_path(&path).unwrap();
    let nodes: Vec<(String, Option<i32>)> = (0..10).map(|i| (format!("{path}/n{i}"), None)).collect();
    for (node, _) in &nodes {
        client
            .create(node, b"x", zk_queue::client::CreateMode::Persistent)
            .unwrap();
    }
    // Two taken by competitors: each fails a round of multis.
    let other = support::client();
    other.delete(&nodes[2].0, None).unwrap();
    other.delete(&nodes[6].0, None).unwrap();
    let before = client.stats();
    let results = client.delete_in_multis(&nodes).unwrap();
    let after = client.stats();
    for (i, result) in results.iter().enumerate() {
        match i {
            2 | 6 => assert!(matches!(result, Err(e) if e.is_no_node()), "{i}: {result:?}"),
            _ => assert!(result.is_ok(), "{i}: {result:?}"),
        }
    }
    assert_eq!(
        (after.multi - before.multi, after.delete - before.delete),
        (2, 8),
        "two failed multis, then the other eight one delete each"
    );
    assert!(client.get_children(&path).unwrap().0.is_empty());
}
