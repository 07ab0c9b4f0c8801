//! More children than one listing reply holds at the default packet limit:
//! listed in one reply and drained in order.

use std::time::Instant;

use zk_queue::testing::TestingServer;
use zk_queue::{client::CreateMode, Error, QueueBuilder, SimpleQueue, StringSerializer, ZkClient};

use super::WAIT;
use crate::support::queues::consumer;
use crate::support::recorder::Recorder;
use crate::support::{client_of, frame, server::unique_path};

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

#[test]
fn a_consumer_keeps_the_head_of_a_long_listing_and_lists_again_for_the_rest() {
    const ITEMS: usize = 5_000;
    let admin = crate::support::client();
    let path = unique_path("long-listing-head");
    create_children(&admin, &path, "queue-", ITEMS, |i| {
        frame(&[format!("item-{i:05}").as_bytes()])
    });
    let reader = crate::support::client();
    let recorder = Recorder::new();
    let queue = consumer(&reader, &path, &recorder).build_queue().unwrap();
    let delivered = recorder.wait_for(ITEMS, WAIT);
    queue.close();
    let expected: Vec<String> = (0..ITEMS).map(|i| format!("item-{i:05}")).collect();
    assert_eq!(delivered, expected, "every item once, in order");
    // At most 2,048 names are kept from a listing: 5,000 items take at
    // least three listings, where one listing held them all before.
    let listings = reader.stats().get_children;
    assert!(listings >= 3, "{listings} listings: the whole listing was kept");
}
