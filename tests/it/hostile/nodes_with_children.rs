//! A node with children among the items: not an item, so never delivered,
//! moved or deleted, and its children stay untouched.

use zk_queue::{client::CreateMode, SimpleQueue, ZkClient};

use super::{children, started_producer, WAIT};
use crate::support::queues::consumer;
use crate::support::recorder::Recorder;
use crate::support::{client, eventually, frame, server::unique_path};

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
