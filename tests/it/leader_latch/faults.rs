//! Leadership under faults: a disconnected leader gives leadership up at
//! once, and one whose session expired never leads on its old node; at no
//! moment do two participants lead.

use std::time::Duration;

use zk_queue::testing::{FaultProxy, Request};
use zk_queue::{
    recipes::{LeaderLatch, Leadership},
    ZkClient,
};

use super::{join, WAIT};
use crate::support::server::{shared_connect_string, unique_path};
use crate::support::sightings::Sightings;
use crate::support::{self, client, eventually, short_session_client, Stop};

/// Checks, every millisecond until `stop` is set, that `a` and `b` never
/// lead at the same time, counting in `seen` the samples that saw each lead.
fn never_both(a: &LeaderLatch, b: &LeaderLatch, stop: &Stop, seen: &Sightings) {
    while !stop.stopped() {
        let (leads_a, leads_b) = (a.has_leadership(), b.has_leadership());
        assert!(!(leads_a && leads_b), "two participants lead at once");
        seen.saw(0, leads_a);
        seen.saw(1, leads_b);
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn a_disconnected_leader_gives_leadership_up_at_once_and_leads_again_in_the_same_session() {
    let proxy = FaultProxy::start(&shared_connect_string()).unwrap();
    let cut_off = support::proxied_client(&proxy);
    let other = client();
    let path = unique_path("latch-disconnected");
    let (a, heard_a) = join(&cut_off, &path, "a");
    let (b, _) = join(&other, &path, "b");
    assert!(a.await_leadership_timeout(WAIT).unwrap());
    let session = cut_off.session_id().unwrap();

    proxy.cut();
    proxy.blackhole();
    eventually(WAIT, "the leader knows it is disconnected", || {
        !cut_off.state().is_connected()
    });
    assert!(!a.has_leadership(), "a disconnected participant does not lead");
    // Its session outlives the partition: its node still comes first.
    assert!(!b.await_leadership_timeout(Duration::from_secs(2)).unwrap());
    proxy.heal();
    assert!(
        a.await_leadership_timeout(WAIT).unwrap(),
        "it leads again once reconnected"
    );
    assert_eq!(cut_off.session_id().unwrap(), session);
    assert_eq!(
        heard_a.after(3),
        vec![Leadership::Gained, Leadership::Lost, Leadership::Gained]
    );
}

#[test]
fn a_leader_whose_session_expires_never_leads_on_its_old_node_and_two_never_lead_at_once() {
    let proxy = FaultProxy::start(&shared_connect_string()).unwrap();
    let short: ZkClient = short_session_client(&proxy.connect_string());
    let other = client();
    let path = unique_path("latch-expired");
    let (a, heard_a) = join(&short, &path, "a");
    let (b, heard_b) = join(&other, &path, "b");
    assert!(a.await_leadership_timeout(WAIT).unwrap());
    let old_node = a.our_path().unwrap();
    let old_session = short.session_id().unwrap();

    let (stop, seen) = (Stop::new(), Sightings::new(2));
    std::thread::scope(|s| {
        let _stop = stop.on_drop();
        let checker = s.spawn(|| never_both(&a, &b, &stop, &seen));
        eventually(WAIT, "the checker saw a lead", || seen.counts()[0] > 0);
        // A partition longer than the 2 s session: the server expires it
        // and the other participant leads.
        proxy.blackhole();
        assert!(b.await_leadership_timeout(WAIT).unwrap(), "the other participant leads");
        proxy.heal();
        eventually(WAIT, "the expired participant joined again in a new session", || {
            short.session_id().is_ok_and(|id| id != old_session) && a.our_path().is_some_and(|node| node != old_node)
        });
        assert!(!a.has_leadership());
        assert!(b.has_leadership());
        eventually(WAIT, "the checker saw b lead", || seen.counts()[1] > 0);
        stop.stop();
        checker.join().unwrap()
    });
    assert_eq!(other.exists(&old_node).unwrap(), None, "the old node is gone");
    let ids: Vec<String> = b.participants().unwrap().into_iter().map(|p| p.id).collect();
    assert_eq!(ids, vec!["b", "a"]);
    assert_eq!(heard_a.after(2), vec![Leadership::Gained, Leadership::Lost]);
    assert_eq!(heard_b.after(1), vec![Leadership::Gained]);
}

#[test]
fn a_create_whose_reply_was_lost_leaves_one_node_of_the_participant() {
    let proxy = FaultProxy::start(&shared_connect_string()).unwrap();
    let lossy = support::proxied_client(&proxy);
    let path = unique_path("latch-lost-create");
    lossy.ensure_path(&path).unwrap();
    // The participant's create is applied, its reply lost; the retry
    // creates a second node.
    proxy.drop_reply_to(Request::Create);
    let latch = LeaderLatch::builder(&lossy, &path).id("only").build().unwrap();
    assert!(latch.await_leadership_timeout(WAIT).unwrap());
    let admin = client();
    eventually(WAIT, "one node is left", || {
        admin.get_children(&path).unwrap().0.len() == 1
    });
    let (children, _) = admin.get_children(&path).unwrap();
    assert_eq!(Some(format!("{path}/{}", children[0])), latch.our_path());
    assert!(!proxy.dropping_reply(), "the fault was injected");
}
