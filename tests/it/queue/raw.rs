//! `RawQueue`: taking and purging a queue of either layout as stored bytes.

use std::collections::HashSet;
use std::thread;
use std::time::Duration;

use zk_queue::inspect::{Kind, Layout};
use zk_queue::{admin::RawQueue, client::CreateMode, DeliverAt, Error, SimpleQueue};

use crate::support::queues::producer;
use crate::support::{client, eventually, frame, server::unique_path};

const WAIT: Duration = Duration::from_secs(30);

fn texts(taken: &zk_queue::admin::RawTaken) -> Vec<String> {
    taken
        .records()
        .map(|r| String::from_utf8_lossy(r).into_owned())
        .collect()
}

#[test]
fn raw_take_follows_each_kinds_consumption_order_and_deletes_what_it_returns() {
    let client = client();
    let path = unique_path("raw-priority");
    let queue = producer(&client, &path).build_priority_queue(1).unwrap();
    for (item, priority) in [("low", 9), ("urgent", -3), ("middle", 0)] {
        queue.put(item.into(), priority).unwrap();
    }
    queue.close();
    let raw = RawQueue::new(&client, &path).unwrap();
    assert_eq!(raw.listing().unwrap().kind, Kind::Priority);
    let taken = raw.try_take(2).unwrap();
    assert_eq!(texts(&taken), ["urgent", "middle"]);
    assert_eq!(taken.items[0].name.priority, Some(-3));
    assert_eq!(texts(&raw.try_take(5).unwrap()), ["low"]);
    assert!(raw.listing().unwrap().is_empty(), "every taken item is deleted");

    let classic = unique_path("raw-classic");
    let simple = SimpleQueue::new(&client, &classic).unwrap();
    for item in ["one", "two", "three"] {
        simple.put(item.as_bytes()).unwrap();
    }
    let raw = RawQueue::new(&client, &classic).unwrap();
    let taken = raw.try_take(3).unwrap();
    assert_eq!(taken.items[0].name.layout, Layout::Classic);
    assert_eq!(texts(&taken), ["one", "two", "three"]);
    assert_eq!(simple.try_take().unwrap(), None);
}

#[test]
fn raw_take_returns_every_record_of_a_multi_record_node() {
    let client = client();
    let path = unique_path("raw-multi");
    let queue = producer(&client, &path).build_queue().unwrap();
    queue.put_multi(vec!["a".into(), "b".into(), "c".into()]).unwrap();
    queue.put("d".into()).unwrap();
    queue.close();
    let raw = RawQueue::new(&client, &path).unwrap();
    let taken = raw.try_take(2).unwrap();
    assert_eq!(texts(&taken), ["a", "b", "c"], "a node is taken whole");
    assert_eq!(taken.items.len(), 1);
    assert_eq!(texts(&raw.try_take(2).unwrap()), ["d"]);
}

#[test]
fn raw_take_leaves_undecodable_items_and_reports_each_once() {
    let client = client();
    let path = unique_path("raw-corrupt");
    client.ensure_path(&path).unwrap();
    let bad_data = b"not a frame".to_vec();
    let (bad, _) = client
        .create(&format!("{path}/queue-"), &bad_data, CreateMode::PersistentSequential)
        .unwrap();
    client
        .create(
            &format!("{path}/queue-"),
            &frame(&[b"good"]),
            CreateMode::PersistentSequential,
        )
        .unwrap();
    let raw = RawQueue::new(&client, &path).unwrap();
    let taken = raw.take_timeout(2, Duration::from_millis(300)).unwrap();
    assert_eq!(texts(&taken), ["good"]);
    assert_eq!(taken.undecodable.len(), 1, "{:?}", taken.undecodable);
    assert_eq!(format!("{path}/{}", taken.undecodable[0].name), bad);
    let (data, _) = client.get_data(&bad).unwrap();
    assert_eq!(data, bad_data, "the undecodable item stays as it was");
}

#[test]
fn raw_take_timeout_waits_on_a_watch_not_by_polling() {
    let client = client();
    let path = unique_path("raw-wait");
    client.ensure_path(&path).unwrap();
    let taker = crate::support::client();
    let handle = {
        let taker = taker.clone();
        let path = path.clone();
        thread::spawn(move || {
            let raw = RawQueue::new(&taker, &path).unwrap();
            raw.take_timeout(1, WAIT).unwrap()
        })
    };
    eventually(WAIT, "the taker listed the empty queue", || {
        taker.stats().get_children >= 1
    });
    let listed = taker.stats().get_children;
    // A polling take would list again within this window; a watching one
    // lists again only when woken by the put below.
    thread::sleep(Duration::from_millis(500));
    assert_eq!(
        taker.stats().get_children,
        listed,
        "a waiting take lists again only when the children change"
    );
    client
        .create(
            &format!("{path}/queue-"),
            &frame(&[b"late"]),
            CreateMode::PersistentSequential,
        )
        .unwrap();
    let taken = handle.join().unwrap();
    assert_eq!(texts(&taken), ["late"]);
}

#[test]
fn raw_take_takes_a_delayed_item_only_once_it_is_due() {
    let client = client();
    let path = unique_path("raw-delay");
    let queue = producer(&client, &path).build_delay_queue().unwrap();
    let due = DeliverAt::after(Duration::from_millis(700));
    queue.put("later".into(), due).unwrap();
    queue.close();
    let raw = RawQueue::new(&client, &path).unwrap();
    assert!(raw.try_take(1).unwrap().items.is_empty(), "not due yet");
    let taken = raw.take_timeout(1, WAIT).unwrap();
    assert!(DeliverAt::now() >= due, "taken before it was due");
    assert_eq!(texts(&taken), ["later"]);
    assert_eq!(taken.items[0].name.due, Some(due.epoch_millis()));
}

#[test]
fn two_raw_takers_racing_on_one_queue_take_each_item_once() {
    const N: usize = 200;
    let client = client();
    let path = unique_path("raw-race");
    let queue = producer(&client, &path).build_queue().unwrap();
    for i in 0..N {
        queue.put(format!("item-{i}")).unwrap();
    }
    queue.close();
    let takers: Vec<_> = (0..2)
        .map(|_| {
            let path = path.clone();
            thread::spawn(move || {
                let raw = RawQueue::new(&crate::support::client(), &path).unwrap();
                let mut mine = Vec::new();
                loop {
                    let taken = raw.try_take(7).unwrap();
                    if taken.items.is_empty() {
                        return mine;
                    }
                    mine.extend(texts(&taken));
                }
            })
        })
        .collect();
    let all: Vec<String> = takers.into_iter().flat_map(|t| t.join().unwrap()).collect();
    let unique: HashSet<&String> = all.iter().collect();
    assert_eq!(unique.len(), N, "every item taken");
    assert_eq!(all.len(), N, "no item taken twice");
}

#[test]
fn raw_purge_deletes_every_item_and_leaves_foreign_children() {
    let client = client();
    let path = unique_path("raw-purge");
    let queue = producer(&client, &path).build_queue().unwrap();
    for i in 0..25 {
        queue.put(format!("{i}")).unwrap();
    }
    queue.close();
    client
        .create(&format!("{path}/lock"), b"", CreateMode::Persistent)
        .unwrap();
    let raw = RawQueue::new(&client, &path).unwrap();
    assert_eq!(raw.purge().unwrap().deleted, 25);
    let (left, _) = client.get_children(&path).unwrap();
    assert_eq!(left, ["lock"]);
    assert_eq!(raw.purge().unwrap().deleted, 0);
    let missing = RawQueue::new(&client, &unique_path("raw-purge-missing")).unwrap();
    assert!(matches!(missing.purge(), Err(Error::NoNode { .. })));
    assert!(matches!(RawQueue::new(&client, "/"), Err(Error::InvalidPath { .. })));
}

#[test]
fn with_the_lock_path_raw_take_and_purge_leave_an_item_a_lock_safe_consumer_holds() {
    let client = client();
    let path = unique_path("raw-locked");
    let locks = unique_path("raw-locked-locks");
    let producer = producer(&client, &path).build_queue().unwrap();
    for item in ["held", "free-1", "free-2"] {
        producer.put(item.into()).unwrap();
    }
    let (builder, receiver) = zk_queue::QueueBuilder::new(&client, &path, zk_queue::StringSerializer)
        .lock_path(&locks)
        .claim_window(1)
        .pull_consumer();
    let consumer = builder.build_queue().unwrap();
    let delivery = receiver.take_timeout(WAIT).unwrap().expect("an item");
    assert_eq!(delivery.item(), "held");

    let raw = RawQueue::new(&client, &path).unwrap().lock_path(&locks).unwrap();
    let taken = raw.try_take(10).unwrap();
    assert_eq!(texts(&taken), ["free-1", "free-2"]);
    assert_eq!(taken.held.len(), 1, "{:?}", taken.held);
    let (held_lock, _) = client.get_children(&locks).unwrap();
    assert_eq!(held_lock, taken.held, "the consumer's lock names the held item");

    for item in ["later-1", "later-2"] {
        producer.put(item.into()).unwrap();
    }
    let purged = raw.purge().unwrap();
    assert_eq!((purged.deleted, purged.held), (2, 1));
    let (left, _) = client.get_children(&path).unwrap();
    assert_eq!(left, taken.held, "only the held item is left");
    let (locks_left, _) = client.get_children(&locks).unwrap();
    assert_eq!(locks_left, taken.held, "the purge's own locks are gone");

    assert_eq!(delivery.ack(), "held");
    eventually(WAIT, "the holder's acknowledge deleted its item", || {
        client.get_children(&path).unwrap().0.is_empty()
    });
    consumer.close();
    producer.close();
}
