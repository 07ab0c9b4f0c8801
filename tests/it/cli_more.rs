//! More of `zkq`: `watch --rates` on a busy queue, and an error case for
//! every subcommand.

use std::process::Command;
use std::time::Duration;

use zk_queue::{BytesSerializer, QueueBuilder};

use crate::support::{client, server::shared_connect_string, server::unique_path};

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

/// Runs zkq against the shared server; returns (exit code, stdout, stderr).
fn zkq(args: &[&str]) -> (i32, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_zkq"))
        .args(["--connect", &shared_connect_string()])
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn cli_every_subcommand_refuses_an_invalid_path_with_one_line() {
    let commands: [&[&str]; 9] = [
        &["put", "bad//path", "x"],
        &["take", "bad//path"],
        &["peek", "bad//path"],
        &["ls", "bad//path"],
        &["stats", "bad//path"],
        &["purge", "bad//path", "--yes"],
        &["watch", "bad//path", "--for", "1s"],
        &["dead-letter", "list", "bad//path"],
        &["dead-letter", "requeue", "bad//path", "--to", "/q"],
    ];
    for args in commands {
        let (code, stdout, stderr) = zkq(args);
        assert_eq!(code, 1, "{args:?}: {stderr}");
        assert!(stdout.is_empty(), "{args:?}: {stdout}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.starts_with("zkq: invalid path"), "{args:?}: {stderr}");
    }
    // The library's own check: a control character is refused before connecting.
    let (code, _, stderr) = zkq(&["ls", "/jobs\u{7}"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.starts_with("zkq: invalid path") && stderr.contains("control"),
        "{stderr}"
    );
}

#[test]
fn cli_a_missing_queue_is_named_in_one_line() {
    let path = unique_path("cli-missing");
    for command in ["ls", "peek", "stats"] {
        let (code, stdout, stderr) = zkq(&[command, &path]);
        assert_eq!((code, stdout.as_str()), (1, ""), "{command}: {stderr}");
        assert_eq!(stderr, format!("zkq: node {path} does not exist\n"), "{command}");
    }
    let (code, _, stderr) = zkq(&["purge", &path]);
    assert_eq!(code, 1, "purge without --yes on a non-terminal refuses: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}
