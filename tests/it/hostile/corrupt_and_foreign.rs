//! Corrupt items and foreign names in the queue: corrupt items are set aside
//! (moved to the dead-letter path, or left in place), foreign children are
//! never touched, and the good items around them come out in order.

use std::cell::Cell;
use std::collections::BTreeSet;
use std::thread;
use std::time::Duration;

use zk_queue::testing::TestingServer;
use zk_queue::{client::CreateMode, QueueBuilder, SimpleQueue, StringSerializer, ZkClient};

use super::{children, started_producer, Taker, WAIT};
use crate::support::recorder::Recorder;
use crate::support::{client, client_of, eventually, frame, server::unique_path, wait_for_watches};

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

/// How often the consumers here list the queue again.
const RESCAN: Duration = Duration::from_millis(200);

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

    // Passes over the queue come often, so that one that read a corrupt
    // item again would show within the test.
    let mut builder = QueueBuilder::new(&client, &path, StringSerializer).rescan_interval(RESCAN);
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
        // More passes over the queue, each of which lists the corrupt items
        // left in place again: none of them is read, or told, again.
        let listings = client.stats().get_children;
        eventually(WAIT, "three more passes over the queue", || {
            client.stats().get_children >= listings + 3
        });
        let told: Vec<String> = recorder
            .errors()
            .into_iter()
            .filter_map(|e| {
                e.strip_prefix("item ")
                    .and_then(|rest| rest.strip_suffix(" is not a valid queue item"))
                    .map(str::to_owned)
            })
            .collect();
        let distinct: BTreeSet<&String> = told.iter().collect();
        assert_eq!(
            (told.len(), distinct.len()),
            (corrupt.len(), corrupt.len()),
            "each corrupt item told once and never read again: {:?}",
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
    // A server of its own: the take's watch is the only one on it.
    let server = TestingServer::start().unwrap();
    let client = client_of(&server.connect_string());
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
    let producer = SimpleQueue::new(&client_of(&server.connect_string()), &path).unwrap();
    let taken = thread::scope(|s| {
        let taker = s.spawn(|| {
            (0..4)
                .map(|_| queue.take_timeout(WAIT).unwrap().expect("an item"))
                .collect::<Vec<_>>()
        });
        // Three items taken (taking one fires the watches before), then the
        // fourth take waits on its watch.
        eventually(WAIT, "the items taken", || {
            children(&client, &path).len() == foreign.len()
        });
        wait_for_watches(&server, 1);
        // Foreign children arriving while a take waits wake it, and it waits on.
        client
            .create(&format!("{path}/late-foreign"), b"x", CreateMode::Persistent)
            .unwrap();
        // The creation fired the watch; a watch again is the take's new one.
        wait_for_watches(&server, 1);
        assert!(!taker.is_finished(), "a foreign child ended the take");
        producer.offer(b"last").unwrap();
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
