//! The Java queue peers (`interop/java/QueuePeer.java`) work Java-to-Java
//! against a real ZooKeeper server, so tests that mix them with the Rust
//! queues can trust what the peers do and print.

use std::path::Path;
use std::time::Duration;

use super::support::java::{expected_items, peer_classpath, run_peer, spawn_peer, PeerCommand, EXIT_TIMEOUT};
use super::support::server::{shared_connect_string, unique_path};

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
    let connect = shared_connect_string();
    let path = unique_path("java-spawned-consumer");

    let consumer = spawn_peer("classic-take", &connect, &path, 20, "").unwrap();
    // Give the consumer time to find the queue empty and block in take().
    std::thread::sleep(Duration::from_millis(1500));
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
