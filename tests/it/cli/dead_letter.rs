//! `zkq dead-letter list|requeue|purge`.

use std::time::Duration;

use zk_queue::{
    client::{Acl, CreateMode, Perms},
    ConsumeError, QueueBuilder, StringSerializer,
};

use super::{children, json, ok};
use crate::support::server::unique_path;
use crate::support::{client, eventually, frame};

#[test]
fn cli_dead_letter_list_requeue_and_purge() {
    let dead = unique_path("cli-dlq");
    let queue = format!("{dead}-queue");
    let zk = client();
    zk.ensure_path(&dead).unwrap();
    // A dead letter with this crate's attempt trailer (5 failures).
    let mut data = frame(&[b"failed"]);
    data.extend_from_slice(b"ZKQ\x01\0\0\0\x05");
    zk.create(&format!("{dead}/queue-"), &data, CreateMode::PersistentSequential)
        .unwrap();
    ok(&["put", &dead, "second"]);
    zk.create(
        &format!("{dead}/queue-"),
        b"not a frame",
        CreateMode::PersistentSequential,
    )
    .unwrap();

    let listed = json(&["dead-letter", "list", &dead]);
    let listed = listed.as_array().unwrap();
    assert_eq!(listed.len(), 3);
    assert_eq!(
        (listed[0]["data"].as_str(), listed[0]["attempts"].as_i64()),
        (Some("failed"), Some(5))
    );
    assert!(
        listed[2]["error"].as_str().unwrap().contains("version"),
        "{:?}",
        listed[2]
    );

    let moved = json(&["dead-letter", "requeue", &dead, "--to", &queue]);
    assert_eq!(moved, serde_json::json!({"requeued": 2, "skipped": 1}));
    assert_eq!(children(&zk, &dead).len(), 1, "the corrupt one stays");
    let peeked = json(&["peek", &queue]);
    assert_eq!(peeked[0]["attempt"], 1, "attempts start again");
    assert_eq!(peeked[0]["kind"], "plain");
    assert_eq!(ok(&["take", &queue, "-n", "2", "--timeout", "1s"]), "failed\nsecond\n");

    assert_eq!(
        json(&["dead-letter", "purge", &dead, "--yes"]),
        serde_json::json!({"deleted": 1})
    );
    assert!(children(&zk, &dead).is_empty());
}

#[test]
fn cli_dead_letter_requeue_gives_items_the_queue_nodes_acl() {
    let dead = unique_path("cli-dlq-acl");
    let queue = format!("{dead}-queue");
    let zk = client();
    zk.ensure_path(&dead).unwrap();
    ok(&["put", &dead, "again"]);
    // Anyone may use the queue's items, but not change their ACL.
    let acl = vec![Acl::new(
        Perms::READ | Perms::WRITE | Perms::CREATE | Perms::DELETE,
        "world",
        "anyone",
    )];
    zk.create_with_acl(&queue, b"", CreateMode::Persistent, &acl).unwrap();

    let moved = json(&["dead-letter", "requeue", &dead, "--to", &queue]);
    assert_eq!(moved, serde_json::json!({"requeued": 1, "skipped": 0}));
    let items = children(&zk, &queue);
    assert_eq!(items.len(), 1);
    let (item_acl, _) = zk.get_acl(&format!("{queue}/{}", items[0])).unwrap();
    assert_eq!(item_acl, acl);
}

#[test]
fn cli_dead_letter_list_tells_why_each_died_and_requeue_keeps_the_priority() {
    let (path, dead) = (unique_path("cli-dlq-story"), unique_path("cli-dlq-story-dead"));
    let zk = client();
    let queue = QueueBuilder::new(&zk, &path, StringSerializer)
        .lock_path(&unique_path("cli-dlq-story-locks"))
        .max_attempts(1)
        .dead_letter_path(&dead)
        .consumer(|_: String| -> Result<(), ConsumeError> { Err("the printer is on fire".into()) })
        .build_priority_queue(0)
        .unwrap();
    ok(&["put", &path, "job", "--priority", "3"]);
    eventually(Duration::from_secs(30), "the job dies", || {
        zk.get_children(&dead).map(|(c, _)| c.len() == 1).unwrap_or(false)
    });
    queue.close();

    let listed = json(&["dead-letter", "list", &dead]);
    let letter = &listed.as_array().unwrap()[0];
    assert_eq!(
        (letter["priority"].as_i64(), letter["attempts"].as_i64()),
        (Some(3), Some(1))
    );
    assert_eq!(letter["death"]["reason"], "the printer is on fire");
    assert_eq!(letter["death"]["source"], path.as_str());
    assert!(letter["death"]["died_at"].as_i64().unwrap() > 0);
    let text = ok(&["dead-letter", "list", &dead]);
    assert!(text.contains("reason=\"the printer is on fire\""), "{text}");

    let moved = json(&["dead-letter", "requeue", &dead, "--to", &path]);
    assert_eq!(moved, serde_json::json!({"requeued": 1, "skipped": 0}));
    let peeked = json(&["peek", &path]);
    assert_eq!(
        (peeked[0]["kind"].as_str(), peeked[0]["priority"].as_i64()),
        (Some("priority"), Some(3))
    );
    assert_eq!(peeked[0]["attempt"], 1, "attempts start again");
}
