//! Bad input and hostile data: every row of the README's "Bad input and
//! hostile data" table has a test here (or names one elsewhere).

use std::cell::Cell;
use std::collections::BTreeSet;
use std::thread;
use std::time::{Duration, Instant};

use zk_queue::testing::TestingServer;
use zk_queue::{
    ConnectionState, CreateMode, DistributedQueue, Error, ItemReceiver, PutError, QueueBuilder, SimpleQueue,
    StringSerializer, ZkClient,
};

use crate::support::queues::{consumer, producer};
use crate::support::recorder::Recorder;
use crate::support::{client, client_of, eventually, frame, server::unique_path};

const WAIT: Duration = Duration::from_secs(30);

fn children(client: &ZkClient, path: &str) -> BTreeSet<String> {
    client.get_children(path).unwrap().0.into_iter().collect()
}

/// Deletes `path` as an operator would, trying again while it has children: a
/// consumer working from an older listing may briefly lock an item that is
/// already gone, then let the lock go when it finds the item missing.
fn delete_once_empty(client: &ZkClient, path: &str) {
    eventually(WAIT, "the node deleted once empty", || {
        match client.delete(path, None) {
            Ok(()) | Err(Error::NoNode { .. }) => true,
            Err(Error::NotEmpty { .. }) => false,
            Err(e) => panic!("{e}"),
        }
    });
}

fn started_producer(client: &ZkClient, path: &str) -> DistributedQueue<String> {
    producer(client, path).build_queue().unwrap()
}

// ---------------------------------------------------------------------------
// Invalid paths, conflicting paths

#[test]
fn invalid_paths_are_refused_by_every_builder_before_any_request() {
    let client = client();
    let before = client.stats();
    let invalid = [
        "",
        "queue",
        "/queue/",
        "/a//b",
        "/a/./b",
        "/a/.",
        "/a/../b",
        "/",
        "/zookeeper",
        "/zookeeper/q",
        "/a\u{0}b",
        "/a\nb",
        "/a\u{7f}",
        "/a\u{e000}",
    ];
    let good = "/hostile-never-created";
    let queue = |path: &str| QueueBuilder::new(&client, path, StringSerializer);
    for path in invalid {
        let results: [(&str, zk_queue::Result<DistributedQueue<String>>); 3] = [
            ("queue path", queue(path).build_queue()),
            ("lock path", queue(good).lock_path(path).build_queue()),
            ("dead-letter path", queue(good).dead_letter_path(path).build_queue()),
        ];
        for (role, result) in results {
            match result {
                Err(Error::InvalidPath { path: p, .. }) => assert_eq!(p, path, "{role}"),
                other => panic!("{role} {path:?}: {:?}", other.map(|_| ())),
            }
        }
        assert!(
            matches!(queue(path).build_priority_queue(1), Err(Error::InvalidPath { .. })),
            "{path:?}"
        );
        assert!(
            matches!(SimpleQueue::new(&client, path), Err(Error::InvalidPath { .. })),
            "{path:?}"
        );
    }
    assert_eq!(client.stats(), before, "no request was sent");
    assert_eq!(client.exists(good).unwrap(), None);
}

#[test]
fn lock_and_dead_letter_paths_overlapping_the_queue_are_refused_by_build() {
    let client = client();
    let before = client.stats();
    let b = || QueueBuilder::new(&client, "/q", StringSerializer);
    let cases: [(&str, zk_queue::Result<DistributedQueue<String>>); 6] = [
        ("lock path inside the queue", b().lock_path("/q/locks").build_queue()),
        ("lock path equal to the queue", b().lock_path("/q").build_queue()),
        (
            "dead letters equal to the queue",
            b().dead_letter_path("/q").build_queue(),
        ),
        (
            "dead letters inside the queue",
            b().dead_letter_path("/q/dead").build_queue(),
        ),
        (
            "lock path equal to the dead letters",
            b().lock_path("/q-side").dead_letter_path("/q-side").build_queue(),
        ),
        (
            "id queue path with '|'",
            QueueBuilder::new(&client, "/a|b", StringSerializer)
                .build_id_queue()
                .map(|_| unreachable!()),
        ),
    ];
    for (case, result) in cases {
        match result {
            Err(Error::InvalidArgument(what)) => assert!(what.contains("must not"), "{case}: {what}"),
            Err(Error::InvalidPath { reason, .. }) => assert!(reason.contains("must not"), "{case}: {reason}"),
            other => panic!("{case}: {:?}", other.map(|_| ())),
        }
    }
    assert_eq!(client.stats(), before, "no request was sent");
}

// ---------------------------------------------------------------------------
// Empty and oversized items

#[test]
fn an_empty_record_round_trips_alone_and_inside_a_multi() {
    let path = unique_path("hostile-empty");
    let client = client();
    let recorder = Recorder::new();
    let _consumer = consumer(&client, &path, &recorder).build_queue().unwrap();
    let producer = started_producer(&client, &path);
    producer.put(String::new()).unwrap();
    producer.put_multi(vec!["a".into(), String::new(), "b".into()]).unwrap();
    assert_eq!(recorder.wait_for(4, WAIT), ["", "a", "", "b"]);
    // SimpleQueue: simple_queue::recipe::empty_items_round_trip.
}

#[test]
fn put_multi_of_no_items_is_refused_before_sending() {
    let path = unique_path("hostile-no-items");
    let client = client();
    let producer = started_producer(&client, &path);
    let before = client.stats();
    match producer.put_multi(Vec::new()) {
        Err(Error::InvalidArgument(what)) => assert!(what.contains("at least one item"), "{what}"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        producer.put_multi_timeout(Vec::new(), Duration::from_secs(1)),
        Err(PutError::Failed(Error::InvalidArgument(_)))
    ));
    assert_eq!(client.stats(), before, "no request was sent");
    assert!(children(&client, &path).is_empty(), "no empty node was stored");
}

#[test]
fn an_oversized_put_is_refused_before_sending_naming_the_limit_in_bytes() {
    let path = unique_path("hostile-oversized");
    let client = client();
    let producer = started_producer(&client, &path);
    let before = client.stats();
    let big = "x".repeat(2 << 20);
    for result in [
        producer.put(big.clone()),
        producer.put_multi(vec!["a".into(), big.clone()]),
        producer.put_multi(vec!["y".repeat(600_000), "z".repeat(600_000)]),
    ] {
        let err = result.unwrap_err();
        let message = err.to_string();
        match err {
            Error::ItemTooLarge { size, limit } => {
                assert!(size > limit && limit < 0xfffff, "{size} {limit}");
                assert!(
                    message.contains(&format!("limit of {limit} bytes")) && message.contains("jute.maxbuffer"),
                    "{message}"
                );
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(client.stats(), before, "no request was sent");
    // The session carried on.
    assert_eq!(client.state(), ConnectionState::Connected);
    producer.put("small".into()).unwrap();
    assert_eq!(children(&client, &path).len(), 1);
    // SimpleQueue: bad_input::an_item_over_the_packet_limit_is_refused_and_the_connection_stays_up.
}

// ---------------------------------------------------------------------------
// Corrupt items and foreign names in the queue

/// A `queue-` node whose data is not a valid item, and why.
const CORRUPT: [(&str, &[u8]); 6] = [
    ("raw bytes", b"not a frame"),
    ("wrong version", b"\x00\x01\x00\x02\x01\x00\x00\x00\x01x\x02"),
    ("truncated", b"\x00\x01\x00\x01\x01\x00\x00\x00\x05hel"),
    ("unknown opcode", b"\x00\x01\x00\x01\x07"),
    ("negative length", b"\x00\x01\x00\x01\x01\xff\xff\xff\xff\x02"),
    ("record not UTF-8", b"\x00\x01\x00\x01\x01\x00\x00\x00\x02\xff\xfe\x02"),
];

/// Children no Curator-style consumer may touch, with valid item data.
const FOREIGN: [&str; 4] = ["job-1", "lock", "qn-xyz", "qn-0000000001"];

/// `queue-` names without a server-made sequence, with corrupt data.
const ODD_NAMES: [&str; 3] = ["queue-", "queue-abc", "queue-|x|"];

/// Fills a queue with good items between corrupt ones and foreign children
/// (their names ending in `suffix`); returns the corrupt data stored.
fn seed_hostile(client: &ZkClient, path: &str, suffix: &str, good: &mut impl Iterator<Item = String>) -> Vec<Vec<u8>> {
    client.ensure_path(path).unwrap();
    let item = format!("{path}/queue-");
    let mut corrupt = Vec::new();
    for (_, data) in CORRUPT {
        let g = good.next().unwrap();
        client
            .create(&item, &frame(&[g.as_bytes()]), CreateMode::PersistentSequential)
            .unwrap();
        client.create(&item, data, CreateMode::PersistentSequential).unwrap();
        corrupt.push(data.to_vec());
    }
    for name in FOREIGN {
        client
            .create(
                &format!("{path}/{name}{suffix}"),
                &frame(&[b"foreign"]),
                CreateMode::Persistent,
            )
            .unwrap();
    }
    for name in ODD_NAMES {
        let data = format!("odd name {name}{suffix}").into_bytes();
        client
            .create(&format!("{path}/{name}{suffix}"), &data, CreateMode::Persistent)
            .unwrap();
        corrupt.push(data);
    }
    corrupt
}

/// What a consumer variant under test delivers.
enum Taker {
    /// A callback consumer, and how many of its items were taken already.
    Callback(Recorder, Cell<usize>),
    Pull(ItemReceiver<String>),
}

impl Taker {
    /// The next `n` items delivered.
    fn take(&self, n: usize) -> Vec<String> {
        match self {
            Taker::Callback(recorder, taken) => {
                let from = taken.get();
                taken.set(from + n);
                recorder.wait_for(from + n, WAIT)[from..from + n].to_vec()
            }
            Taker::Pull(receiver) => (0..n)
                .map(|_| {
                    let delivery = receiver.take_timeout(WAIT).unwrap().expect("an item");
                    let item = delivery.item().clone();
                    delivery.ack();
                    item
                })
                .collect(),
        }
    }
}

/// Seeds a queue with hostile data before the consumer starts and more of it
/// while it runs; checks that every good item comes out in order, that
/// corrupt items go to the dead-letter path byte for byte (or stay put), and
/// that foreign children are never touched.
fn corrupt_and_foreign_children_are_set_aside(name: &str, lock: bool, dead_letters: bool, pull: bool) {
    let client = client();
    let path = unique_path(name);
    let locks = unique_path(&format!("{name}-locks"));
    let dead = unique_path(&format!("{name}-dead"));
    let mut good = (0..).map(|i| format!("good-{i}"));
    let mut corrupt = seed_hostile(&client, &path, "", &mut good);

    let mut builder = QueueBuilder::new(&client, &path, StringSerializer);
    if lock {
        builder = builder.lock_path(&locks);
    }
    if dead_letters {
        builder = builder.dead_letter_path(&dead);
    }
    let recorder = Recorder::new();
    let (builder, taker) = if pull {
        let (builder, receiver) = builder.pull_consumer();
        (builder, Taker::Pull(receiver))
    } else {
        (
            builder.consumer(recorder.clone()),
            Taker::Callback(recorder.clone(), Cell::new(0)),
        )
    };
    let queue = builder.build_queue().unwrap();
    assert_eq!(taker.take(6), (0..6).map(|i| format!("good-{i}")).collect::<Vec<_>>());

    // More of the same while the consumer runs, then a good item after it.
    corrupt.extend(seed_hostile(&client, &path, "b", &mut good));
    let producer = started_producer(&client, &path);
    producer.put("last".into()).unwrap();
    let expected: Vec<String> = (6..12).map(|i| format!("good-{i}")).collect();
    let got = taker.take(7);
    assert_eq!(
        got.iter().filter(|g| g.as_str() != "last").cloned().collect::<Vec<_>>(),
        expected
    );
    assert!(got.contains(&"last".to_owned()));

    let foreign: BTreeSet<String> = FOREIGN.iter().flat_map(|f| [f.to_string(), format!("{f}b")]).collect();
    let mut corrupt_sorted = corrupt.clone();
    corrupt_sorted.sort();
    if dead_letters {
        eventually(WAIT, "every corrupt item moved", || {
            client.get_children(&dead).map_or(0, |c| c.0.len()) == corrupt.len()
        });
        let mut stored: Vec<Vec<u8>> = children(&client, &dead)
            .iter()
            .map(|c| client.get_data(&format!("{dead}/{c}")).unwrap().0)
            .collect();
        stored.sort();
        assert_eq!(stored, corrupt_sorted, "moved byte for byte");
        eventually(WAIT, "only foreign children left", || {
            children(&client, &path) == foreign
        });
    } else {
        eventually(WAIT, "good items consumed, the rest left", || {
            children(&client, &path).len() == foreign.len() + corrupt.len()
        });
        thread::sleep(Duration::from_millis(300));
        let left = children(&client, &path);
        assert!(foreign.is_subset(&left), "{left:?}");
        let mut stored: Vec<Vec<u8>> = left
            .difference(&foreign)
            .map(|c| client.get_data(&format!("{path}/{c}")).unwrap().0)
            .collect();
        stored.sort();
        assert_eq!(stored, corrupt_sorted, "corrupt items left in place, untouched");
    }
    for f in &foreign {
        let (data, _) = client.get_data(&format!("{path}/{f}")).unwrap();
        assert_eq!(data, frame(&[b"foreign"]), "{f} untouched");
    }
    if lock {
        eventually(WAIT, "no lock left behind", || children(&client, &locks).is_empty());
    }
    if let Taker::Callback(recorder, _) = &taker {
        assert!(
            recorder.errors().iter().any(|e| e.contains("not a valid queue item")),
            "the consumer hears of corrupt items: {:?}",
            recorder.errors()
        );
    }
    queue.close();
}

#[test]
fn corrupt_items_stay_and_foreign_children_are_skipped_by_a_plain_consumer() {
    corrupt_and_foreign_children_are_set_aside("hostile-plain", false, false, false);
}

#[test]
fn corrupt_items_move_to_dead_letters_and_foreign_children_are_skipped_by_a_plain_consumer() {
    corrupt_and_foreign_children_are_set_aside("hostile-plain-dlq", false, true, false);
}

#[test]
fn corrupt_items_stay_and_foreign_children_are_skipped_by_a_lock_safe_consumer() {
    corrupt_and_foreign_children_are_set_aside("hostile-locked", true, false, false);
}

#[test]
fn corrupt_items_move_to_dead_letters_and_foreign_children_are_skipped_by_a_lock_safe_consumer() {
    corrupt_and_foreign_children_are_set_aside("hostile-locked-dlq", true, true, false);
}

#[test]
fn corrupt_items_stay_and_foreign_children_are_skipped_by_the_pull_receiver() {
    corrupt_and_foreign_children_are_set_aside("hostile-pull", true, false, true);
}

#[test]
fn corrupt_items_move_to_dead_letters_from_a_pull_receiver_without_lock_path() {
    corrupt_and_foreign_children_are_set_aside("hostile-pull-dlq", false, true, true);
}

#[test]
fn simple_queue_skips_foreign_names_and_delivers_the_items_around_them() {
    let client = client();
    let path = unique_path("hostile-simple");
    let queue = SimpleQueue::new(&client, &path).unwrap();
    let foreign = [
        "job-1",
        "lock",
        "qn-xyz",
        "qn-",
        "qn-1x",
        "queue-0000000001",
        "queue-abc",
        "qn-99999999999999999999",
    ];
    queue.offer(b"a").unwrap();
    for name in foreign {
        client
            .create(&format!("{path}/{name}"), b"foreign", CreateMode::Persistent)
            .unwrap();
    }
    // Raw bytes that are no item frame are items all the same in this format.
    queue.offer(b"\x00\x01\x00\x02 not a frame").unwrap();
    queue.offer(b"").unwrap();
    let taken = thread::scope(|s| {
        let taker = s.spawn(|| {
            (0..4)
                .map(|_| queue.take_timeout(WAIT).unwrap().expect("an item"))
                .collect::<Vec<_>>()
        });
        thread::sleep(Duration::from_millis(200));
        // Foreign children arriving while a take waits wake it, and it waits on.
        client
            .create(&format!("{path}/late-foreign"), b"x", CreateMode::Persistent)
            .unwrap();
        thread::sleep(Duration::from_millis(200));
        queue.offer(b"last").unwrap();
        taker.join().unwrap()
    });
    assert_eq!(
        taken,
        [
            b"a".to_vec(),
            b"\x00\x01\x00\x02 not a frame".to_vec(),
            Vec::new(),
            b"last".to_vec()
        ]
    );
    assert_eq!(queue.poll().unwrap(), None);
    let mut expected: BTreeSet<String> = foreign.iter().map(|s| s.to_string()).collect();
    expected.insert("late-foreign".into());
    assert_eq!(children(&client, &path), expected, "foreign children left in place");
}

// ---------------------------------------------------------------------------
// The queue node deleted under a running consumer

fn deleted_queue_node_is_recreated(name: &str, lock: bool, pull: bool, delete_lock_dir: bool) {
    let client = client();
    let other = crate::support::client();
    let path = unique_path(name);
    let locks = unique_path(&format!("{name}-locks"));
    let mut builder = QueueBuilder::new(&client, &path, StringSerializer);
    if lock {
        builder = builder.lock_path(&locks);
    }
    let recorder = Recorder::new();
    let (builder, taker) = if pull {
        let (builder, receiver) = builder.pull_consumer();
        (builder, Taker::Pull(receiver))
    } else {
        (
            builder.consumer(recorder.clone()),
            Taker::Callback(recorder, Cell::new(0)),
        )
    };
    let queue = builder.build_queue().unwrap();
    let producer = started_producer(&other, &path);
    for round in 0..3 {
        producer.put(format!("before-{round}")).unwrap();
        assert_eq!(taker.take(1), [format!("before-{round}")]);
        eventually(WAIT, "the item acknowledged", || {
            other.get_children(&path).map_or(true, |c| c.0.is_empty())
        });
        // Deleted by an operator (or reaped as an empty container).
        match other.delete(&path, None) {
            Ok(()) | Err(Error::NoNode { .. }) => {}
            Err(e) => panic!("{e}"),
        }
        if delete_lock_dir {
            delete_once_empty(&other, &locks);
        }
        thread::sleep(Duration::from_millis(300));
        // The producer recreates the node if the consumer has not yet.
        producer.put(format!("after-{round}")).unwrap();
        assert_eq!(taker.take(1), [format!("after-{round}")]);
    }
    queue.close();
}

#[test]
fn a_plain_consumer_keeps_delivering_after_its_queue_node_is_deleted() {
    deleted_queue_node_is_recreated("hostile-deleted", false, false, false);
}

#[test]
fn a_lock_safe_consumer_keeps_delivering_after_its_queue_and_lock_nodes_are_deleted() {
    deleted_queue_node_is_recreated("hostile-deleted-locked", true, false, true);
}

#[test]
fn a_pull_receiver_keeps_delivering_after_its_queue_node_is_deleted() {
    deleted_queue_node_is_recreated("hostile-deleted-pull", true, true, false);
}

#[test]
fn a_lock_safe_consumer_keeps_delivering_after_its_lock_directory_alone_is_deleted() {
    let client = client();
    let other = crate::support::client();
    let path = unique_path("hostile-deleted-locks");
    let locks = unique_path("hostile-deleted-locks-locks");
    let recorder = Recorder::new();
    let queue = consumer(&client, &path, &recorder)
        .lock_path(&locks)
        .build_queue()
        .unwrap();
    let producer = started_producer(&other, &path);
    for round in 0..3 {
        producer.put(format!("before-{round}")).unwrap();
        eventually(WAIT, "the item acknowledged", || {
            other.get_children(&path).unwrap().0.is_empty() && other.get_children(&locks).unwrap().0.is_empty()
        });
        delete_once_empty(&other, &locks);
        thread::sleep(Duration::from_millis(300));
        producer.put(format!("after-{round}")).unwrap();
        recorder.wait_for(2 * round + 2, WAIT);
    }
    assert_eq!(
        recorder.items(),
        ["before-0", "after-0", "before-1", "after-1", "before-2", "after-2"]
    );
    queue.close();
}

fn dead_letter_path_is_recreated(name: &str, lock: bool) {
    let client = client();
    let other = crate::support::client();
    let path = unique_path(name);
    let dead = unique_path(&format!("{name}-dead"));
    let recorder = Recorder::new();
    let mut builder = consumer(&client, &path, &recorder).dead_letter_path(&dead);
    if lock {
        builder = builder.lock_path(&unique_path(&format!("{name}-locks")));
    }
    let queue = builder.build_queue().unwrap();
    let producer = started_producer(&other, &path);
    producer.put("first".into()).unwrap();
    recorder.wait_for(1, WAIT);
    // Deleted by an operator while the consumer runs.
    other.delete(&dead, None).unwrap();
    other
        .create(
            &format!("{path}/queue-"),
            b"not a frame",
            CreateMode::PersistentSequential,
        )
        .unwrap();
    producer.put("second".into()).unwrap();
    recorder.wait_for(2, WAIT);
    eventually(WAIT, "the corrupt item moved to the recreated dead-letter path", || {
        other.get_children(&dead).is_ok_and(|(c, _)| c.len() == 1) && children(&other, &path).is_empty()
    });
    let moved = other.get_children(&dead).unwrap().0;
    let (data, _) = other.get_data(&format!("{dead}/{}", moved[0])).unwrap();
    assert_eq!(data, b"not a frame", "moved byte for byte");
    assert_eq!(recorder.items(), ["first", "second"]);
    queue.close();
}

#[test]
fn a_dead_letter_path_deleted_under_a_plain_consumer_is_created_again() {
    dead_letter_path_is_recreated("hostile-dead-deleted", false);
}

#[test]
fn a_dead_letter_path_deleted_under_a_lock_safe_consumer_is_created_again() {
    dead_letter_path_is_recreated("hostile-dead-deleted-locked", true);
}

/// Creates `<path>/<prefix><seq>` holding `data`, with a child node under it.
fn item_with_a_child(client: &ZkClient, path: &str, prefix: &str, data: &[u8]) -> String {
    client.ensure_path(path).unwrap();
    let (node, _) = client
        .create(&format!("{path}/{prefix}"), data, CreateMode::PersistentSequential)
        .unwrap();
    client
        .create(&format!("{node}/child"), b"", CreateMode::Persistent)
        .unwrap();
    node
}

fn node_with_children_is_left_alone(name: &str, lock: bool) {
    let client = client();
    let other = crate::support::client();
    let path = unique_path(name);
    let locks = unique_path(&format!("{name}-locks"));
    let odd = item_with_a_child(&other, &path, "queue-", &frame(&[b"has a child"]));
    let producer = started_producer(&other, &path);
    producer.put("good-1".into()).unwrap();
    producer.put("good-2".into()).unwrap();
    let recorder = Recorder::new();
    let mut builder = consumer(&client, &path, &recorder);
    if lock {
        builder = builder.lock_path(&locks);
    }
    let queue = builder.build_queue().unwrap();
    recorder.wait_for(2, WAIT);
    eventually(WAIT, "the good items acknowledged", || {
        children(&other, &path).len() == 1
    });
    producer.put("good-3".into()).unwrap();
    recorder.wait_for(3, WAIT);
    queue.close();
    assert_eq!(
        recorder.items(),
        ["good-1", "good-2", "good-3"],
        "the odd node is never delivered"
    );
    let errors = recorder.errors();
    assert_eq!(
        errors.iter().filter(|e| e.contains("has children")).count(),
        1,
        "heard of once: {errors:?}"
    );
    assert_eq!(
        children(&other, &path).into_iter().collect::<Vec<_>>(),
        [odd.rsplit('/').next().unwrap()]
    );
    assert_eq!(children(&other, &odd).len(), 1, "its child is untouched");
    if lock {
        assert!(children(&other, &locks).is_empty(), "no lock left");
    }
}

#[test]
fn a_node_with_children_is_left_in_place_by_a_plain_consumer() {
    node_with_children_is_left_alone("hostile-children", false);
}

#[test]
fn a_node_with_children_is_left_in_place_by_a_lock_safe_consumer() {
    node_with_children_is_left_alone("hostile-children-locked", true);
}

#[test]
fn a_simple_queue_skips_a_node_with_children() {
    let client = client();
    let path = unique_path("hostile-simple-children");
    let odd = item_with_a_child(&client, &path, "qn-", b"has a child");
    let queue = SimpleQueue::new(&client, &path).unwrap();
    queue.offer(b"good").unwrap();
    assert_eq!(queue.peek().unwrap(), Some(b"good".to_vec()));
    assert_eq!(queue.take_timeout(WAIT).unwrap(), Some(b"good".to_vec()));
    assert_eq!(queue.poll().unwrap(), None);
    queue.offer(b"later").unwrap();
    assert_eq!(queue.poll().unwrap(), Some(b"later".to_vec()));
    assert!(client.exists(&odd).unwrap().is_some(), "left in place");
    assert_eq!(children(&client, &odd).len(), 1);
}

#[test]
fn a_blocked_simple_take_returns_an_item_put_after_its_queue_node_was_deleted() {
    let path = unique_path("hostile-deleted-simple");
    let consumer_client = client();
    let other = client();
    let queue = SimpleQueue::new(&consumer_client, &path).unwrap();
    let producer = SimpleQueue::new(&other, &path).unwrap();
    producer.offer(b"first").unwrap();
    let taken = thread::scope(|s| {
        let taker = s.spawn(|| {
            (0..4)
                .map(|_| queue.take_timeout(WAIT).unwrap().expect("take timed out"))
                .collect::<Vec<_>>()
        });
        for i in 0..3 {
            // The taker drained the queue and blocks; the node goes under it.
            eventually(WAIT, "the queue drained", || {
                other.get_children(&path).map_or(true, |c| c.0.is_empty())
            });
            thread::sleep(Duration::from_millis(200));
            match other.delete(&path, None) {
                Ok(()) | Err(Error::NoNode { .. }) => {}
                Err(e) => panic!("{e}"),
            }
            thread::sleep(Duration::from_millis(200));
            producer.offer(format!("after-{i}").as_bytes()).unwrap();
        }
        taker.join().unwrap()
    });
    assert_eq!(
        taken,
        [
            b"first".to_vec(),
            b"after-0".to_vec(),
            b"after-1".to_vec(),
            b"after-2".to_vec()
        ]
    );
    // Container reaping: simple_queue::recipe::take_survives_container_reaping.
}

// ---------------------------------------------------------------------------
// More children than one listing reply holds at the default packet limit

/// Bytes of a `getChildren` reply's name list: a length and the name each.
fn listing_bytes(names: &[String]) -> usize {
    names.iter().map(|n| 4 + n.len()).sum()
}

/// Creates `n` sequential children `<path>/<prefix>` holding `data(i)`, pipelined.
fn create_children(client: &ZkClient, path: &str, prefix: &str, n: usize, data: impl Fn(usize) -> Vec<u8>) {
    client.ensure_path(path).unwrap();
    let node = format!("{path}/{prefix}");
    let nodes: Vec<(String, Vec<u8>)> = (0..n).map(|i| (node.clone(), data(i))).collect();
    // Chunks small enough that each one's last reply comes well within the
    // request timeout on a loaded machine.
    for chunk in nodes.chunks(2_000) {
        let created = client.create_many(chunk, CreateMode::PersistentSequential).unwrap();
        assert!(
            created.iter().all(Result::is_ok),
            "{:?}",
            created.iter().find(|r| r.is_err())
        );
    }
}

/// Deletes every child of `path`, pipelined.
fn purge(client: &ZkClient, path: &str) {
    let (names, _) = client.get_children(path).unwrap();
    let nodes: Vec<(String, Option<i32>)> = names.iter().map(|n| (format!("{path}/{n}"), None)).collect();
    // Chunks small enough that each one's last reply comes well within the
    // request timeout on a loaded machine.
    for chunk in nodes.chunks(2_000) {
        for result in client.delete_many(chunk).unwrap() {
            assert!(matches!(result, Ok(()) | Err(Error::NoNode { .. })), "{result:?}");
        }
    }
    assert!(client.get_children(path).unwrap().0.is_empty());
}

#[test]
fn queues_longer_than_one_default_size_listing_drain_in_order() {
    // 60,000 `queue-<seq>` names take 20 bytes each in a listing: 1.2 MB,
    // past the 1 MiB (`jute.maxbuffer`) that Java clients accept in a reply.
    const N: usize = 60_000;
    const CLASSIC: usize = 400;
    let started_at = Instant::now();
    let server = TestingServer::builder().force_sync(false).start().unwrap();
    let client = client_of(&server.connect_string());
    let path = unique_path("hostile-huge");
    create_children(&client, &path, "queue-", N, |i| frame(&[i.to_string().as_bytes()]));
    // Classic items after them: to SimpleQueue, the Curator items are foreign.
    create_children(&client, &path, "qn-", CLASSIC, |i| format!("classic {i}").into_bytes());
    let (names, _) = client.get_children(&path).unwrap();
    assert_eq!(names.len(), N + CLASSIC);
    assert!(
        listing_bytes(&names) > 0xfffff,
        "{} bytes fit one default packet",
        listing_bytes(&names)
    );
    let created = started_at.elapsed();

    let simple = SimpleQueue::new(&client, &path).unwrap();
    assert_eq!(simple.len().unwrap(), CLASSIC);
    for i in 0..300 {
        let item = simple.take_timeout(WAIT).unwrap().expect("an item");
        assert_eq!(item, format!("classic {i}").into_bytes());
    }

    let recorder = Recorder::new();
    let queue = consumer(&client, &path, &recorder).build_queue().unwrap();
    recorder.wait_for(2_000, WAIT);
    queue.close();
    // Items claimed before the close are consumed too (at most once).
    let got = recorder.items();
    let expected: Vec<String> = (0..got.len()).map(|i| i.to_string()).collect();
    assert_eq!(got, expected, "in put order");

    let (builder, receiver) = QueueBuilder::new(&client, &path, StringSerializer)
        .lock_path(&unique_path("hostile-huge-locks"))
        .pull_consumer();
    let pulled = builder.build_queue().unwrap();
    for i in got.len()..got.len() + 500 {
        let delivery = receiver.take_timeout(WAIT).unwrap().expect("an item");
        assert_eq!(*delivery, i.to_string());
        delivery.ack();
    }
    pulled.close();
    let consumed = started_at.elapsed();

    purge(&client, &path);
    assert_eq!(simple.poll().unwrap(), None);
    eprintln!(
        "{} children: created in {created:?}, consumed by {consumed:?}, purged by {:?}",
        N + CLASSIC,
        started_at.elapsed()
    );
}
