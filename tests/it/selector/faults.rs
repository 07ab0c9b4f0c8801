//! Leadership under faults: a Rust leader whose session expires is told
//! before the next participant leads, which leads within the session
//! timeout and a second; a lost leadership without auto-requeue is
//! reported as leaving the election, and with it the selector leads again;
//! a disconnected leader is told at once and leads again in its session; a
//! closure that overruns its loss is reported; never two lead through a
//! cut, a partition past the session and a server restart mid-term;
//! `close_timeout` returns by its deadline with the server down or stalled.

use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use zk_queue::recipes::{LeaderSelector, SelectorState, TermEnd};
use zk_queue::testing::{FaultProxy, Request, TestingServer};
use zk_queue::ZkClient;

use super::{ledger_lead, never_two, selector, WAIT};
use crate::support::ledger::Ledger;
use crate::support::server::{shared_connect_string, unique_path};
use crate::support::sightings::Sightings;
use crate::support::{
    client, client_of, contention, eventually, logs, nodes, short_session_client, within, Bound, Stop,
};

/// The session timeout of `short_session_client`.
const SESSION: Duration = Duration::from_secs(2);

#[test]
fn a_leader_whose_session_expires_is_told_before_the_next_leads_within_the_session_timeout() {
    let proxy = FaultProxy::start(&shared_connect_string()).unwrap();
    let path = unique_path("selector-expired");
    let ledger = Arc::new(Ledger::new());
    let (short, other) = (short_session_client(&proxy.connect_string()), client());
    let (a, a_terms) = selector(&short, &path, "a", WAIT * 10, &ledger);
    eventually(WAIT, "a leads", || a.has_leadership());
    let (b, b_terms) = selector(&other, &path, "b", WAIT * 10, &ledger);
    eventually(WAIT, "b is in line", || nodes(&other, &path).len() == 2);
    let old_session = short.session_id().unwrap();

    let (stop, seen) = (Stop::new(), Sightings::new(2));
    let cut_at = thread::scope(|s| {
        let _stop = stop.on_drop();
        let sampler = s.spawn(|| never_two(&[&a, &b], &stop, &seen));
        eventually(WAIT, "the checker saw a lead", || seen.counts()[0] > 0);
        // A partition longer than the session: the server expires it.
        let cut_at = Instant::now();
        proxy.blackhole();
        eventually(WAIT, "b leads", || b.has_leadership());
        eventually(WAIT, "the checker saw b lead", || seen.counts()[1] > 0);
        stop.stop();
        sampler.join().unwrap();
        cut_at
    });
    let old = a_terms.all();
    assert_eq!(old.len(), 1, "a's term ended");
    let lost_at = old[0].lost_at.expect("a's context reported the loss");
    assert_eq!(b.terms(), 1);
    proxy.heal();
    eventually(WAIT, "a's client has a new session", || {
        short.session_id().is_ok_and(|id| id != old_session) && short.state().is_connected()
    });
    assert!(!a.has_leadership());
    eventually(WAIT, "a is back in line", || nodes(&other, &path).len() == 2);
    b.close().unwrap();
    let b_term = b_terms.all()[0];
    assert!(lost_at < b_term.began, "a heard of its loss before b led");
    assert!(old[0].ended < b_term.began, "a's closure returned before b led");
    let took = b_term.began.duration_since(cut_at);
    eprintln!("b led {took:?} after a's partition began");
    Bound::of(SESSION + Duration::from_secs(1)).check("b leading after a's partition began", took);
    assert!(b_term.token > old[0].token, "b's token is larger");
    eventually(WAIT, "a leads again after b closed", || a.has_leadership());
    a.close().unwrap();
    ledger.check(1);
}

/// Builds a selector `a` leading until its loss, deletes its node from
/// another client while `b` waits, and returns both once `b` led. (A node
/// deleted by someone else tells its leader and the next participant at
/// the same moment: their closures may overlap, so no ledger is checked.)
fn lose_node(auto_requeue: bool, path: &str) -> (LeaderSelector, LeaderSelector, Arc<Ledger>) {
    let ledger = Arc::new(Ledger::new());
    let (a_client, b_client, admin) = (client(), client(), client());
    let (lead, _) = ledger_lead(&ledger, "a", WAIT * 10);
    let a = LeaderSelector::builder(&a_client, path, lead)
        .id("a")
        .auto_requeue(auto_requeue)
        .build()
        .unwrap();
    eventually(WAIT, "a leads", || a.has_leadership());
    let (b, b_terms) = selector(&b_client, path, "b", Duration::from_millis(20), &ledger);
    eventually(WAIT, "b is in line", || nodes(&admin, path).len() == 2);
    let leader = a.leader().unwrap().expect("a leader");
    assert_eq!(leader.id, "a");
    admin.delete(&format!("{path}/{}", leader.node), None).unwrap();
    eventually(WAIT, "b led", || !b_terms.all().is_empty());
    (a, b, ledger)
}

#[test]
fn without_auto_requeue_a_lost_leadership_is_reported_as_leaving_and_it_never_leads_again() {
    let path = unique_path("selector-lost-once");
    let (a, b, ledger) = lose_node(false, &path);
    eventually(WAIT, "a reports it left", || a.state().has_left());
    assert_eq!(a.state(), SelectorState::Left(TermEnd::Lost));
    // b takes turn after turn alone: a is out of the line.
    let led = b.terms();
    eventually(WAIT, "b led three more times", || b.terms() >= led + 3);
    assert_eq!(a.terms(), 1, "a never led again");
    let ids: Vec<String> = b.participants().unwrap().into_iter().map(|p| p.id).collect();
    assert!(ids.iter().all(|id| id == "b"), "{ids:?}");
    b.close().unwrap();
    a.close().unwrap();
    assert_eq!(ledger.entries().iter().filter(|e| e.starts_with('a')).count(), 1);
}

#[test]
fn with_auto_requeue_a_lost_leadership_puts_the_selector_back_in_line_and_it_leads_again() {
    let path = unique_path("selector-lost-requeue");
    let (a, b, ledger) = lose_node(true, &path);
    eventually(WAIT, "a leads again", || a.terms() >= 2);
    assert!(!a.state().has_left());
    b.close().unwrap();
    a.close().unwrap();
    assert!(ledger.entries().iter().filter(|e| e.starts_with('a')).count() >= 2);
}

#[test]
fn a_closure_that_overruns_its_loss_is_reported_as_overrunning_until_it_returns() {
    let path = unique_path("selector-overrun");
    logs::start();
    let (a_client, admin) = (client(), client());
    let (release, returned) = crossbeam_channel::bounded::<()>(0);
    let a = LeaderSelector::builder(&a_client, &path, move |_| {
        // Ignores its context: returns only when the test says so.
        let _ = returned.recv();
    })
    .overrun_grace(Duration::from_millis(100))
    .build()
    .unwrap();
    eventually(WAIT, "a leads", || a.state() == SelectorState::Leading);
    let node = a.leader().unwrap().expect("a leader").node;
    admin.delete(&format!("{path}/{node}"), None).unwrap();
    eventually(WAIT, "a overruns", || a.state() == SelectorState::Overrunning);
    assert!(!a.has_leadership());
    let warned = |what: &str| {
        logs::lines_with(&path)
            .iter()
            .any(|l| l.level == log::Level::Warn && l.message.contains(what))
    };
    eventually(WAIT, "the overrun is warned of after the grace", || {
        warned("still runs")
    });
    drop(release);
    eventually(WAIT, "a is back in line", || a.state() != SelectorState::Overrunning);
    eventually(WAIT, "the overrun's length is logged", || {
        warned("returned") && a.state() != SelectorState::Overrunning
    });
    a.close().unwrap();
}

#[test]
fn a_disconnected_leader_is_told_at_once_and_leads_again_after_reconnecting_in_the_same_session() {
    let proxy = FaultProxy::start(&shared_connect_string()).unwrap();
    let path = unique_path("selector-disconnected");
    let ledger = Arc::new(Ledger::new());
    let cut_off = crate::support::proxied_client(&proxy);
    let (a, a_terms) = selector(&cut_off, &path, "a", WAIT * 10, &ledger);
    eventually(WAIT, "a leads", || a.has_leadership());
    let session = cut_off.session_id().unwrap();
    proxy.cut();
    eventually(WAIT, "a's term ended", || a_terms.all().len() == 1);
    assert!(a_terms.all()[0].lost_at.is_some(), "the context reported the loss");
    eventually(WAIT, "a leads again", || a.has_leadership());
    assert_eq!(cut_off.session_id().unwrap(), session, "the session lived on");
    assert_eq!(a.terms(), 2);
    a.close().unwrap();
    assert!(nodes(&client(), &path).is_empty(), "every node is gone");
    ledger.check(1);
}

#[test]
fn under_a_cut_a_partition_past_the_session_and_a_server_restart_mid_term_never_two_lead() {
    let mut server = TestingServer::start().unwrap();
    let cast = contention::Cast::new(&server, 2, 2);
    let ledger = Arc::new(Ledger::new());
    let selectors: Vec<LeaderSelector> = cast
        .clients
        .iter()
        .zip(&cast.names)
        .enumerate()
        .map(|(n, (client, id))| selector(client, "/election", id, cast.hold(n), &ledger).0)
        .collect();
    let all: Vec<&LeaderSelector> = selectors.iter().collect();
    let admin = client_of(&server.connect_string());
    let (stop, seen) = (Stop::new(), Sightings::new(all.len()));
    let seen = thread::scope(|s| {
        let _stop = stop.on_drop();
        let checker = s.spawn(|| never_two(&all, &stop, &seen));
        contention::land_faults(
            &mut server,
            &cast,
            |n| selectors[n].has_leadership(),
            |_| nodes(&admin, "/election").len() >= 2,
            |n| selectors[n].terms(),
        );
        eventually(WAIT, "the checker saw each lead", || seen.each_seen());
        stop.stop();
        checker.join().unwrap()
    });
    let terms: Vec<u64> = selectors.iter().map(|s| s.terms()).collect();
    eprintln!("terms {terms:?}, samples leading {seen:?}");
    for selector in &selectors {
        selector.close().unwrap();
    }
    let (entries, most) = ledger.check(1);
    assert_eq!(most, 1, "{entries} terms");
    eventually(WAIT, "no node is left", || nodes(&admin, "/election").is_empty());
}

/// The deadline `close_timeout` is given below.
const CLOSE_DEADLINE: Duration = Duration::from_secs(2);

/// How late `close_timeout` may return: it waits for the selector's own
/// thread, never for the server, so only the time to notice.
const LATE_CLOSING: Duration = Duration::from_millis(200);

/// Closes a leading and a queued selector (of `clients`) with
/// `close_timeout` once `fault` landed; each returns by its deadline,
/// closed or reporting that its thread still runs.
fn close_through_a_fault(clients: [&ZkClient; 2], admin: &ZkClient, path: &str, fault: impl FnOnce()) {
    let ledger = Arc::new(Ledger::new());
    let (leader, _) = selector(clients[0], path, "leader", WAIT * 10, &ledger);
    eventually(WAIT, "it leads", || leader.has_leadership());
    let (queued, _) = selector(clients[1], path, "queued", WAIT * 10, &ledger);
    eventually(WAIT, "the other is in line", || nodes(admin, path).len() == 2);
    fault();
    for selector in [&leader, &queued] {
        let result = within(
            &format!("close_timeout({CLOSE_DEADLINE:?}) of {}", selector.id()),
            Bound::past(CLOSE_DEADLINE, LATE_CLOSING),
            || selector.close_timeout(CLOSE_DEADLINE),
        );
        eprintln!("{}: {result:?}", selector.id());
        assert!(
            matches!(result, Ok(()) | Err(zk_queue::Error::Timeout { .. })),
            "{result:?}"
        );
        assert!(!selector.has_leadership());
    }
}

#[test]
fn close_timeout_returns_by_its_deadline_with_the_server_down_and_no_node_is_left() {
    let mut server = TestingServer::start().unwrap();
    let connect = server.connect_string();
    let clients = [client_of(&connect), client_of(&connect)];
    let admin = client_of(&connect);
    close_through_a_fault([&clients[0], &clients[1]], &admin, "/election", || {
        server.stop().unwrap()
    });
    server.restart().unwrap();
    eventually(WAIT, "no node is left", || nodes(&admin, "/election").is_empty());
}

#[test]
fn close_timeout_returns_by_its_deadline_with_the_server_stalled_and_no_node_is_left() {
    let proxies = [(); 2].map(|()| FaultProxy::start(&shared_connect_string()).unwrap());
    let path = unique_path("selector-close-stalled");
    let clients = proxies.each_ref().map(crate::support::proxied_client);
    let admin = client();
    close_through_a_fault([&clients[0], &clients[1]], &admin, &path, || {
        proxies.iter().for_each(FaultProxy::blackhole)
    });
    proxies.iter().for_each(FaultProxy::heal);
    eventually(WAIT, "no node is left", || nodes(&admin, &path).is_empty());
}

#[test]
fn a_create_whose_reply_was_lost_leaves_one_node_of_the_selector() {
    let proxy = FaultProxy::start(&shared_connect_string()).unwrap();
    let lossy = crate::support::proxied_client(&proxy);
    let path = unique_path("selector-lost-create");
    let admin = client();
    admin.ensure_path(&path).unwrap();
    // The selector's create is applied, its reply lost.
    proxy.drop_reply_to(Request::Create);
    let (led, leading) = crossbeam_channel::unbounded();
    let selector = LeaderSelector::builder(&lossy, &path, move |leader| {
        led.send(leader.node().to_owned()).unwrap();
        let _ = leader.lost().recv();
    })
    .build()
    .unwrap();
    let node = leading.recv_timeout(WAIT).expect("it leads");
    assert!(!proxy.dropping_reply(), "the fault was injected");
    let ours = node.rsplit('/').next().unwrap().to_owned();
    assert_eq!(nodes(&admin, &path), [ours], "one node, the one it leads by");
    selector.close().unwrap();
    eventually(WAIT, "no node is left", || nodes(&admin, &path).is_empty());
}
