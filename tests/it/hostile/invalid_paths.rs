//! Invalid paths and paths that conflict with each other: refused with a typed
//! error before any request.

use zk_queue::{client::CreateMode, DistributedQueue, Error, QueueBuilder, SimpleQueue, StringSerializer};

use super::requests_sent;
use crate::support::client;

#[test]
fn invalid_paths_are_refused_by_every_builder_before_any_request() {
    let client = client();
    let before = requests_sent(&client);
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
    assert_eq!(requests_sent(&client), before, "no request was sent");
    assert_eq!(client.exists(good).unwrap(), None);
}

#[test]
fn lock_and_dead_letter_paths_overlapping_the_queue_are_refused_by_build() {
    let client = client();
    let before = requests_sent(&client);
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
    assert_eq!(requests_sent(&client), before, "no request was sent");
}

#[test]
fn invalid_queue_paths_are_refused_before_any_request() {
    let client = client();
    let before = requests_sent(&client);
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
    assert_eq!(requests_sent(&client), before, "no request was sent");
}

#[test]
fn invalid_paths_are_refused_by_the_client_facade() {
    let client = client();
    let before = requests_sent(&client);
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
    assert_eq!(requests_sent(&client), before, "refused before any request");
    // Refused, not turned into a valid path and created.
    assert_eq!(crate::support::client().exists("/x").unwrap(), None);
}
