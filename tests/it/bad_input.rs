//! Bad input gets a typed error before any request, and loses nothing.

use zk_queue::{CreateMode, Error, SimpleQueue, ZkClient};

use crate::support::{client, server::unique_path};

#[test]
fn invalid_queue_paths_are_refused_before_any_request() {
    let client = client();
    let before = client.stats();
    let cases = [
        ("", "path is empty"),
        ("queue", "path must start with '/'"),
        ("/queue/", "path must not end with '/'"),
        ("/a//b", "path has an empty component ('//')"),
        ("/a/../b", "path has a relative component ('.' or '..')"),
        ("/", "the root cannot hold a queue"),
        ("/zookeeper", "the /zookeeper tree is reserved by the server"),
        ("/zookeeper/quota/q", "the /zookeeper tree is reserved by the server"),
        ("/a\u{1}b", "path has a control or private-use character"),
    ];
    for (path, expected) in cases {
        match SimpleQueue::new(&client, path) {
            Err(Error::InvalidPath { path: p, reason }) => {
                assert_eq!((p.as_str(), reason), (path, expected));
            }
            other => panic!("{path:?}: {other:?}"),
        }
    }
    assert_eq!(client.stats(), before, "no request was sent");
}

#[test]
fn invalid_paths_are_refused_by_the_client_facade() {
    let client = client();
    for path in ["", "x", "/x/", "/x//y"] {
        assert!(
            matches!(client.exists(path), Err(Error::InvalidPath { .. })),
            "{path:?}"
        );
        assert!(matches!(
            client.create(path, b"", CreateMode::Persistent),
            Err(Error::InvalidPath { .. })
        ));
    }
    assert_eq!(client.exists("/").unwrap().map(|s| s.num_children > 0), Some(true));
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
        .retry_policy(zk_queue::RetryNTimes::new(0, std::time::Duration::ZERO))
        .connect()
        .unwrap();
    let path = unique_path("limit-exact");
    unchecked.ensure_path(&path).unwrap();
    let queue = SimpleQueue::new(&unchecked, &path).unwrap();
    let result = queue.offer(&vec![1u8; max_item(&path) + 1]);
    assert!(matches!(result, Err(Error::ConnectionLoss { .. })), "{result:?}");
    assert_eq!(queue.len().unwrap(), 0, "nothing was stored");
}
