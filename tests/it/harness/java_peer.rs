//! The Java queue peers (`interop/java/QueuePeer.java`) work Java-to-Java
//! against a real ZooKeeper server, so tests that mix them with the Rust
//! queues can trust what the peers do and print.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use zk_queue::testing::TestingServer;

use crate::support::java::{
    expected_items, peer_classpath, run_peer, spawn_peer, ErrorMode, PeerCommand, EXIT_TIMEOUT,
};
use crate::support::server::{shared_connect_string, unique_path};
use crate::support::wait_for_watches;

#[test]
fn java_classic_offer_then_classic_take_in_order() {
    let connect = shared_connect_string();
    let path = unique_path("java-classic-order");

    let offered = run_peer("classic-offer", &connect, &path, 100, "classic-").unwrap();
    assert!(offered.is_empty(), "offer printed {offered:?}");
    let taken = run_peer("classic-take", &connect, &path, 100, "").unwrap();

    assert_eq!(taken, expected_items("classic-", 100));
}

#[test]
fn java_simple_offer_then_simple_take_in_order() {
    let connect = shared_connect_string();
    let path = unique_path("java-simple-order");

    run_peer("simple-offer", &connect, &path, 50, "simple-").unwrap();
    let taken = run_peer("simple-take", &connect, &path, 50, "").unwrap();

    assert_eq!(taken, expected_items("simple-", 50));
}

#[test]
fn java_simple_queue_reads_classic_items() {
    let connect = shared_connect_string();
    let path = unique_path("java-classic-to-simple");

    run_peer("classic-offer", &connect, &path, 30, "c2s-").unwrap();
    let taken = run_peer("simple-take", &connect, &path, 30, "").unwrap();

    assert_eq!(taken, expected_items("c2s-", 30));
}

#[test]
fn java_classic_queue_reads_simple_items() {
    let connect = shared_connect_string();
    let path = unique_path("java-simple-to-classic");

    run_peer("simple-offer", &connect, &path, 30, "s2c-").unwrap();
    let taken = run_peer("classic-take", &connect, &path, 30, "").unwrap();

    assert_eq!(taken, expected_items("s2c-", 30));
}

#[test]
fn java_peer_default_prefix_is_item() {
    let connect = shared_connect_string();
    let path = unique_path("java-default-prefix");

    PeerCommand::new("classic-offer", &connect, &path, 3).run().unwrap();
    let taken = run_peer("classic-take", &connect, &path, 3, "").unwrap();

    assert_eq!(taken, ["item-0", "item-1", "item-2"]);
}

#[test]
fn java_peer_items_round_trip_as_utf8() {
    let connect = shared_connect_string();
    let path = unique_path("java-utf8");
    let prefix = "élément ✓ 項目-";

    run_peer("simple-offer", &connect, &path, 5, prefix).unwrap();
    let taken = run_peer("classic-take", &connect, &path, 5, "").unwrap();

    assert_eq!(taken, expected_items(prefix, 5));
}

#[test]
fn java_spawned_consumer_blocks_until_items_are_offered() {
    // A server of its own: the consumer's watch is the only one on it.
    let server = TestingServer::start().unwrap();
    let connect = server.connect_string();
    let path = unique_path("java-spawned-consumer");

    let consumer = spawn_peer("classic-take", &connect, &path, 20, "").unwrap();
    // The consumer found the queue empty and waits in take() on its watch.
    wait_for_watches(&server, 1);
    run_peer("classic-offer", &connect, &path, 20, "late-").unwrap();

    assert_eq!(consumer.wait().unwrap(), expected_items("late-", 20));
}

#[test]
fn java_peer_times_out_with_exit_code_3() {
    let connect = shared_connect_string();
    let path = unique_path("java-timeout");

    let error = PeerCommand::new("classic-take", &connect, &path, 1)
        .timeout(Duration::from_secs(2))
        .run()
        .unwrap_err();

    let message = format!("{error:#}");
    assert!(
        message.contains(&format!("exited with code {EXIT_TIMEOUT}")),
        "{message}"
    );
    assert!(message.contains("timed out after 2000 ms"), "{message}");
}

#[test]
fn java_peer_failure_includes_its_stderr() {
    let connect = shared_connect_string();
    let path = unique_path("java-bad-mode");

    let error = run_peer("no-such-mode", &connect, &path, 1, "").unwrap_err();

    let message = format!("{error:#}");
    assert!(message.contains("exited with code 2"), "{message}");
    assert!(message.contains("unknown mode 'no-such-mode'"), "{message}");
}

#[test]
fn java_peer_process_is_killed_on_drop() {
    let connect = shared_connect_string();
    let path = unique_path("java-drop");

    let consumer = spawn_peer("simple-take", &connect, &path, 1, "").unwrap();
    let proc_dir = format!("/proc/{}", consumer.id());
    assert!(Path::new(&proc_dir).exists());
    drop(consumer);

    // Drop kills and reaps the child, so its process entry is gone.
    assert!(!Path::new(&proc_dir).exists(), "{proc_dir} still exists");
}

#[test]
fn java_peer_classpath_lists_classes_then_jars() {
    let classpath = peer_classpath();
    let entries: Vec<&str> = classpath.split(':').collect();

    assert!(Path::new(entries[0]).join("QueuePeer.class").is_file());
    for jar in &entries[1..] {
        assert!(Path::new(jar).is_file(), "{jar} is missing");
    }
}

// ---------------------------------------------------------------- Curator DistributedQueue family

/// Runs a `curator-put*` producer that puts `lines` (one item per line).
fn curator_put(mode: &str, connect: &str, path: &str, lines: &[String]) -> PeerCommand {
    PeerCommand::new(mode, connect, path, lines.len()).stdin_lines(lines.to_vec())
}

/// The sorted children of `path`, listed by the `curator-list` peer.
fn curator_list(connect: &str, path: &str) -> Vec<String> {
    PeerCommand::new("curator-list", connect, path, 0).run().unwrap()
}

/// Owned strings.
fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|item| (*item).to_owned()).collect()
}

/// Milliseconds since the Unix epoch.
fn epoch_ms(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH).unwrap().as_millis() as u64
}

/// Whether `name` is `queue-` followed by `digits` decimal digits.
fn is_plain_name(name: &str) -> bool {
    name.strip_prefix("queue-")
        .is_some_and(|seq| seq.len() == 10 && seq.bytes().all(|b| b.is_ascii_digit()))
}

#[test]
fn java_curator_put_then_consume_in_order() {
    let connect = shared_connect_string();
    let path = unique_path("java-curator-plain");
    let mut items = strings(&["first", "with two  spaces", "", "élément ✓ 項目", " leading space"]);
    items.extend(expected_items("plain-", 10));

    let put = curator_put("curator-put", &connect, &path, &items).run().unwrap();
    assert!(put.is_empty(), "put printed {put:?}");
    let names = curator_list(&connect, &path);
    assert_eq!(names.len(), items.len(), "{names:?}");
    assert!(names.iter().all(|name| is_plain_name(name)), "{names:?}");

    let consumed = PeerCommand::new("curator-consume", &connect, &path, items.len())
        .run()
        .unwrap();

    assert_eq!(consumed, items);
    assert!(curator_list(&connect, &path).is_empty());
}

#[test]
fn java_curator_priority_consumed_in_priority_order() {
    let connect = shared_connect_string();
    let path = unique_path("java-curator-priority");
    let lines = strings(&["10 p10", "0 p0", "5 p5", "-1 p-1", "5 p5-second"]);

    curator_put("curator-put-priority", &connect, &path, &lines)
        .run()
        .unwrap();
    let consumed = PeerCommand::new("curator-consume-priority", &connect, &path, 5)
        .run()
        .unwrap();

    // Lower priorities first; equal priorities in put order.
    assert_eq!(consumed, ["p-1", "p0", "p5", "p5-second", "p10"]);
}

#[test]
fn java_curator_delay_holds_items_until_due() {
    let connect = shared_connect_string();
    let path = unique_path("java-curator-delay");

    let consumer = PeerCommand::new("curator-consume-delay", &connect, &path, 2)
        .spawn()
        .unwrap();
    consumer.wait_ready(Duration::from_secs(30)).unwrap();
    let start = epoch_ms(SystemTime::now());
    let due_late = start + 1500;
    // The due item first: if the two puts land far apart on a loaded machine,
    // the late item must not already be due when the early one arrives.
    let lines = vec![format!("{} early", start - 1000), format!("{due_late} late")];
    curator_put("curator-put-delay", &connect, &path, &lines).run().unwrap();
    let put_done = epoch_ms(SystemTime::now());
    let output = consumer.wait_output().unwrap();

    assert_eq!(output.lines, ["early", "late"]);
    let early = epoch_ms(output.arrivals[0]);
    let late = epoch_ms(output.arrivals[1]);
    // The consumer was already waiting, so the due item comes as soon as it is put.
    assert!(
        early <= put_done + 1000,
        "the due item came {} ms after the put",
        early - put_done
    );
    assert!(late >= due_late, "the delayed item came {} ms early", due_late - late);
    assert!(late - start >= 1000, "{late} - {start}");
}

#[test]
fn java_curator_id_queue_consumes_in_put_order() {
    let connect = shared_connect_string();
    let path = unique_path("java-curator-id");
    let lines = strings(&["b x0", "a x1", "b x2", "job/1|x x3", "z x4"]);

    curator_put("curator-put-id", &connect, &path, &lines).run().unwrap();
    let consumed = PeerCommand::new("curator-consume-id", &connect, &path, 5)
        .run()
        .unwrap();

    assert_eq!(consumed, ["x0", "x1", "x2", "x3", "x4"]);
}

#[test]
fn java_curator_put_multi_is_one_node_consumed_in_order() {
    let connect = shared_connect_string();
    let path = unique_path("java-curator-multi");
    let items = expected_items("multi-", 5);

    curator_put("curator-put-multi", &connect, &path, &items).run().unwrap();
    let names = curator_list(&connect, &path);
    assert_eq!(names, ["queue-0000000000"]);

    let consumed = PeerCommand::new("curator-consume", &connect, &path, 5).run().unwrap();
    assert_eq!(consumed, items);
    assert!(curator_list(&connect, &path).is_empty());
}

#[test]
fn java_curator_consumer_leaves_items_beyond_its_count() {
    let connect = shared_connect_string();
    let path = unique_path("java-curator-partial");
    let items = expected_items("partial-", 5);

    curator_put("curator-put", &connect, &path, &items).run().unwrap();
    let consumed = PeerCommand::new("curator-consume", &connect, &path, 2).run().unwrap();

    assert_eq!(consumed, items[..2]);
    assert_eq!(
        curator_list(&connect, &path),
        ["queue-0000000002", "queue-0000000003", "queue-0000000004"]
    );
}

#[test]
fn java_curator_lock_safe_requeue_redelivers_a_failed_item_later() {
    let connect = shared_connect_string();
    let path = unique_path("java-curator-requeue");
    let lock_path = format!("{path}-locks");

    curator_put("curator-put", &connect, &path, &strings(&["a", "b", "c"]))
        .run()
        .unwrap();
    let output = PeerCommand::new("curator-consume", &connect, &path, 3)
        .lock_path(&lock_path)
        .fail_first(1)
        .error_mode(ErrorMode::Requeue)
        .run_output()
        .unwrap();

    // "a" failed, was re-created at the back of the queue and delivered last.
    assert_eq!(output.stderr_tagged("failed"), ["a"]);
    assert_eq!(output.lines, ["b", "c", "a"]);
    assert!(curator_list(&connect, &path).is_empty());
    assert!(curator_list(&connect, &lock_path).is_empty());
}

#[test]
fn java_curator_lock_safe_delete_drops_a_failed_item() {
    let connect = shared_connect_string();
    let path = unique_path("java-curator-delete");
    let lock_path = format!("{path}-locks");

    curator_put("curator-put", &connect, &path, &strings(&["a", "b", "c"]))
        .run()
        .unwrap();
    let output = PeerCommand::new("curator-consume", &connect, &path, 2)
        .lock_path(&lock_path)
        .fail_first(1)
        .error_mode(ErrorMode::Delete)
        .run_output()
        .unwrap();

    assert_eq!(output.stderr_tagged("failed"), ["a"]);
    assert_eq!(output.lines, ["b", "c"]);
    // Named, so that a node left behind says which it is.
    assert_eq!(curator_list(&connect, &path), Vec::<String>::new(), "{}", output.stderr);
}

#[test]
fn java_curator_list_shows_each_kinds_node_names() {
    let connect = shared_connect_string();
    let path = unique_path("java-curator-names");

    // One queue node, so the kinds share its sequence counter: 0, 1 and 2, 3, 4.
    curator_put("curator-put", &connect, &path, &strings(&["plain"]))
        .run()
        .unwrap();
    curator_put("curator-put-priority", &connect, &path, &strings(&["5 p5", "-1 p-1"]))
        .run()
        .unwrap();
    curator_put("curator-put-delay", &connect, &path, &strings(&["1700000000000 d"]))
        .run()
        .unwrap();
    curator_put("curator-put-id", &connect, &path, &strings(&["job/1|x i"]))
        .run()
        .unwrap();

    assert_eq!(
        curator_list(&connect, &path),
        [
            "queue-0000000000",
            "queue-0FFFFFFFF0000000002",
            "queue-1000000050000000001",
            "queue-|18BCFE56800|0000000003",
            "queue-|job_1_x|0000000004",
        ]
    );
}

#[test]
fn java_curator_lock_safe_consumers_share_a_queue() {
    let connect = shared_connect_string();
    let path = unique_path("java-curator-shared");
    let lock_path = format!("{path}-locks");
    let items = expected_items("shared-", 6);
    let delay = Duration::from_millis(300);

    curator_put("curator-put", &connect, &path, &items).run().unwrap();
    let consumers: Vec<_> = (0..2)
        .map(|_| {
            PeerCommand::new("curator-consume", &connect, &path, 3)
                .lock_path(&lock_path)
                .consume_delay(delay)
                .spawn()
                .unwrap()
        })
        .collect();
    let outputs: Vec<_> = consumers.into_iter().map(|c| c.wait_output().unwrap()).collect();

    let mut all = BTreeSet::new();
    for output in &outputs {
        assert_eq!(output.lines.len(), 3, "{:?}", output.lines);
        all.extend(output.lines.iter().cloned());
        // Every delivery sleeps first, so three deliveries span at least two delays.
        let span = output.arrivals[2].duration_since(output.arrivals[0]).unwrap();
        assert!(span >= delay * 2 - Duration::from_millis(100), "{span:?}");
    }
    assert_eq!(
        all,
        items.into_iter().collect::<BTreeSet<_>>(),
        "an item was consumed twice"
    );
    assert!(curator_list(&connect, &path).is_empty());
}

#[test]
fn java_curator_peer_rejects_bad_input_with_exit_code_2() {
    let connect = shared_connect_string();
    let path = unique_path("java-curator-bad-input");

    let short = PeerCommand::new("curator-put", &connect, &path, 3)
        .stdin_lines(["only one"])
        .run()
        .unwrap_err();
    let message = format!("{short:#}");
    assert!(message.contains("exited with code 2"), "{message}");
    assert!(message.contains("expected 3 lines on stdin, got 1"), "{message}");

    let no_lock = PeerCommand::new("curator-consume", &connect, &path, 1)
        .error_mode(ErrorMode::Delete)
        .spawn()
        .unwrap();
    let not_ready = no_lock.wait_ready(Duration::from_secs(30)).unwrap_err();
    assert!(
        format!("{not_ready:#}").contains("exited before printing \"ready\""),
        "{not_ready:#}"
    );
    let message = format!("{:#}", no_lock.wait().unwrap_err());
    assert!(message.contains("exited with code 2"), "{message}");
    assert!(message.contains("peer.errorMode needs peer.lockPath"), "{message}");
}
