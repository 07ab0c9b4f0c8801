//! What every subcommand shares: the connect string from `ZK_CONNECT`,
//! `--auth`, one-line errors with exit code 1 and usage errors with exit
//! code 2.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use zk_queue::{
    client::{Acl, Perms},
    ZkClient,
};

use super::{json, zkq};
use crate::support::client;
use crate::support::server::{shared_connect_string, unique_path};

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
fn cli_connect_from_env_and_digest_auth() {
    let path = unique_path("cli-env");
    // The queue node admits alice only.
    let owner = ZkClient::builder(&shared_connect_string())
        .add_auth("digest", b"alice:secret")
        .connect()
        .unwrap();
    client().ensure_path(&path).unwrap();
    owner
        .set_acl(&path, &[Acl::digest("alice", "secret", Perms::ALL)], None)
        .unwrap();
    let put = |auth: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_zkq"))
            .env("ZK_CONNECT", shared_connect_string())
            .args(auth)
            .args(["--json", "put", &path, "--classic", "hi"])
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let out = put(&[]);
    assert_eq!(out.status.code(), Some(1), "a put without --auth is denied");
    let out = put(&["--auth", "alice:not-secret"]);
    assert_eq!(out.status.code(), Some(1), "a put with the wrong password is denied");
    assert_eq!(owner.get_children(&path).unwrap().0.len(), 0, "nothing put yet");
    let out = put(&["--auth", "alice:secret"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), r#"{"put":1}"#);
    assert_eq!(owner.get_children(&path).unwrap().0.len(), 1, "the item is stored");
    let stats = json(&["--auth", "alice:secret", "stats", &path]);
    assert_eq!(
        (stats["layout"].as_str(), stats["items"].as_i64()),
        (Some("classic"), Some(1))
    );

    let out = zkq(&["--auth", "no-colon", "ls", &path]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("zkq: --auth must be user:password"));
}

#[test]
fn cli_dead_letter_requeue_takes_its_target_as_the_readme_shows_and_usage_omits_connect() {
    let readme = include_str!("../../../README.md");
    let shown = "$ zkq dead-letter requeue /jobs-dead --to /jobs";
    assert!(readme.contains(shown), "the README shows {shown:?}");
    // The same arguments, on paths of this test.
    let dead = unique_path("cli-readme-dead");
    let queue = unique_path("cli-readme-jobs");
    super::ok(&["put", &dead, "lost"]);
    let out = zkq(&["dead-letter", "requeue", &dead, "--to", &queue]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "1\n");
    assert_eq!(super::ok(&["take", &queue, "--timeout", "1s"]), "lost\n");

    // A usage error with ZK_CONNECT set: --connect is not shown as required.
    let out = Command::new(env!("CARGO_BIN_EXE_zkq"))
        .env("ZK_CONNECT", shared_connect_string())
        .args(["dead-letter", "requeue", "/jobs-dead"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("Usage: zkq dead-letter requeue --to <QUEUE> <DEAD_LETTER_PATH>\n"),
        "{stderr}"
    );
    assert!(!stderr.contains("--connect"), "{stderr}");
}

/// How long a refused connection may take to be reported: at once, but for
/// starting the process on a loaded machine.
const LOAD_MARGIN: Duration = Duration::from_secs(5);

#[test]
fn cli_fails_at_once_when_every_server_refuses_not_after_the_session_timeout() {
    // Ports nothing listens on: bound, then released.
    let free = || {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let connect = format!("127.0.0.1:{},127.0.0.1:{}", free(), free());
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_zkq"))
        .args(["--connect", &connect, "--session-timeout", "60s", "ls", "/q"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let elapsed = started.elapsed();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with(&format!(
            "zkq: cannot connect to {connect}: no zookeeper server reachable"
        )),
        "{stderr}"
    );
    for server in connect.split(',') {
        assert!(stderr.contains(&format!("{server}: connection refused")), "{stderr}");
    }
    assert!(
        elapsed < LOAD_MARGIN,
        "{elapsed:?}, bound {LOAD_MARGIN:?}, session timeout 60s"
    );
}

#[test]
fn cli_requeue_at_the_top_level_is_a_usage_error_naming_the_dead_letter_subcommand() {
    let hint = "zkq dead-letter requeue <DEAD_LETTER_PATH> --to <QUEUE>";
    let out = zkq(&["requeue", "/jobs-dead", "--to", "/jobs"]);
    assert_eq!(out.status.code(), Some(2), "a usage error");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("error: unrecognized subcommand 'requeue'\n"),
        "{stderr}"
    );
    assert!(stderr.contains(hint), "{stderr}");
    let out = zkq(&["--json", "requeue", "/jobs-dead"]);
    assert_eq!(out.status.code(), Some(2), "a usage error");
    let error: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(error["error"].as_str().unwrap().contains(hint), "{error}");
}
