//! `zkq stats` flags a lock whose session no longer exists: the lock node
//! was read while its session lived, and the session closed before the
//! leader was asked (`dump`).
//!
//! The fault lands in that window: the connect string names, after the
//! real server, a listener that holds zkq's `srvr` (asked of every server
//! before the leader's `dump`) until the test has closed the lock's
//! session and seen its lock node go; then it answers nothing, as a server
//! that does not serve.

use std::io::Read;
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use zk_queue::client::CreateMode;

use super::ok;
use crate::support::server::{shared_connect_string, unique_path};
use crate::support::{client, eventually};

/// Starts a listener that drops every connection except a `srvr`, which it
/// reports on `asked` and holds until `release` says so (or is dropped).
fn holding_srvr() -> (u16, mpsc::Receiver<()>, mpsc::Sender<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (asked_tx, asked) = mpsc::channel();
    let (release, release_rx) = mpsc::channel::<()>();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
            let mut word = [0u8; 4];
            if stream.read_exact(&mut word).is_ok() && &word == b"srvr" {
                let _ = asked_tx.send(());
                let _ = release_rx.recv_timeout(Duration::from_secs(60));
                return;
            }
        }
    });
    (port, asked, release)
}

#[test]
fn cli_stats_flags_a_lock_whose_session_closed_after_the_lock_was_read() {
    let path = unique_path("cli-gone-session");
    let locks = format!("{path}-locks");
    ok(&["put", &path, "job"]);
    let zk = client();
    let item = zk.get_children(&path).unwrap().0.remove(0);
    zk.ensure_path(&locks).unwrap();
    let owner = client();
    let owner_session = owner.session_id().unwrap();
    let lock = format!("{locks}/{item}");
    owner.create(&lock, b"worker-1", CreateMode::Ephemeral).unwrap();

    let (port, asked, release) = holding_srvr();
    let connect = format!("{},127.0.0.1:{port}", shared_connect_string());
    let stats = Command::new(env!("CARGO_BIN_EXE_zkq"))
        .args(["--connect", &connect, "--session-timeout", "20s", "--json"])
        .args(["stats", &path, "--lock-path", &locks])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // zkq has read the locks and asks the servers: the session ends now.
    asked.recv_timeout(Duration::from_secs(60)).expect("zkq asks srvr");
    owner.close();
    eventually(Duration::from_secs(30), "the lock goes with its session", || {
        zk.exists(&lock).unwrap().is_none()
    });
    release.send(()).unwrap();

    let out = stats.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stats: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(stats["stale_locks"], 1, "{stats}");
    let detail = &stats["lock_details"][0];
    assert_eq!(detail["name"], item.as_str(), "{stats}");
    assert_eq!(detail["session"], format!("0x{owner_session:x}"), "{stats}");
    assert_eq!(detail["session_state"], "gone", "{stats}");
    assert_eq!(detail["stale"], serde_json::json!(["session gone"]), "{stats}");
}
