//! `zkq` knows what it is looking at: a node without queue items is not a
//! queue (`ls`, `peek`), a lock-safe consumer's lock directory is
//! named as one (`peek`, `ls`, `take`, `purge`), and `stats` of a parent of
//! queues lists its queues.

use std::time::Duration;

use zk_queue::{client::CreateMode, QueueBuilder, StringSerializer};

use super::{holding_the_first, json, ok, zkq};
use crate::support::client;
use crate::support::server::unique_path;

/// Exit code, stdout and stderr of `zkq args`.
fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let out = zkq(args);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn cli_ls_and_peek_refuse_a_node_whose_children_are_not_queue_items() {
    let path = unique_path("cli-not-a-queue");
    let zk = client();
    zk.ensure_path(&format!("{path}/config")).unwrap();
    zk.create(&format!("{path}/entry-1"), b"x", CreateMode::Persistent)
        .unwrap();
    for command in ["ls", "peek"] {
        let (code, stdout, stderr) = run(&[command, &path]);
        assert_eq!((code, stdout.as_str()), (Some(1), ""), "{command}: {stderr}");
        assert_eq!(
            stderr,
            format!("zkq: {path} is not a queue: none of its 2 children is a queue item (queue-… or qn-<sequence>): config, entry-1\n"),
            "{command}"
        );
    }
}

#[test]
fn cli_an_existing_childless_node_or_one_its_consumers_recorded_or_registered_on_is_an_empty_queue() {
    let empty = unique_path("cli-empty-queue");
    let zk = client();
    zk.ensure_path(&empty).unwrap();
    assert_eq!(ok(&["ls", &empty]), "");
    assert_eq!(json(&["peek", &empty]), serde_json::json!([]));
    assert_eq!(json(&["stats", &empty])["items"], 0);

    // Only foreign children, but its consumers recorded their lock path: a queue.
    let recorded = unique_path("cli-recorded-empty-queue");
    zk.ensure_path(&format!("{recorded}/config")).unwrap();
    let consumer = QueueBuilder::new(&zk, &recorded, StringSerializer)
        .lock_path(&format!("{recorded}-locks"))
        .consumer(|_: String| Ok(()))
        .build_queue()
        .unwrap();
    assert_eq!(ok(&["ls", &recorded]), "");
    // Or its consumers registered beside it.
    let registered = unique_path("cli-registered-empty-queue");
    zk.ensure_path(&format!("{registered}/config")).unwrap();
    assert_eq!(zkq(&["ls", &registered]).status.code(), Some(1), "not a queue yet");
    let plain = QueueBuilder::new(&zk, &registered, StringSerializer)
        .consumer(|_: String| Ok(()))
        .build_queue()
        .unwrap();
    crate::support::eventually(Duration::from_secs(30), "the consumer registers", || {
        zkq(&["ls", &registered]).status.success()
    });
    plain.close();
    let stats = json(&["stats", &recorded]);
    assert_eq!(
        (stats["items"].as_u64(), stats["foreign"].as_u64()),
        (Some(0), Some(1)),
        "{stats}"
    );
    consumer.close();
}

#[test]
fn cli_peek_names_a_lock_directory_and_the_queue_that_recorded_it() {
    let base = unique_path("cli-lock-dir");
    let (path, locks) = (format!("{base}/jobs"), format!("{base}/jobs-locks"));
    let zk = client();
    ok(&["put", &path, "one", "two"]);
    let (consumer, _receiver, delivery) = holding_the_first(&zk, &path, &locks);
    for command in ["peek", "ls"] {
        let (code, stdout, stderr) = run(&[command, &locks]);
        assert_eq!((code, stdout.as_str()), (Some(1), ""), "{command}: {stderr}");
        assert_eq!(
            stderr,
            format!("zkq: {locks} is a lock directory of the queue {path}, whose consumers recorded it, not a queue: its 1 children are ephemeral locks named after the items they hold\n"),
            "{command}"
        );
        assert!(!stderr.contains("corrupt"), "{stderr}");
    }
    // Nothing takes or purges locks as if they were items.
    for args in [
        vec!["purge", locks.as_str(), "--yes"],
        vec!["take", locks.as_str(), "--timeout", "1s"],
    ] {
        let (code, stdout, stderr) = run(&args);
        assert_eq!((code, stdout.as_str()), (Some(1), ""), "{args:?}: {stderr}");
        assert!(stderr.contains("is a lock directory"), "{args:?}: {stderr}");
    }
    assert_eq!(zk.get_children(&locks).unwrap().0.len(), 1, "the lock stays");
    // The queue itself is still a queue.
    assert_eq!(json(&["peek", &path]).as_array().unwrap().len(), 2);
    delivery.ack();
    consumer.close();
}

#[test]
fn cli_stats_of_a_parent_lists_each_child_queue_with_its_count() {
    let parent = unique_path("cli-parent");
    let zk = client();
    ok(&["put", &format!("{parent}/emails"), "a", "b", "c"]);
    ok(&["put", &format!("{parent}/legacy"), "--classic", "x"]);
    ok(&["put", &format!("{parent}/tasks"), "--priority", "2", "t"]);
    zk.ensure_path(&format!("{parent}/settings/colour/red")).unwrap();

    let stats = json(&["stats", &parent]);
    assert_eq!(
        stats,
        serde_json::json!({
            "path": parent,
            "queues": [
                {"name": "emails", "path": format!("{parent}/emails"), "layout": "curator", "kind": "plain", "items": 3},
                {"name": "legacy", "path": format!("{parent}/legacy"), "layout": "classic", "kind": "plain", "items": 1},
                {"name": "tasks", "path": format!("{parent}/tasks"), "layout": "curator", "kind": "priority", "items": 1},
            ],
            "other_children": 1,
        })
    );
    let text = ok(&["stats", &parent]);
    assert_eq!(
        text,
        format!("{parent} is not a queue; 3 of its 4 children are:\nemails\titems=3\tcurator plain\nlegacy\titems=1\tclassic plain\ntasks\titems=1\tcurator priority\n")
    );

    // A parent of no queue at all is an error.
    let (code, _, stderr) = run(&["stats", &format!("{parent}/settings")]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("is not a queue") && stderr.ends_with("; nor is any of its children\n"),
        "{stderr}"
    );
}
