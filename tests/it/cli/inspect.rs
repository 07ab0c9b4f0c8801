//! Looking at a queue without changing it: `zkq ls`, `zkq stats` and
//! `zkq watch`.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use zk_queue::{client::CreateMode, BytesSerializer, QueueBuilder};

use super::{json, lines, ok};
use crate::support::client;
use crate::support::server::{shared_connect_string, unique_path};

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
    // The watcher reported the put (and listed again with a new watch): the
    // take is a change of its own, not merged with the put.
    let mut added = String::new();
    stdout.read_line(&mut added).unwrap();
    ok(&["take", &path, "--timeout", "1s"]);
    let started = Instant::now();
    let rest: Vec<String> = std::iter::once(added.trim_end().to_owned())
        .chain(stdout.lines().map(Result::unwrap))
        .collect();
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

#[test]
fn cli_watch_rates_reports_depth_and_rates() {
    let path = unique_path("cli-rates");
    let client = client();
    let queue = QueueBuilder::new(&client, &path, BytesSerializer)
        .build_queue()
        .unwrap();
    queue.put(b"first".to_vec()).unwrap();
    assert!(queue.flush_timeout(Duration::from_secs(10)));
    let watcher = Command::new(env!("CARGO_BIN_EXE_zkq"))
        .args([
            "--connect",
            &shared_connect_string(),
            "--json",
            "watch",
            &path,
            "--rates",
        ])
        .args(["--interval", "500ms", "--changes", "3"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    for i in 0..40 {
        queue.put(vec![i]).unwrap();
        std::thread::sleep(Duration::from_millis(25));
    }
    let output = watcher.wait_with_output().unwrap();
    assert!(output.status.success());
    let reports: Vec<serde_json::Value> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(reports.len(), 3, "{reports:?}");
    let added: f64 = reports.iter().map(|r| r["added_per_s"].as_f64().unwrap()).sum();
    assert!(added > 0.0, "{reports:?}");
    assert!(reports.iter().all(|r| r["removed_per_s"].as_f64() == Some(0.0)));
    let last = reports.last().unwrap()["items"].as_u64().unwrap();
    assert!((2..=41).contains(&last), "{reports:?}");
}

#[test]
fn cli_stats_counts_the_consumers_registered_beside_a_queue() {
    let path = unique_path("cli-stats-consumers");
    ok(&["put", &path, "a"]);
    assert_eq!(json(&["stats", &path])["consumers"], Value::Null, "no registry yet");
    let clients = [client(), client()];
    let queues: Vec<_> = clients
        .iter()
        .map(|c| {
            QueueBuilder::new(c, &path, BytesSerializer)
                .consumer(|_: Vec<u8>| Ok(()))
                .build_queue()
                .unwrap()
        })
        .collect();
    crate::support::eventually(Duration::from_secs(30), "both consumers register", || {
        json(&["stats", &path])["consumers"] == 2
    });
    let text = ok(&["stats", &path]);
    assert!(text.contains("registered consumers: 2\n"), "{text}");
    assert!(text.contains("foreign children: 0\n"), "{text}");
    drop(queues);
}
