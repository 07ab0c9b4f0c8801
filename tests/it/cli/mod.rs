//! The `zkq` binary against the shared server: each test runs the built
//! binary on its own path and checks what it printed and what it left in
//! ZooKeeper.
//!
//! - `put_take`: `put` and `take` of every item kind, and `peek` at them.
//! - `put_kinds`, `put_targets`: what `put` refuses (a misordering kind, a
//!   node that is not a queue).
//! - `items`: the one shape items are printed in, times, attempts.
//! - `inspect`: `ls`, `stats` and `watch`.
//! - `purge`, `dead_letter`: deleting items, and the `dead-letter` subcommands.
//! - `locks`: `take` and `purge` beside a lock-safe consumer (`--lock-path`).
//! - `sharded`: `stats`, `peek` and `purge` of a sharded queue.
//! - `usage`: `ZK_CONNECT`, `--auth`, exit codes and one-line errors.
//! - `errors`: an error case for every subcommand.
//! - `recipes`: `recipe` on lock, semaphore, latch and barrier paths;
//!   `recipe_ensemble`: its session marks on an ensemble.

mod attempts;
mod dead_letter;
mod errors;
mod gone_session;
mod inspect;
mod items;
mod locks;
mod output;
mod purge;
mod put_kinds;
mod put_take;
mod put_targets;
mod recipe_ensemble;
mod recipes;
mod sharded;
mod top;
mod top_screen;
mod usage;
mod what_it_is;

use std::io::Write;
use std::process::{Command, Output, Stdio};

use serde_json::Value;
use zk_queue::ZkClient;

use crate::support::server::shared_connect_string;

/// A lock-safe pull consumer of `path` (locks under `locks`, a window of
/// one) and its receiver, holding the first item it was handed.
fn holding_the_first(
    zk: &ZkClient,
    path: &str,
    locks: &str,
) -> (
    zk_queue::DistributedQueue<String>,
    zk_queue::ItemReceiver<String>,
    zk_queue::Delivery<String>,
) {
    let (builder, receiver) = zk_queue::QueueBuilder::new(zk, path, zk_queue::StringSerializer)
        .lock_path(locks)
        .claim_window(1)
        .pull_consumer();
    let consumer = builder.build_queue().unwrap();
    let delivery = receiver
        .take_timeout(std::time::Duration::from_secs(30))
        .unwrap()
        .expect("an item");
    (consumer, receiver, delivery)
}

/// Runs `zkq --connect <shared> <args>` with `stdin` as its standard input.
fn zkq_with_stdin(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_zkq"))
        .arg("--connect")
        .arg(shared_connect_string())
        .args(args)
        .env_remove("ZK_CONNECT")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("zkq starts");
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

fn zkq(args: &[&str]) -> Output {
    zkq_with_stdin(args, "")
}

/// Runs zkq, asserts success and returns its stdout.
fn ok(args: &[&str]) -> String {
    let out = zkq(args);
    assert!(
        out.status.success(),
        "zkq {args:?} failed: {}\nstdout:\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Runs zkq with `--json` and parses its stdout.
fn json(args: &[&str]) -> Value {
    let mut with_json = vec!["--json"];
    with_json.extend_from_slice(args);
    let text = ok(&with_json);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("zkq {args:?} printed {text:?}: {e}"))
}

fn lines(text: &str) -> Vec<&str> {
    text.lines().collect()
}

fn children(client: &ZkClient, path: &str) -> Vec<String> {
    let mut names = client.get_children(path).unwrap().0;
    names.sort();
    names
}
