//! One election shared with Curator's `LeaderLatch` (the `curator-latch`
//! mode of the Java peer): the same node names and order, so each side
//! waits behind the other's leader, and leadership moves across languages
//! when the leader closes or its process dies.

use std::time::{Duration, Instant};

use zk_queue::recipes::Leadership;

use super::{join, WAIT};
use crate::support::eventually;
use crate::support::java::PeerCommand;
use crate::support::server::{shared_connect_string, unique_path};
use crate::support::{client, Bound};

/// The session timeout of the Curator participants.
const CURATOR_SESSION: Duration = Duration::from_secs(4);

/// A Curator participant with id `id` on `path` that holds its latch for
/// `hold` (then closes it and exits), with a [`CURATOR_SESSION`].
fn curator_participant(path: &str, id: &str, hold: Duration) -> PeerCommand {
    PeerCommand::new(
        "curator-latch",
        &shared_connect_string(),
        path,
        hold.as_millis() as usize,
    )
    .prefix(id)
    .property("peer.sessionTimeoutMs", CURATOR_SESSION.as_millis())
    .timeout(hold + WAIT)
}

#[test]
fn ours_waits_behind_a_curator_leader_and_leads_once_its_process_is_killed() {
    let path = unique_path("latch-curator-first");
    let java = curator_participant(&path, "java", Duration::from_secs(120))
        .spawn()
        .unwrap();
    java.wait_for_stderr_line("leader 1", WAIT).unwrap();

    let client = client();
    let (ours, heard) = join(&client, &path, "rust");
    let ids: Vec<(String, bool)> = ours
        .participants()
        .unwrap()
        .into_iter()
        .map(|p| (p.id, p.is_leader))
        .collect();
    assert_eq!(ids, vec![("java".to_owned(), true), ("rust".to_owned(), false)]);
    assert!(!ours.await_leadership_timeout(Duration::from_secs(1)).unwrap());

    // Killed, it cannot close its latch: its node goes when the server
    // expires its session, and ours leads within that session's timeout
    // and a second.
    let killed = Instant::now();
    drop(java); // SIGKILL
    assert!(ours.await_leadership_timeout(WAIT).unwrap());
    let took = killed.elapsed();
    eprintln!("ours led {took:?} after the kill");
    Bound::of(CURATOR_SESSION + Duration::from_secs(1)).check("leading after the kill", took);
    assert_eq!(heard.after(1), vec![Leadership::Gained]);
    assert_eq!(ours.leader().unwrap().map(|p| p.id), Some("rust".to_owned()));
}

#[test]
fn a_curator_latch_waits_behind_ours_and_leads_once_ours_closes() {
    let path = unique_path("latch-rust-first");
    let client = client();
    let (ours, _) = join(&client, &path, "rust");
    assert!(ours.await_leadership_timeout(WAIT).unwrap());

    let java = curator_participant(&path, "java", Duration::from_secs(120))
        .spawn()
        .unwrap();
    java.wait_for_stderr_line("joined", WAIT).unwrap();
    eventually(WAIT, "both are listed", || ours.participants().unwrap().len() == 2);
    let ids: Vec<String> = ours.participants().unwrap().into_iter().map(|p| p.id).collect();
    assert_eq!(ids, vec!["rust", "java"]);
    assert!(ours.has_leadership());
    // Curator sees ours first too: it does not lead while ours does.
    assert!(java.wait_for_stderr_line("leader 1", Duration::from_secs(1)).is_err());

    ours.close().unwrap();
    java.wait_for_stderr_line("leader 1", WAIT).unwrap();
    assert!(!ours.has_leadership());
}
