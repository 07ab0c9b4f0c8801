//! `zkq put` writes only into queues: it refuses a lock directory, a
//! consumer registry and a node whose children are not queue items (that
//! one unless `--force`), and a recorded dead-letter path (unless
//! `--force`).

use std::time::Duration;

use zk_queue::{inspect::consumer_registry, QueueBuilder, StringSerializer};

use super::{children, holding_the_first, ok, zkq};
use crate::support::server::unique_path;
use crate::support::{client, eventually};

/// Asserts `zkq args` exits with code 1 and the one line `zkq: <message>`
/// on stderr, and puts nothing into `path`.
fn refused(args: &[&str], path: &str, message: &str) {
    let before = children_if_any(path);
    let out = zkq(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
    assert_eq!(stderr, format!("zkq: {message}\n"), "{args:?}");
    assert_eq!(children_if_any(path), before, "{args:?} put nothing");
}

/// The children of `path`, sorted; `None` if it does not exist.
fn children_if_any(path: &str) -> Option<Vec<String>> {
    match client().get_children(path) {
        Ok(_) => Some(children(&client(), path)),
        Err(e) if e.is_no_node() => None,
        Err(e) => panic!("{path}: {e}"),
    }
}

#[test]
fn cli_put_refuses_a_recorded_lock_directory_and_a_consumer_registry_even_forced() {
    let base = unique_path("cli-put-targets");
    let (path, locks) = (format!("{base}/jobs"), format!("{base}/jobs-locks"));
    let registry = consumer_registry(&path);
    let zk = client();
    // A lock-safe consumer records its lock path on the queue node, makes
    // the (empty) lock directory, and registers beside the queue.
    let consumer = QueueBuilder::new(&zk, &path, StringSerializer)
        .lock_path(&locks)
        .consumer(|_: String| Ok(()))
        .build_queue()
        .unwrap();
    eventually(Duration::from_secs(30), "the consumer registers", || {
        zk.exists(&registry).unwrap().is_some()
    });
    let lock_directory =
        format!("refusing to put into {locks}: {locks} is the lock directory of the queue {path}, whose consumers recorded it, not a queue");
    refused(&["put", &locks, "x"], &locks, &lock_directory);
    refused(&["put", &locks, "--force", "x"], &locks, &lock_directory);
    let not_a_registration =
        format!("refusing to put into {registry}: it is the consumer registry of the queue {path}, not a queue");
    refused(&["put", &registry, "x"], &registry, &not_a_registration);
    refused(&["put", &registry, "--force", "x"], &registry, &not_a_registration);
    consumer.close();
    // The queue itself takes the put.
    assert_eq!(ok(&["put", &path, "x"]), "1\n");
    // The recorded lock directory is refused before it exists too, and is
    // not made.
    zk.delete(&locks, None).unwrap();
    refused(&["put", &locks, "x"], &locks, &lock_directory);
}

#[test]
fn cli_put_refuses_a_lock_directory_holding_a_lock_even_forced() {
    let base = unique_path("cli-put-held");
    let (path, locks) = (format!("{base}/jobs"), format!("{base}/jobs-locks"));
    let zk = client();
    ok(&["put", &path, "job"]);
    let (consumer, _receiver, delivery) = holding_the_first(&zk, &path, &locks);
    let message = format!("refusing to put into {locks}: {locks} is a lock directory of the queue {path}, whose consumers recorded it, not a queue: its 1 children are ephemeral locks named after the items they hold");
    refused(&["put", &locks, "x"], &locks, &message);
    refused(&["put", &locks, "--force", "x"], &locks, &message);
    delivery.ack();
    consumer.close();
}

#[test]
fn cli_put_refuses_a_sharded_queues_parent_even_forced() {
    let path = unique_path("cli-put-sharded");
    let shard = format!("{path}/queue-123e4567-e89b-12d3-a456-426614174000");
    client().ensure_path(&shard).unwrap();
    let message =
        format!("refusing to put into {path}: {path} is a sharded queue of 1 shards: name a shard, e.g. {shard}");
    refused(&["put", &path, "x"], &path, &message);
    refused(&["put", &path, "--force", "x"], &path, &message);
    assert_eq!(ok(&["put", &shard, "x"]), "1\n", "a shard takes the put");
}

#[test]
fn cli_put_refuses_a_node_whose_children_are_not_queue_items_unless_forced() {
    let path = unique_path("cli-put-not-a-queue");
    let zk = client();
    zk.ensure_path(&format!("{path}/config")).unwrap();
    refused(
        &["put", &path, "x"],
        &path,
        &format!("refusing to put into {path}: {path} is not a queue: none of its 1 children is a queue item (queue-… or qn-<sequence>): config (--force to put anyway)"),
    );
    assert_eq!(ok(&["put", &path, "--force", "x"]), "1\n");
    assert_eq!(children(&zk, &path).len(), 2, "config and the item");
}

#[test]
fn cli_put_into_a_recorded_dead_letter_path_is_refused_unless_forced() {
    let base = unique_path("cli-put-dead");
    let (path, dead) = (format!("{base}/jobs"), format!("{base}/jobs-dead"));
    let zk = client();
    // Its consumers record the dead-letter path on the queue node.
    let consumer = QueueBuilder::new(&zk, &path, StringSerializer)
        .lock_path(&format!("{base}/jobs-locks"))
        .dead_letter_path(&dead)
        .consumer(|_: String| Ok(()))
        .build_priority_queue(0)
        .unwrap();
    consumer.close();
    ok(&["put", &path, "--priority", "3", "job"]);
    let why = format!("refusing to put into {dead}: it is the dead-letter path of the queue {path}, whose consumers move items there with a record of why (put into {path}, or --force to put anyway)");
    // Refused before it exists, and of any kind: the queue's own, plain, classic.
    refused(&["put", &dead, "--priority", "1", "set aside"], &dead, &why);
    refused(&["put", &dead, "plain"], &dead, &why);
    refused(&["put", &dead, "--classic", "raw"], &dead, &why);
    assert_eq!(ok(&["put", &dead, "--force", "--priority", "1", "set aside"]), "1\n");
    refused(&["put", &dead, "--priority", "1", "again"], &dead, &why);
    assert_eq!(children(&zk, &dead).len(), 1, "only the forced put");
}
