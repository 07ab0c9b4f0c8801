//! `zkq dead-letter list|requeue|purge`.

use zk_queue::{Acl, CreateMode, Perms};

use super::{children, json, ok};
use crate::support::server::unique_path;
use crate::support::{client, frame};

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
        (listed[0]["preview"].as_str(), listed[0]["attempts"].as_i64()),
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
    assert_eq!(peeked[0]["attempts"], 0, "attempts start again");
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
