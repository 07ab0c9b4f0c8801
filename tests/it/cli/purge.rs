//! `zkq purge`: deletes a queue's items, keeps foreign children, and asks
//! first.

use zk_queue::client::CreateMode;

use super::{children, json, ok, zkq_with_stdin};
use crate::support::server::unique_path;
use crate::support::{client, put_framed};

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
fn cli_purge_deletes_in_chunks_beyond_one_batch() {
    let path = unique_path("cli-purge-big");
    let zk = client();
    put_framed(&zk, &path, &vec!["x".to_owned(); 2_500]);
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
