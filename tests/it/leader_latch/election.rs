//! Who leads: the participant whose node comes first, until it leaves.

use std::time::Duration;

use zk_queue::{
    recipes::{LeaderLatch, Leadership},
    Error,
};

use super::{join, WAIT};
use crate::support::client;
use crate::support::eventually;
use crate::support::server::unique_path;

#[test]
fn the_first_participant_leads_and_leadership_moves_to_the_next_when_it_closes() {
    let path = unique_path("latch-order");
    let clients = [client(), client(), client()];
    let (a, heard_a) = join(&clients[0], &path, "a");
    assert!(a.await_leadership_timeout(WAIT).unwrap(), "the first participant leads");
    let (b, heard_b) = join(&clients[1], &path, "b");
    let (c, heard_c) = join(&clients[2], &path, "c");
    assert!(!b.await_leadership_timeout(Duration::from_millis(300)).unwrap());
    assert!(!c.has_leadership());

    a.close().unwrap();
    assert!(!a.has_leadership());
    assert!(
        b.await_leadership_timeout(WAIT).unwrap(),
        "the second participant leads next"
    );
    assert!(!c.has_leadership());
    b.close().unwrap();
    assert!(c.await_leadership_timeout(WAIT).unwrap());
    c.close().unwrap();

    assert_eq!(heard_a.after(2), vec![Leadership::Gained, Leadership::Lost]);
    assert_eq!(heard_b.after(2), vec![Leadership::Gained, Leadership::Lost]);
    assert_eq!(heard_c.after(2), vec![Leadership::Gained, Leadership::Lost]);
}

#[test]
fn participants_are_listed_with_their_ids_in_order_the_leader_first() {
    let path = unique_path("latch-participants");
    let clients = [client(), client()];
    let (a, _) = join(&clients[0], &path, "first");
    let (b, _) = join(&clients[1], &path, "second");
    let listed = b.participants().unwrap();
    let ids: Vec<(&str, bool)> = listed.iter().map(|p| (p.id.as_str(), p.is_leader)).collect();
    assert_eq!(ids, vec![("first", true), ("second", false)]);
    assert_eq!(b.leader().unwrap().map(|p| p.id), Some("first".to_owned()));
    // Curator's protected names.
    let ours = b.our_path().unwrap();
    let name = ours.rsplit('/').next().unwrap();
    assert!(name.starts_with("_c_") && name.contains("-latch-"), "{name}");
    assert_eq!(listed[1].node, name);
    drop(a);
    eventually(WAIT, "the second participant leads", || b.has_leadership());
}

#[test]
fn closing_deletes_the_node_and_a_closed_latch_refuses_to_wait() {
    let path = unique_path("latch-close");
    let client = client();
    let (latch, heard) = join(&client, &path, "only");
    assert!(latch.await_leadership_timeout(WAIT).unwrap());
    let node = latch.our_path().unwrap();
    latch.close().unwrap();
    assert_eq!(client.exists(&node).unwrap(), None, "its node is deleted");
    assert!(matches!(latch.await_leadership(), Err(Error::Closed)));
    assert!(matches!(latch.await_leadership_timeout(WAIT), Err(Error::Closed)));
    latch.close().unwrap();
    assert_eq!(heard.after(2), vec![Leadership::Gained, Leadership::Lost]);
}

#[test]
fn a_leader_whose_node_is_deleted_gives_leadership_up_and_joins_again_at_the_end() {
    let path = unique_path("latch-node-deleted");
    let clients = [client(), client(), client()];
    let (a, heard_a) = join(&clients[0], &path, "a");
    let (b, _) = join(&clients[1], &path, "b");
    assert!(a.await_leadership_timeout(WAIT).unwrap());
    let old = a.our_path().unwrap();
    clients[2].delete(&old, None).unwrap();
    assert!(b.await_leadership_timeout(WAIT).unwrap());
    eventually(WAIT, "the deleted participant joined again", || {
        a.our_path().is_some_and(|node| node != old)
    });
    assert!(!a.has_leadership());
    let ids: Vec<String> = b.participants().unwrap().into_iter().map(|p| p.id).collect();
    assert_eq!(ids, vec!["b", "a"]);
    assert_eq!(heard_a.after(2), vec![Leadership::Gained, Leadership::Lost]);
}

#[test]
fn a_listener_that_panics_is_logged_and_the_latch_keeps_working() {
    let path = unique_path("latch-panicking-listener");
    let clients = [client(), client()];
    let a = LeaderLatch::builder(&clients[0], &path)
        .listener(|_| panic!("a listener's bug"))
        .build()
        .unwrap();
    assert!(a.await_leadership_timeout(WAIT).unwrap());
    let (b, _) = join(&clients[1], &path, "b");
    a.close().unwrap();
    assert!(b.await_leadership_timeout(WAIT).unwrap());
}

#[test]
fn a_latch_at_the_root_or_an_invalid_path_is_refused() {
    let client = client();
    assert!(matches!(
        LeaderLatch::builder(&client, "/").build(),
        Err(Error::InvalidPath { .. })
    ));
    assert!(matches!(
        LeaderLatch::builder(&client, "no-slash").build(),
        Err(Error::InvalidPath { .. })
    ));
}
