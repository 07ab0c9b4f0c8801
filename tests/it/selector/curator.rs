//! One election shared with Curator's `LeaderSelector` (the
//! `curator-selector` mode of the Java peer, with `autoRequeue`): the same
//! node names and order, so leadership alternates between Rust and Java
//! and never two lead at once by a shared ledger; a killed Java leader's
//! turn passes to Rust within its session timeout and a second; a Rust
//! leader partitioned past its session stops before Curator's leads.

use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use zk_queue::testing::FaultProxy;

use super::{selector, WAIT};
use crate::support::java::PeerProcess;
use crate::support::ledger::Ledger;
use crate::support::server::{shared_connect_string, unique_path};
use crate::support::{client, eventually, short_session_client, Bound};

/// How long each term lasts.
const HOLD: Duration = Duration::from_millis(20);

/// A Curator selector `id` on `path` leading `terms` times for `hold` each,
/// writing to `ledger`, with a session of `session`, once it is ready.
fn curator_selector(
    path: &str,
    id: &str,
    terms: usize,
    hold: Duration,
    session: Duration,
    ledger: &Ledger,
) -> PeerProcess {
    let peer = ledger
        .peer_command("curator-selector", path, terms, id, hold)
        .property("peer.sessionTimeoutMs", session.as_millis());
    crate::support::ledger::ready(peer, WAIT)
}

#[test]
fn leadership_alternates_between_rust_and_curator_and_never_two_lead_by_a_shared_ledger() {
    let path = unique_path("selector-curator-turns");
    let ledger = Arc::new(Ledger::new());
    let java = curator_selector(&path, "java", 10, HOLD, WAIT, &ledger);
    // Arranged, not left to how fast a JVM starts or requeues on a loaded
    // machine: Curator's selector is in line before ours join (its start
    // only queues its attempt), and ours stay in line until it has led its
    // ten terms, so every one of them is taken with ours waiting beside it.
    let admin = client();
    eventually(WAIT, "Curator's selector is in line", || {
        admin.get_children(&path).is_ok_and(|(line, _)| !line.is_empty())
    });
    let clients = [client(), client()];
    thread::scope(|s| {
        for (id, client) in ["rust-a", "rust-b"].iter().zip(&clients) {
            let (path, ledger, java) = (&path, &ledger, &java);
            s.spawn(move || {
                let (selector, _) = selector(client, path, id, HOLD, ledger);
                eventually(WAIT, "it led ten times", || selector.terms() >= 10);
                java.wait_for_stderr_line("closed", WAIT).unwrap();
                selector.close().unwrap();
            });
        }
    });
    java.wait().unwrap();
    let (entries, most) = ledger.check(1);
    assert!(entries >= 30 && most == 1, "{entries} terms");
    let languages: Vec<bool> = ledger.entries().iter().map(|e| e.starts_with("java")).collect();
    let switches = languages.windows(2).filter(|w| w[0] != w[1]).count();
    assert!(switches >= 4, "leadership moved between the languages {switches} times");
}

#[test]
fn curator_lists_our_participants_and_ours_lists_curator_s_with_their_ids() {
    let path = unique_path("selector-curator-ids");
    let ledger = Arc::new(Ledger::new());
    let client = client();
    let (ours, _) = selector(&client, &path, "rust", WAIT * 10, &ledger);
    eventually(WAIT, "ours leads", || ours.has_leadership());
    let java = curator_selector(&path, "java", 1, HOLD, WAIT, &ledger);
    eventually(WAIT, "both are in line", || ours.participants().unwrap().len() == 2);
    let listed: Vec<(String, bool)> = ours
        .participants()
        .unwrap()
        .into_iter()
        .map(|p| (p.id, p.is_leader))
        .collect();
    assert_eq!(listed, [("rust".to_owned(), true), ("java".to_owned(), false)]);
    for p in ours.participants().unwrap() {
        assert!(p.node.starts_with("_c_") && p.node.contains("-lock-"), "{}", p.node);
    }
    ours.close().unwrap();
    java.wait_for_stderr_line("leader 1", WAIT).unwrap();
    java.wait().unwrap();
    ledger.check(1);
}

#[test]
fn a_killed_curator_leader_s_turn_passes_to_ours_within_its_session_timeout() {
    let path = unique_path("selector-curator-killed");
    let ledger = Arc::new(Ledger::new());
    let session = Duration::from_secs(2);
    let java = curator_selector(&path, "java", 1, WAIT * 10, session, &ledger);
    java.wait_for_stderr_line("leader 1", WAIT).unwrap();
    let client = client();
    let (ours, terms) = selector(&client, &path, "rust", WAIT * 10, &ledger);
    eventually(WAIT, "ours is in line", || ours.participants().unwrap().len() == 2);
    assert!(!ours.has_leadership());
    let killed = Instant::now();
    drop(java);
    eventually(WAIT, "ours leads", || ours.has_leadership());
    ours.close().unwrap();
    let took = terms.all()[0].began.duration_since(killed);
    eprintln!("ours led {took:?} after the kill");
    Bound::of(session + Duration::from_secs(1)).check("ours leading after the kill", took);
}

#[test]
fn a_rust_leader_partitioned_past_its_session_stops_leading_before_a_curator_selector_leads() {
    let path = unique_path("selector-curator-outage");
    let ledger = Arc::new(Ledger::new());
    let proxy = FaultProxy::start(&shared_connect_string()).unwrap();
    let short = short_session_client(&proxy.connect_string());
    // Ours leads until its context reports the loss, writing `exit` then.
    let (ours, terms) = selector(&short, &path, "rust", WAIT * 10, &ledger);
    eventually(WAIT, "ours leads", || ours.has_leadership());
    let java = curator_selector(&path, "java", 1, HOLD, WAIT, &ledger);
    eventually(WAIT, "Curator's is in line", || ours.participants().unwrap().len() == 2);
    // A partition longer than our 2 s session: the server expires it and
    // Curator's selector leads.
    proxy.blackhole();
    java.wait_for_stderr_line("leader 1", WAIT).unwrap();
    java.wait().unwrap();
    let ours_ended = terms.all();
    assert_eq!(ours_ended.len(), 1, "our term ended");
    assert!(ours_ended[0].lost_at.is_some(), "told of the loss");
    proxy.heal();
    ours.close().unwrap();
    assert_eq!(ledger.check(1).1, 1, "never ours beside Curator's");
    assert_eq!(ledger.entries()[..2], ["rust.1", "java.1"]);
}
