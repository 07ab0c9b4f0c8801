//! `zkq put` and `zkq take` of every item kind (plain, multi, priority,
//! delay, id, classic), and `zkq peek` at what was put.

use std::time::{Duration, Instant};

use zk_queue::{client::CreateMode, SimpleQueue};

use super::{children, json, lines, ok, zkq, zkq_with_stdin};
use crate::support::client;
use crate::support::server::unique_path;

#[test]
fn cli_plain_put_ls_peek_take_round_trip() {
    let path = unique_path("cli-plain");
    assert_eq!(ok(&["put", &path, "a", "b", "c"]).trim(), "3");
    assert_eq!(json(&["put", &path, "d"]), serde_json::json!({"put": 1}));
    let names = ok(&["ls", &path]);
    assert_eq!(lines(&names).len(), 4);
    assert!(lines(&names).iter().all(|n| n.starts_with("queue-")), "{names}");

    let peeked = json(&["peek", &path, "-n", "2"]);
    let peeked = peeked.as_array().unwrap();
    assert_eq!(peeked.len(), 2);
    assert_eq!(peeked[0]["data"], "a");
    assert_eq!(peeked[0]["kind"], "plain");
    assert_eq!(peeked[0]["attempt"], 1, "the first delivery will be attempt 1");
    assert_eq!(peeked[0]["size"], 1, "a one-byte item");
    assert_eq!(peeked[1]["data"], "b");

    let out = zkq(&["take", &path, "-n", "2", "--timeout", "1s"]);
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout), "a\nb\n");
    assert!(String::from_utf8_lossy(&out.stderr).contains("2 taken"));
    let taken = json(&["take", &path, "-n", "5", "--timeout", "200ms"]);
    let data: Vec<&str> = taken
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["data"].as_str().unwrap())
        .collect();
    assert_eq!(data, ["c", "d"]);
    assert_eq!(taken[0]["size"], 1);
    assert!(children(&client(), &path).is_empty());
}

#[test]
fn cli_put_reads_stdin_and_multi_puts_one_node() {
    let path = unique_path("cli-stdin");
    let out = zkq_with_stdin(&["put", &path, "--multi"], "one\ntwo\nthree\n");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "3");
    assert_eq!(children(&client(), &path).len(), 1, "one node for a multi put");
    let peeked = json(&["peek", &path]);
    assert_eq!(peeked[0]["records"], 3);
    assert_eq!(ok(&["take", &path, "-n", "3", "--timeout", "1s"]), "one\ntwo\nthree\n");
}

#[test]
fn cli_priority_items_come_lowest_first() {
    let path = unique_path("cli-priority");
    ok(&["put", &path, "--priority", "5", "five"]);
    ok(&["put", &path, "--priority", "-1", "minus-one"]);
    ok(&["put", &path, "--priority", "0", "zero"]);
    let peeked = json(&["peek", &path]);
    let priorities: Vec<i64> = peeked
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["priority"].as_i64().unwrap())
        .collect();
    assert_eq!(priorities, [-1, 0, 5]);
    assert_eq!(peeked[0]["kind"], "priority");
    assert_eq!(
        ok(&["take", &path, "-n", "3", "--timeout", "1s"]),
        "minus-one\nzero\nfive\n"
    );
}

#[test]
fn cli_delay_items_wait_until_due() {
    let path = unique_path("cli-delay");
    ok(&["put", &path, "--delay-ms", "600000", "later"]);
    ok(&["put", &path, "--at", "1000", "early"]);
    let peeked = json(&["peek", &path]);
    assert_eq!(peeked[0]["data"], "early");
    assert_eq!(peeked[0]["due"], 1000);
    assert_eq!(peeked[1]["kind"], "delay");
    assert!(peeked[1]["due"].as_i64().unwrap() > 1000);
    let text = ok(&["peek", &path]);
    assert!(text.lines().nth(1).unwrap().contains(", not-due)"), "{text}");
    assert!(
        text.lines()
            .next()
            .unwrap()
            .contains("due=1000(1970-01-01T00:00:01.000Z, "),
        "{text}"
    );
    assert!(text.lines().next().unwrap().contains(" ago, due)"), "{text}");

    let stats = json(&["stats", &path]);
    assert_eq!((stats["due"].as_i64(), stats["not_due"].as_i64()), (Some(1), Some(1)));
    assert_eq!(stats["kind"], "delay");

    let started = Instant::now();
    assert_eq!(ok(&["take", &path, "-n", "2", "--timeout", "500ms"]), "early\n");
    assert!(started.elapsed() >= Duration::from_millis(400), "waited for the rest");
    assert_eq!(children(&client(), &path).len(), 1, "the later item stays");
}

#[test]
fn cli_id_items_show_their_id() {
    let path = unique_path("cli-id");
    ok(&["put", &path, "--id", "order/42", "ship"]);
    let peeked = json(&["peek", &path]);
    assert_eq!(peeked[0]["kind"], "id");
    assert_eq!(peeked[0]["id"], "order_42");
    assert!(ok(&["peek", &path]).contains("id=order_42"));
    assert_eq!(ok(&["take", &path, "--timeout", "1s"]), "ship\n");
}

#[test]
fn cli_classic_items_are_shared_with_simple_queue() {
    let path = unique_path("cli-classic");
    let out = zkq_with_stdin(&["put", &path, "--classic"], "x\ny\n");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let names = children(&client(), &path);
    assert_eq!(names.len(), 2);
    assert!(names.iter().all(|n| n.starts_with("qn-")), "{names:?}");
    let queue = SimpleQueue::new(&client(), &path).unwrap();
    queue.offer(b"z").unwrap();
    assert_eq!(queue.poll().unwrap().as_deref(), Some(&b"x"[..]));
    let peeked = json(&["peek", &path]);
    assert_eq!(peeked[0]["data"], "y");
    assert_eq!(peeked[0]["size"], 1, "raw bytes, no frame");
    assert_eq!(ok(&["take", &path, "-n", "9", "--timeout", "200ms"]), "y\nz\n");
    assert!(zkq(&["put", &path, "--classic", "--priority", "1", "x"]).status.code() == Some(2));
}

#[test]
fn cli_take_skips_corrupt_items_and_leaves_them() {
    let path = unique_path("cli-corrupt");
    let zk = client();
    zk.ensure_path(&path).unwrap();
    zk.create(&format!("{path}/queue-"), b"garbage", CreateMode::PersistentSequential)
        .unwrap();
    ok(&["put", &path, "good"]);
    let out = zkq(&["take", &path, "-n", "2", "--timeout", "300ms"]);
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout), "good\n");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("skipping corrupt item"), "{stderr}");
    assert!(stderr.contains("1 taken"), "{stderr}");
    assert_eq!(children(&zk, &path).len(), 1, "the corrupt item stays");
}
