//! One round of a double barrier shared with Curator's
//! `DistributedDoubleBarrier` (the `curator-double-barrier` mode of the
//! Java peer): Rust and Curator members are let in together by the last
//! one to come, and out together by the last one to leave.

use std::thread;
use std::time::Duration;

use super::{member, nodes, one_round, Ledger, Round, WAIT};
use crate::support::client;
use crate::support::eventually;
use crate::support::java::PeerProcess;
use crate::support::server::unique_path;

/// A Curator member `id` of a barrier of `members` at `path`, staying
/// inside for `hold`, writing to `ledger`, once it is connected.
fn curator_member(path: &str, members: usize, id: &str, hold: Duration, ledger: &Ledger) -> PeerProcess {
    ledger.peer("curator-double-barrier", path, members, id, hold, WAIT)
}

/// Runs one round of four members, two in each language, the last to come
/// being `last` (`java` or `rust`).
fn shared_round(last: &str) {
    let path = unique_path("double-barrier-curator");
    let ledger = Ledger::new();
    let admin = client();
    let mut java = vec![curator_member(&path, 4, "java-a", Duration::from_millis(400), &ledger)];
    thread::scope(|s| {
        let (p, l) = (&path, &ledger);
        s.spawn(move || one_round(&member(&client(), p, 4, "rust-a"), "rust-a", Duration::ZERO, l));
        if last == "java" {
            s.spawn(move || {
                one_round(
                    &member(&client(), p, 4, "rust-b"),
                    "rust-b",
                    Duration::from_millis(200),
                    l,
                )
            });
        } else {
            java.push(curator_member(p, 4, "java-b", Duration::from_millis(200), l));
        }
        eventually(WAIT, "three members are waiting", || nodes(&admin, p).len() == 3);
        thread::sleep(Duration::from_millis(800));
        assert!(
            ledger.steps("entered").is_empty(),
            "no one enters before the fourth comes"
        );
        if last == "java" {
            java.push(curator_member(p, 4, "java-b", Duration::ZERO, l));
        } else {
            s.spawn(move || one_round(&member(&client(), p, 4, "rust-b"), "rust-b", Duration::ZERO, l));
        }
    });
    for peer in java {
        peer.wait().unwrap();
    }
    ledger.check_round(4);
    assert!(nodes(&admin, &path).is_empty(), "no member node and no ready left");
}

#[test]
fn a_curator_member_coming_last_lets_rust_and_curator_members_in_and_out_together() {
    shared_round("java");
}

#[test]
fn a_rust_member_coming_last_lets_rust_and_curator_members_in_and_out_together() {
    shared_round("rust");
}
