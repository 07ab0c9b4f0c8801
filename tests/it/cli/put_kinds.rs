//! `zkq put` refuses what the queue's kind would misorder, unless
//! `--force`; an empty queue takes any put.

use super::{children, json, ok, zkq};
use crate::support::client;
use crate::support::server::unique_path;

/// Asserts `zkq args` is refused with a message naming `path` and `why`,
/// and puts nothing.
fn refused(args: &[&str], path: &str, why: &str) {
    let before = children(&client(), path).len();
    let out = zkq(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
    assert_eq!(
        stderr,
        format!("zkq: refusing to put into {path}: {why} (--force to put anyway)\n"),
        "{args:?}"
    );
    assert_eq!(children(&client(), path).len(), before, "{args:?} put nothing");
}

#[test]
fn cli_put_refuses_a_plain_item_into_a_priority_queue_unless_forced() {
    let path = unique_path("cli-put-priority");
    ok(&["put", &path, "--priority", "4", "first"]);
    refused(
        &["put", &path, "plain"],
        &path,
        "it is a priority queue, whose consumers would take a plain item (no --priority) out of order",
    );
    refused(
        &["put", &path, "--delay-ms", "10", "later"],
        &path,
        "it is a priority queue, whose consumers would take a --delay-ms/--at item out of order",
    );
    ok(&["put", &path, "--priority", "1", "second"]);
    ok(&["put", &path, "--force", "plain"]);
    assert_eq!(children(&client(), &path).len(), 3);
}

#[test]
fn cli_put_refuses_a_priority_item_into_a_fifo_queue_unless_forced() {
    let path = unique_path("cli-put-fifo");
    ok(&["put", &path, "a"]);
    refused(
        &["put", &path, "--priority", "1", "b"],
        &path,
        "it is a FIFO queue (plain items), whose consumers would take a --priority item out of order",
    );
    refused(
        &["put", &path, "--classic", "b"],
        &path,
        "it holds curator items and this put writes classic ones, which its consumers skip",
    );
    assert_eq!(
        json(&["put", &path, "--force", "--priority", "1", "b"]),
        serde_json::json!({"put": 1})
    );
    assert_eq!(children(&client(), &path).len(), 2);
}

#[test]
fn cli_put_takes_any_kind_into_an_empty_queue_and_plain_items_into_a_delay_queue() {
    let path = unique_path("cli-put-empty");
    client().ensure_path(&path).unwrap();
    ok(&["put", &path, "--priority", "1", "first"]);
    let missing = unique_path("cli-put-missing");
    ok(&["put", &missing, "--id", "x", "first"]);
    // A delay queue's consumers take a plain item as due now.
    let delay = unique_path("cli-put-delay");
    ok(&["put", &delay, "--delay-ms", "60000", "later"]);
    ok(&["put", &delay, "now"]);
    assert_eq!(ok(&["take", &delay, "--timeout", "1s"]), "now\n");
}
