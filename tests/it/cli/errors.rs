//! An error case for every subcommand: an invalid path, a missing queue.

use std::process::Command;

use crate::support::server::{shared_connect_string, unique_path};

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
    let commands: [&[&str]; 10] = [
        &["put", "bad//path", "x"],
        &["take", "bad//path"],
        &["peek", "bad//path"],
        &["ls", "bad//path"],
        &["stats", "bad//path"],
        &["purge", "bad//path", "--yes"],
        &["watch", "bad//path", "--for", "1s"],
        &["dead-letter", "list", "bad//path"],
        &["dead-letter", "requeue", "bad//path", "--to", "/q"],
        &["recipe", "bad//path"],
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
