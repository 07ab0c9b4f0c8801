//! `zkq take` and `zkq purge` with `--lock-path`: an item a live lock-safe
//! consumer holds is left alone.

use std::time::Duration;

use zk_queue::{client::CreateMode, Delivery, ItemReceiver, QueueBuilder, StringSerializer};

use super::{children, holding_the_first, json, ok, zkq};
use crate::support::client;
use crate::support::server::unique_path;

/// Puts "held" and "free" under `path`; returns a lock-safe pull consumer
/// (and its receiver) holding "held", locked under `locks`.
fn holding_the_first_of_two(
    zk: &zk_queue::ZkClient,
    path: &str,
    locks: &str,
) -> (
    zk_queue::DistributedQueue<String>,
    ItemReceiver<String>,
    Delivery<String>,
) {
    ok(&["put", path, "held", "free"]);
    let held = holding_the_first(zk, path, locks);
    assert_eq!(held.2.item(), "held");
    held
}

#[test]
fn cli_take_and_purge_with_the_lock_path_leave_an_item_a_consumer_holds() {
    let path = unique_path("cli-locked");
    let locks = unique_path("cli-locked-locks");
    let zk = client();
    let (consumer, _receiver, delivery) = holding_the_first_of_two(&zk, &path, &locks);

    let out = zkq(&["take", &path, "-n", "2", "--timeout", "300ms", "--lock-path", &locks]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "free\n");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("1 items left alone: held by consumers"), "{stderr}");

    ok(&["put", &path, "later"]);
    assert_eq!(
        json(&["purge", &path, "--yes", "--lock-path", &locks]),
        serde_json::json!({"deleted": 1, "held": 1})
    );
    assert_eq!(children(&zk, &path).len(), 1, "the held item stays");
    assert_eq!(delivery.ack(), "held");
    consumer.close();
}

#[test]
fn cli_take_and_purge_leave_an_item_a_consumer_holds_under_its_recorded_lock_path_unless_forced() {
    let path = unique_path("cli-recorded-locks");
    let locks = unique_path("cli-recorded-locks-locks");
    let zk = client();
    let (consumer, _receiver, delivery) = holding_the_first_of_two(&zk, &path, &locks);

    // No --lock-path: the consumers' recorded one is found.
    let out = zkq(&["take", &path, "-n", "2", "--timeout", "300ms"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "free\n");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&format!("held under {locks}")), "{stderr}");
    assert!(stderr.contains("1 items left alone: held by consumers"), "{stderr}");
    ok(&["put", &path, "later"]);
    assert_eq!(
        json(&["purge", &path, "--yes"]),
        serde_json::json!({"deleted": 1, "held": 1})
    );
    assert_eq!(children(&zk, &path).len(), 1, "the held item stays");

    // Forced, the held item is taken.
    let out = zkq(&["take", &path, "--timeout", "300ms", "--force"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "held\n");
    assert!(children(&zk, &path).is_empty());
    drop(delivery);
    consumer.close();
}

#[test]
fn a_consumer_never_records_its_lock_path_over_data_of_the_queue_nodes_own() {
    let path = unique_path("cli-foreign-queue-data");
    let zk = client();
    zk.ensure_path(&path).unwrap();
    zk.set_data(&path, b"10.0.0.1", None).unwrap();
    let consumer = QueueBuilder::new(&zk, &path, StringSerializer)
        .lock_path(&unique_path("cli-foreign-queue-data-locks"))
        .consumer(|_: String| Ok(()))
        .build_queue()
        .unwrap();
    assert_eq!(zk.get_data(&path).unwrap().0, b"10.0.0.1");
    let raw = zk_queue::admin::RawQueue::new(&zk, &path).unwrap();
    assert_eq!(raw.recorded_lock_path().unwrap(), None);
    consumer.close();
}

#[test]
fn cli_stats_reads_the_recorded_lock_path_and_flags_locks_of_gone_items_and_persistent_locks() {
    let path = unique_path("cli-stale-locks");
    let locks = format!("{path}-locks");
    let zk = client();
    let (consumer, _receiver, delivery) = holding_the_first_of_two(&zk, &path, &locks);
    let held = delivery.meta().name().to_owned();
    // An ephemeral lock of an item no longer in the queue, and a persistent
    // lock (no session's end will remove it) of another gone item.
    let other = client();
    other
        .create(
            &format!("{locks}/queue-0000000098"),
            b"crashed-worker",
            CreateMode::Ephemeral,
        )
        .unwrap();
    zk.create(&format!("{locks}/queue-0000000099"), b"by-hand", CreateMode::Persistent)
        .unwrap();

    // No --lock-path: the recorded one is used.
    let stats = json(&["stats", &path]);
    assert_eq!(stats["lock_path"], locks.as_str(), "{stats}");
    assert_eq!(stats["lock_path_recorded"], true, "{stats}");
    assert_eq!(stats["locks"], 3, "{stats}");
    assert_eq!(stats["stale_locks"], 2, "{stats}");
    let details = stats["lock_details"].as_array().unwrap();
    let detail = |name: &str| details.iter().find(|d| d["name"] == name).unwrap().clone();
    let live = detail(&held);
    assert_eq!(
        (
            live["item_present"].as_bool(),
            live["session_state"].as_str(),
            live.get("stale")
        ),
        (Some(true), Some("connected"), None),
        "{live}"
    );
    assert_eq!(live["session"], format!("0x{:x}", zk.session_id().unwrap()), "{live}");
    let orphan = detail("queue-0000000098");
    assert_eq!(orphan["stale"], serde_json::json!(["item gone"]), "{orphan}");
    assert_eq!(
        orphan["session"],
        format!("0x{:x}", other.session_id().unwrap()),
        "{orphan}"
    );
    let by_hand = detail("queue-0000000099");
    assert_eq!(
        by_hand["stale"],
        serde_json::json!(["item gone", "persistent"]),
        "{by_hand}"
    );
    assert!(by_hand.get("session").is_none(), "{by_hand}");
    assert!(
        stats["sessions"].as_str().unwrap().starts_with("from dump on "),
        "{stats}"
    );

    let text = ok(&["stats", &path]);
    assert!(
        text.contains(&format!("lock path: {locks} (recorded by the queue's consumers)\n")),
        "{text}"
    );
    assert!(text.contains("queue-0000000098: crashed-worker\tsession="), "{text}");
    assert!(text.contains("(connected)\tstale: item gone\n"), "{text}");
    assert!(
        text.contains("queue-0000000099: by-hand\tstale: item gone, persistent\n"),
        "{text}"
    );
    assert!(text.contains("stale locks: 2\n"), "{text}");

    // The ephemeral lock's session ends: the lock goes with it.
    other.close();
    zk.delete(&format!("{locks}/queue-0000000099"), None).unwrap();
    crate::support::eventually(Duration::from_secs(30), "the closed session's lock is gone", || {
        json(&["stats", &path])["stale_locks"] == 0
    });
    delivery.ack();
    consumer.close();
}

#[test]
fn cli_stats_says_lock_sessions_are_unknown_when_the_server_refuses_the_words_it_asks() {
    // A server that answers the words its start needs only: `dump`, `mntr` and
    // `cons` are refused, as on servers that allow few words.
    let server = zk_queue::testing::TestingServer::builder()
        .four_letter_words(&[])
        .start()
        .unwrap();
    let path = unique_path("cli-unknown-sessions");
    let locks = format!("{path}-locks");
    let zk = zk_queue::ZkClient::connect(&server.connect_string()).unwrap();
    let producer = QueueBuilder::new(&zk, &path, StringSerializer).build_queue().unwrap();
    producer.put("job".to_owned()).unwrap();
    assert!(
        producer.flush_timeout(Duration::from_secs(30)),
        "the put was not stored"
    );
    producer.close();
    let item = children(&zk, &path).remove(0);
    zk.ensure_path(&locks).unwrap();
    zk.create(&format!("{locks}/{item}"), b"worker-1", CreateMode::Ephemeral)
        .unwrap();

    let out = std::process::Command::new(env!("CARGO_BIN_EXE_zkq"))
        .args([
            "--connect",
            &server.connect_string(),
            "--json",
            "stats",
            &path,
            "--lock-path",
            &locks,
        ])
        .env_remove("ZK_CONNECT")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stats: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let lock = &stats["lock_details"][0];
    assert_eq!(lock["name"], item.as_str(), "{stats}");
    assert_eq!(lock["session_state"], "unknown", "{stats}");
    assert!(
        lock.get("stale").is_none(),
        "an unknown session is not called gone: {stats}"
    );
    let sessions = stats["sessions"].as_str().unwrap();
    assert!(
        sessions.starts_with("unknown: dump on ") && sessions.contains("not in the whitelist"),
        "{stats}"
    );
}

#[test]
fn cli_stats_escapes_a_locks_data_as_peek_does() {
    let path = unique_path("cli-lock-data");
    let locks = format!("{path}-locks");
    let zk = client();
    // Its consumers record the lock path.
    QueueBuilder::new(&zk, &path, StringSerializer)
        .lock_path(&locks)
        .consumer(|_: String| Ok(()))
        .build_queue()
        .unwrap()
        .close();
    // A node of binary data (an item frame, escape sequences) in the lock
    // directory.
    let mut data = crate::support::frame(&[b"x"]);
    data.extend_from_slice(b"\x1b[2J");
    zk.create(&format!("{locks}/queue-0000000007"), &data, CreateMode::Persistent)
        .unwrap();
    let text = ok(&["stats", &path]);
    assert!(
        text.chars().all(|c| !c.is_control() || c == '\n' || c == '\t'),
        "{text:?}"
    );
    assert!(
        text.contains("queue-0000000007: \\u{0}\\u{1}\\u{0}\\u{1}\\u{1}\\u{0}\\u{0}\\u{0}\\u{1}x\\u{2}\\u{1b}[2J\t"),
        "{text}"
    );
}
