//! The `zkq` binary against the shared server: each test runs the built
//! binary on its own path and checks what it printed and what it left in
//! ZooKeeper.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use zk_queue::{Acl, CreateMode, Perms, SimpleQueue, ZkClient};

use crate::support::server::{shared_connect_string, unique_path};
use crate::support::{client, frame};

/// Runs `zkq --connect <shared> <args>` with `stdin` as its standard input.
fn zkq_with_stdin(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_zkq"))
        .arg("--connect")
        .arg(shared_connect_string())
        .args(args)
        .env_remove("ZK_CONNECT")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("zkq starts");
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

fn zkq(args: &[&str]) -> Output {
    zkq_with_stdin(args, "")
}

/// Runs zkq, asserts success and returns its stdout.
fn ok(args: &[&str]) -> String {
    let out = zkq(args);
    assert!(
        out.status.success(),
        "zkq {args:?} failed: {}\nstdout:\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Runs zkq with `--json` and parses its stdout.
fn json(args: &[&str]) -> Value {
    let mut with_json = vec!["--json"];
    with_json.extend_from_slice(args);
    let text = ok(&with_json);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("zkq {args:?} printed {text:?}: {e}"))
}

fn lines(text: &str) -> Vec<&str> {
    text.lines().collect()
}

fn children(client: &ZkClient, path: &str) -> Vec<String> {
    let mut names = client.get_children(path).unwrap().0;
    names.sort();
    names
}

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
    assert_eq!(peeked[0]["preview"], "a");
    assert_eq!(peeked[0]["kind"], "plain");
    assert_eq!(peeked[0]["attempts"], 0);
    assert_eq!(
        peeked[0]["size"],
        11 + 24,
        "a one-byte item's frame and the put's trailer"
    );
    assert_eq!(peeked[1]["preview"], "b");

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
    assert_eq!(taken[0]["bytes"], 1);
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
    assert_eq!(peeked[0]["preview"], "early");
    assert_eq!(peeked[0]["due"], 1000);
    assert_eq!(peeked[1]["kind"], "delay");
    assert!(peeked[1]["due"].as_i64().unwrap() > 1000);
    let text = ok(&["peek", &path]);
    assert!(text.lines().nth(1).unwrap().contains("(not-due)"), "{text}");
    assert!(text.lines().next().unwrap().contains("due=1000(due)"), "{text}");

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
    assert_eq!(peeked[0]["preview"], "y");
    assert_eq!(peeked[0]["size"], 1, "raw bytes, no frame");
    assert_eq!(ok(&["take", &path, "-n", "9", "--timeout", "200ms"]), "y\nz\n");
    assert!(zkq(&["put", &path, "--classic", "--priority", "1", "x"]).status.code() == Some(2));
}

#[test]
fn cli_ls_pages_in_consumption_order() {
    let path = unique_path("cli-ls");
    ok(&["put", &path, "1", "2", "3", "4", "5"]);
    let all: Vec<String> = lines(&ok(&["ls", &path])).iter().map(|s| s.to_string()).collect();
    assert_eq!(all.len(), 5);
    let first = json(&["ls", &path, "--limit", "2"]);
    assert_eq!(first["items"], serde_json::json!([all[0], all[1]]));
    assert_eq!(first["next"], all[1]);
    let second = json(&["ls", &path, "--limit", "2", "--after", &all[1]]);
    assert_eq!(second["items"], serde_json::json!([all[2], all[3]]));
    // The page continues even if the --after item was taken meanwhile.
    client().delete(&format!("{path}/{}", all[3]), None).unwrap();
    let last = json(&["ls", &path, "--limit", "2", "--after", &all[3]]);
    assert_eq!(last["items"], serde_json::json!([all[4]]));
    assert_eq!(last["next"], Value::Null);
}

#[test]
fn cli_stats_counts_a_prepared_queue_exactly() {
    let path = unique_path("cli-stats");
    let locks = format!("{path}-locks");
    let dead = format!("{path}-dead");
    ok(&["put", &path, "--priority", "1", "a", "b"]);
    ok(&["put", &path, "--priority", "-3", "c"]);
    let zk = client();
    zk.create(&format!("{path}/config"), b"", CreateMode::Persistent)
        .unwrap();
    let head = lines(&ok(&["ls", &path, "--limit", "1"]))[0].to_owned();
    zk.ensure_path(&locks).unwrap();
    zk.create(&format!("{locks}/{head}"), b"worker-7", CreateMode::Ephemeral)
        .unwrap();
    ok(&["put", &dead, "x", "y"]);
    zk.create(&format!("{dead}/note"), b"", CreateMode::Persistent).unwrap();
    std::thread::sleep(Duration::from_millis(50));

    let stats = json(&["stats", &path, "--lock-path", &locks, "--dead-letter-path", &dead]);
    assert_eq!(stats["layout"], "curator");
    assert_eq!(stats["kind"], "priority");
    assert_eq!(stats["items"], 3);
    assert_eq!(stats["foreign"], 1);
    assert_eq!(stats["head"], head.as_str());
    assert!(stats["oldest_age_ms"].as_i64().unwrap() >= 40, "{stats}");
    assert_eq!(stats["priorities"], serde_json::json!({"-3": 1, "1": 2}));
    assert_eq!(stats["locks"], 1);
    assert_eq!(stats["lock_owners"], serde_json::json!({ head.as_str(): "worker-7" }));
    assert_eq!(stats["dead_letters"], 2);

    let text = ok(&["stats", &path, "--lock-path", &locks]);
    assert!(text.contains("items: 3\n"), "{text}");
    assert!(text.contains("foreign children: 1\n"), "{text}");
    assert!(text.contains("priority -3: 1\n"), "{text}");
    assert!(text.contains(&format!("{head}: worker-7")), "{text}");
}

#[test]
fn cli_purge_deletes_items_and_keeps_foreign_children() {
    let path = unique_path("cli-purge");
    ok(&["put", &path, "1", "2", "3", "4", "5"]);
    client()
        .create(&format!("{path}/keep"), b"", CreateMode::Persistent)
        .unwrap();
    assert_eq!(json(&["purge", &path, "--yes"]), serde_json::json!({"deleted": 5}));
    assert_eq!(children(&client(), &path), ["keep"]);
    assert_eq!(ok(&["purge", &path, "--yes"]).trim(), "0");
}

#[test]
fn cli_purge_without_yes_refuses_when_stdin_is_not_a_terminal() {
    let path = unique_path("cli-purge-refuse");
    ok(&["put", &path, "1", "2"]);
    let out = zkq_with_stdin(&["purge", &path], "y\n");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.starts_with("zkq: refusing to purge"), "{stderr}");
    assert!(stderr.contains("--yes"), "{stderr}");
    assert_eq!(children(&client(), &path).len(), 2, "nothing deleted");
}

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

#[test]
fn cli_errors_are_one_line_with_exit_code_1() {
    let out = zkq(&["ls", "no-slash"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.starts_with("zkq: invalid path"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");

    let out = zkq(&["ls", &unique_path("cli-missing")]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("does not exist"));

    assert_eq!(zkq(&["take"]).status.code(), Some(2), "usage error");

    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_zkq"))
        .args(["--connect", "127.0.0.1:1", "--session-timeout", "2s", "ls", "/q"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.starts_with("zkq: cannot connect to 127.0.0.1:1"), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(15), "{:?}", started.elapsed());
}

#[test]
fn cli_purge_deletes_in_chunks_beyond_one_batch() {
    let path = unique_path("cli-purge-big");
    let zk = client();
    zk.ensure_path(&path).unwrap();
    let nodes: Vec<(String, Vec<u8>)> = (0..2_500).map(|_| (format!("{path}/queue-"), frame(&[b"x"]))).collect();
    let created = zk.create_many(&nodes, CreateMode::PersistentSequential).unwrap();
    assert!(created.iter().all(|r| r.is_ok()));
    zk.create(&format!("{path}/qn-config"), b"", CreateMode::Persistent)
        .unwrap();
    assert_eq!(json(&["stats", &path])["items"], 2_500);
    assert_eq!(json(&["purge", &path, "--yes"]), serde_json::json!({"deleted": 2_500}));
    assert_eq!(
        children(&zk, &path),
        ["qn-config"],
        "a name foreign to the detected layout stays"
    );
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

#[test]
fn cli_connect_from_env_and_digest_auth() {
    let path = unique_path("cli-env");
    let out = Command::new(env!("CARGO_BIN_EXE_zkq"))
        .env("ZK_CONNECT", shared_connect_string())
        .args(["--auth", "alice:secret", "--json", "put", &path, "--classic", "hi"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), r#"{"put":1}"#);
    let stats = json(&["stats", &path]);
    assert_eq!(
        (stats["layout"].as_str(), stats["items"].as_i64()),
        (Some("classic"), Some(1))
    );

    let out = zkq(&["--auth", "no-colon", "ls", &path]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("zkq: --auth must be user:password"));
}

#[test]
fn cli_watch_reports_added_and_removed_items() {
    let path = unique_path("cli-watch");
    ok(&["put", &path, "first"]);
    let first = lines(&ok(&["ls", &path]))[0].to_owned();
    let mut watcher = Command::new(env!("CARGO_BIN_EXE_zkq"))
        .args(["--connect", &shared_connect_string(), "--json", "watch", &path])
        .args(["--changes", "2", "--for", "20s"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The first line is the initial listing: change the queue only after it.
    let mut stdout = BufReader::new(watcher.stdout.take().unwrap());
    let mut initial = String::new();
    stdout.read_line(&mut initial).unwrap();
    ok(&["put", &path, "second"]);
    std::thread::sleep(Duration::from_millis(300));
    ok(&["take", &path, "--timeout", "1s"]);
    let started = Instant::now();
    let rest: Vec<String> = stdout.lines().map(Result::unwrap).collect();
    let status = watcher.wait().unwrap();
    assert!(started.elapsed() < Duration::from_secs(10), "stopped after two changes");
    assert!(status.success());
    let events: Vec<Value> = std::iter::once(initial.trim_end())
        .chain(rest.iter().map(String::as_str))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events.len(), 3, "{events:?}");
    assert_eq!(events[0]["items"], 1);
    assert_eq!(events[1]["items"], 2);
    assert_eq!(events[1]["added"].as_array().unwrap().len(), 1);
    assert_eq!(events[2]["removed"], serde_json::json!([first]));

    let quiet = ok(&["watch", &path, "--for", "300ms"]);
    assert_eq!(quiet, "items: 1\n");
}
