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
