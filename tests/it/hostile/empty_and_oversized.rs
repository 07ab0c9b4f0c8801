//! Empty items, a put of no items, and items over the server's packet limit.

use std::time::Duration;

use zk_queue::{ConnectionState, Error, PutError, SimpleQueue, ZkClient};

use super::{children, requests_sent, started_producer, WAIT};
use crate::support::queues::consumer;
use crate::support::recorder::Recorder;
use crate::support::{client, server::unique_path};

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
    let before = requests_sent(&client);
    match producer.put_multi(Vec::new()) {
        Err(Error::InvalidArgument(what)) => assert!(what.contains("at least one item"), "{what}"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        producer.put_multi_timeout(Vec::new(), Duration::from_secs(1)),
        Err(PutError::Failed(Error::InvalidArgument(_)))
    ));
    assert_eq!(requests_sent(&client), before, "no request was sent");
    assert!(children(&client, &path).is_empty(), "no empty node was stored");
}

#[test]
fn an_oversized_put_is_refused_before_sending_naming_the_limit_in_bytes() {
    let path = unique_path("hostile-oversized");
    let client = client();
    let producer = started_producer(&client, &path);
    let before = requests_sent(&client);
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
    assert_eq!(requests_sent(&client), before, "no request was sent");
    // The session carried on.
    assert_eq!(client.state(), ConnectionState::Connected);
    producer.put("small".into()).unwrap();
    assert_eq!(children(&client, &path).len(), 1);
    // SimpleQueue: an_item_over_the_packet_limit_is_refused_and_the_connection_stays_up, below.
}

/// The largest item a `SimpleQueue` at `path` can carry at the default limit.
fn max_item(path: &str) -> usize {
    // create request: header 8, path (4 + len + "/qn-"), data (4 + n), ACL world:anyone 27, flags 4.
    0xfffff - (8 + 4 + path.len() + 4 + 4 + 27 + 4)
}

#[test]
fn an_item_over_the_packet_limit_is_refused_and_the_connection_stays_up() {
    let client = client();
    let path = unique_path("too-large");
    let queue = SimpleQueue::new(&client, &path).unwrap();
    let limit = max_item(&path);
    match queue.offer(&vec![7u8; limit + 1]) {
        Err(Error::ItemTooLarge { size, limit: l }) => assert_eq!((size, l), (limit + 1, limit)),
        other => panic!("{other:?}"),
    }
    let message = queue.offer(&vec![7u8; 2 << 20]).unwrap_err().to_string();
    assert!(
        message.contains("2097152 bytes") && message.contains("jute.maxbuffer"),
        "{message}"
    );
    // The exact limit is accepted by the server, and the session carried on.
    queue.offer(&vec![7u8; limit]).unwrap();
    queue.offer(b"small").unwrap();
    assert_eq!(queue.take().unwrap().len(), limit);
    assert_eq!(queue.take().unwrap(), b"small");
    assert_eq!(client.state(), zk_queue::ConnectionState::Connected);
}

#[test]
fn a_lower_packet_limit_is_enforced_too() {
    let connect = crate::support::server::shared_connect_string();
    let client = ZkClient::builder(&connect).max_packet_size(4096).connect().unwrap();
    let queue = SimpleQueue::new(&client, &unique_path("small-limit")).unwrap();
    assert!(matches!(queue.offer(&[0; 4096]), Err(Error::ItemTooLarge { .. })));
    queue.offer(&[0; 1024]).unwrap();
}

#[test]
fn the_packet_limit_is_exact_one_byte_more_and_the_server_drops_the_connection() {
    // With the client-side check raised out of the way, an item one byte over
    // the computed limit reaches the server, which closes the connection.
    let connect = crate::support::server::shared_connect_string();
    let unchecked = ZkClient::builder(&connect)
        .max_packet_size(0xfffff + 1)
        .retry_policy(zk_queue::client::RetryNTimes::new(0, std::time::Duration::ZERO))
        .connect()
        .unwrap();
    let path = unique_path("limit-exact");
    unchecked.ensure_path(&path).unwrap();
    let queue = SimpleQueue::new(&unchecked, &path).unwrap();
    let result = queue.offer(&vec![1u8; max_item(&path) + 1]);
    assert!(matches!(result, Err(Error::ConnectionLoss { .. })), "{result:?}");
    assert_eq!(queue.len().unwrap(), 0, "nothing was stored");
}
