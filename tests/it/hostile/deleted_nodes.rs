//! The queue node, a lock-safe consumer's lock directory or the dead-letter
//! path deleted (or reaped as an empty container) under a running consumer or
//! a blocked `SimpleQueue::take`: created again, and items put afterwards are
//! delivered.

use std::cell::Cell;
use std::thread;
use zk_queue::testing::TestingServer;
use zk_queue::{client::CreateMode, Error, QueueBuilder, SimpleQueue, StringSerializer, ZkClient};

use super::{children, started_producer, Taker, WAIT};
use crate::support::queues::consumer;
use crate::support::recorder::Recorder;
use crate::support::{client, client_of, eventually, server::unique_path, wait_for_watches};

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
        // The consumer hears of it and creates its nodes again (nothing else
        // does: the producer puts only after this).
        eventually(WAIT, "the consumer created its nodes again", || {
            other.exists(&path).unwrap().is_some() && (!lock || other.exists(&locks).unwrap().is_some())
        });
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
fn a_priority_consumer_keeps_delivering_after_its_queue_node_is_deleted() {
    // Between listings it follows the queue from its arrivals watch, which
    // must also tell it that the node itself went.
    let client = client();
    let other = crate::support::client();
    let path = unique_path("hostile-deleted-priority");
    let recorder = Recorder::new();
    // No rescan within the test: only the watch can tell it.
    let queue = consumer(&client, &path, &recorder)
        .rescan_interval(std::time::Duration::from_secs(600))
        .build_priority_queue(10)
        .unwrap();
    let producer = crate::support::queues::producer(&other, &path)
        .build_priority_queue(10)
        .unwrap();
    for round in 0..3 {
        producer.put(format!("before-{round}"), 1).unwrap();
        recorder.wait_for(2 * round + 1, WAIT);
        eventually(WAIT, "the item claimed", || {
            other.get_children(&path).map_or(true, |c| c.0.is_empty())
        });
        match other.delete(&path, None) {
            Ok(()) | Err(Error::NoNode { .. }) => {}
            Err(e) => panic!("{e}"),
        }
        eventually(WAIT, "the consumer created its queue node again", || {
            other.exists(&path).unwrap().is_some()
        });
        producer.put(format!("after-{round}"), 1).unwrap();
        recorder.wait_for(2 * round + 2, WAIT);
    }
    let expected: Vec<String> = (0..3)
        .flat_map(|round| [format!("before-{round}"), format!("after-{round}")])
        .collect();
    assert_eq!(recorder.items(), expected);
    queue.close();
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
        // The consumer hears of it and creates its lock directory again.
        eventually(WAIT, "the consumer created its lock directory again", || {
            other.exists(&locks).unwrap().is_some()
        });
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

#[test]
fn a_blocked_simple_take_returns_an_item_put_after_its_queue_node_was_deleted() {
    // A server of its own: the take's watch is the only one on it.
    let server = TestingServer::start().unwrap();
    let path = unique_path("hostile-deleted-simple");
    let consumer_client = client_of(&server.connect_string());
    let other = client_of(&server.connect_string());
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
            // The taker drained the queue and waits on its watch (taking an
            // item fired the watches before); the node goes under it.
            eventually(WAIT, "the queue drained", || {
                other.get_children(&path).map_or(true, |c| c.0.is_empty())
            });
            wait_for_watches(&server, 1);
            let node = other.exists(&path).unwrap().expect("the queue node").czxid;
            match other.delete(&path, None) {
                Ok(()) | Err(Error::NoNode { .. }) => {}
                Err(e) => panic!("{e}"),
            }
            // The take creates the node again (a new creation zxid) and
            // waits on it: the offer goes to the node the take watches.
            wait_for_watches(&server, 1);
            assert_ne!(other.exists(&path).unwrap().map(|stat| stat.czxid), Some(node));
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
