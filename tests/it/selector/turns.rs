//! Taking turns: the participants lead one at a time, each again and again
//! with auto-requeue; `close` hands leadership over; a panicking closure is
//! reported and its selector stays in the election; without auto-requeue a
//! selector reports it left and leads no more until requeued; tokens grow
//! across the election's container reaped.

use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use zk_queue::recipes::{LeaderSelector, SelectorState, TermEnd};
use zk_queue::testing::{FaultProxy, TestingServer};
use zk_queue::Error;

use super::{never_two, selector, WAIT};
use crate::support::ledger::Ledger;
use crate::support::server::unique_path;
use crate::support::sightings::Sightings;
use crate::support::{client, client_of, eventually, logs, nodes, Stop};

/// How long each term lasts when nothing ends it sooner.
const HOLD: Duration = Duration::from_millis(20);

#[test]
fn rust_selectors_with_auto_requeue_take_turns_never_two_lead_and_each_leads_several_times() {
    let path = unique_path("selector-turns");
    let ledger = Arc::new(Ledger::new());
    let clients = [client(), client(), client()];
    let selectors: Vec<_> = ["a", "b", "c"]
        .iter()
        .zip(&clients)
        .map(|(id, client)| selector(client, &path, id, HOLD, &ledger))
        .collect();
    let (stop, seen) = (Stop::new(), Sightings::new(selectors.len()));
    let all: Vec<&LeaderSelector> = selectors.iter().map(|(s, _)| s).collect();
    thread::scope(|s| {
        let _stop = stop.on_drop();
        let sampler = s.spawn(|| never_two(&all, &stop, &seen));
        eventually(WAIT, "each led five times", || {
            selectors.iter().all(|(s, _)| s.terms() >= 5)
        });
        eventually(WAIT, "the checker saw each lead", || seen.each_seen());
        stop.stop();
        sampler.join().unwrap();
    });
    for (selector, _) in &selectors {
        selector.close().unwrap();
        assert_eq!(selector.state(), SelectorState::Closed);
        assert_eq!(selector.panics(), 0, "{:?}", selector.last_panic());
    }
    let (entries, most) = ledger.check(1);
    assert!(entries >= 15 && most == 1, "{entries} terms");
    // Tokens only grow from term to term, across participants.
    let mut terms: Vec<_> = selectors.iter().flat_map(|(_, t)| t.all()).collect();
    terms.sort_by_key(|t| t.began);
    assert!(terms.windows(2).all(|w| w[0].token < w[1].token), "{terms:?}");
    assert!(nodes(&client(), &path).is_empty(), "every node is gone");
}

#[test]
fn close_while_leading_tells_the_closure_releases_leadership_and_joins() {
    let path = unique_path("selector-close");
    let ledger = Arc::new(Ledger::new());
    let (a_client, b_client) = (client(), client());
    let (a, a_terms) = selector(&a_client, &path, "a", WAIT * 10, &ledger);
    eventually(WAIT, "a leads", || a.has_leadership());
    let (b, b_terms) = selector(&b_client, &path, "b", WAIT * 10, &ledger);
    eventually(WAIT, "b is in line", || b.participants().unwrap().len() == 2);
    assert_eq!(b.leader().unwrap().map(|p| p.id), Some("a".to_owned()));
    a.close().unwrap();
    // Joined: the closure returned, after its context reported the loss.
    let ended = a_terms.all();
    assert_eq!(ended.len(), 1);
    assert!(ended[0].lost_at.is_some(), "the closure was told to stop");
    assert_eq!(a.state(), SelectorState::Closed);
    assert!(!a.has_leadership());
    eventually(WAIT, "b leads", || b.has_leadership());
    let ids: Vec<String> = b.participants().unwrap().into_iter().map(|p| p.id).collect();
    assert_eq!(ids, ["b"]);
    a.close().unwrap();
    b.close().unwrap();
    assert_eq!(b_terms.all().len(), 1);
    ledger.check(1);
}

#[test]
fn close_while_queued_leaves_the_line_and_joins() {
    let path = unique_path("selector-close-queued");
    let ledger = Arc::new(Ledger::new());
    let (a_client, b_client) = (client(), client());
    let (a, _) = selector(&a_client, &path, "a", WAIT * 10, &ledger);
    eventually(WAIT, "a leads", || a.has_leadership());
    let (b, b_terms) = selector(&b_client, &path, "b", HOLD, &ledger);
    eventually(WAIT, "b is in line", || nodes(&a_client, &path).len() == 2);
    assert_eq!(b.state(), SelectorState::Queued);
    // Bounded, so a wait in line that close cannot end fails here.
    b.close_timeout(WAIT).unwrap();
    assert_eq!(nodes(&a_client, &path).len(), 1, "b's node is gone");
    assert!(b_terms.all().is_empty());
    a.close().unwrap();
}

#[test]
fn a_panicking_closure_is_reported_releases_leadership_and_stays_in_the_election_with_auto_requeue() {
    let path = unique_path("selector-panic");
    logs::start();
    let ledger = Arc::new(Ledger::new());
    let (a_client, b_client) = (client(), client());
    let mut n = 0;
    let a = LeaderSelector::builder(&a_client, &path, move |_| {
        n += 1;
        if n == 1 {
            panic!("the leader's bug");
        }
    })
    .id("a")
    .build()
    .unwrap();
    eventually(WAIT, "a panicked once", || a.panics() == 1);
    assert_eq!(a.last_panic().as_deref(), Some("the leader's bug"));
    let errors: Vec<_> = logs::lines_with(&path)
        .into_iter()
        .filter(|l| l.level == log::Level::Error)
        .collect();
    assert!(
        errors.len() == 1 && errors[0].message.contains("the leader's bug"),
        "the panic is logged at error: {errors:?}"
    );
    let (b, b_terms) = selector(&b_client, &path, "b", HOLD, &ledger);
    eventually(WAIT, "b led after the panic", || !b_terms.all().is_empty());
    eventually(WAIT, "a led again after its panic", || a.terms() >= 3);
    assert_eq!(a.panics(), 1);
    assert!(!a.state().has_left(), "{:?}", a.state());
    a.close().unwrap();
    b.close().unwrap();
}

#[test]
fn a_panicking_closure_without_auto_requeue_reports_that_it_left() {
    let path = unique_path("selector-panic-left");
    let client = client();
    let a = LeaderSelector::builder(&client, &path, |_| panic!("on purpose"))
        .auto_requeue(false)
        .build()
        .unwrap();
    eventually(WAIT, "a left", || a.state().has_left());
    assert_eq!(a.state(), SelectorState::Left(TermEnd::Panicked));
    assert_eq!((a.terms(), a.panics()), (1, 1));
    assert!(nodes(&client, &path).is_empty(), "leadership was released");
}

#[test]
fn without_auto_requeue_a_selector_leads_once_reports_it_left_and_leads_again_only_when_requeued() {
    let path = unique_path("selector-once");
    let ledger = Arc::new(Ledger::new());
    let (a_client, b_client) = (client(), client());
    let (lead, a_terms) = super::ledger_lead(&ledger, "a", HOLD);
    let a = LeaderSelector::builder(&a_client, &path, lead)
        .id("a")
        .auto_requeue(false)
        .build()
        .unwrap();
    eventually(WAIT, "a left", || a.state().has_left());
    assert_eq!(a.state(), SelectorState::Left(TermEnd::Returned));
    let (b, b_terms) = selector(&b_client, &path, "b", HOLD, &ledger);
    eventually(WAIT, "b led three times", || b_terms.all().len() >= 3);
    assert_eq!(a.terms(), 1, "a led once");
    let ids: Vec<String> = b.participants().unwrap().into_iter().map(|p| p.id).collect();
    assert!(!ids.contains(&"a".to_owned()), "a is out of the line: {ids:?}");
    assert!(a.requeue(), "a selector that left requeues");
    eventually(WAIT, "a leads again once requeued", || a_terms.all().len() == 2);
    eventually(WAIT, "a left again", || a.state().has_left());
    assert_eq!(a.terms(), 2);
    a.close().unwrap();
    assert!(!a.requeue(), "a closed selector does not requeue");
    b.close().unwrap();
    ledger.check(1);
}

#[test]
fn a_selector_at_the_root_or_an_invalid_path_is_refused() {
    let client = client();
    assert!(matches!(
        LeaderSelector::builder(&client, "/", |_| {}).build(),
        Err(Error::InvalidPath { .. })
    ));
    assert!(matches!(
        LeaderSelector::builder(&client, "no-slash", |_| {}).build(),
        Err(Error::InvalidPath { .. })
    ));
    assert!(matches!(
        LeaderSelector::builder(&client, "/x", |_| {}).acl(vec![]).build(),
        Err(Error::InvalidArgument(_))
    ));
}

#[test]
fn each_term_begins_after_the_previous_leader_s_closure_returned_and_the_hand_off_is_measured() {
    let path = unique_path("selector-hand-off");
    let ledger = Arc::new(Ledger::new());
    let clients = [client(), client()];
    let selectors: Vec<_> = ["a", "b"]
        .iter()
        .zip(&clients)
        .map(|(id, client)| selector(client, &path, id, Duration::ZERO, &ledger))
        .collect();
    eventually(WAIT, "each led twenty times", || {
        selectors.iter().all(|(s, _)| s.terms() >= 20)
    });
    // A term that begins once the closing began may be told at once that
    // it ends (its selector is closing): only the terms before count.
    let closing = Instant::now();
    for (selector, _) in &selectors {
        selector.close().unwrap();
        assert_eq!(selector.panics(), 0, "{:?}", selector.last_panic());
    }
    let mut terms: Vec<_> = selectors
        .iter()
        .flat_map(|(_, t)| t.all())
        .filter(|t| t.began < closing)
        .collect();
    terms.sort_by_key(|t| t.began);
    assert!(terms.iter().all(|t| t.led), "each term began leading: {terms:?}");
    let mut hand_offs: Vec<Duration> = terms
        .windows(2)
        .map(|w| {
            assert!(
                w[1].began >= w[0].ended,
                "a term began before the previous one ended: {w:?}"
            );
            w[1].began - w[0].ended
        })
        .collect();
    hand_offs.sort();
    let at = |q: f64| hand_offs[((hand_offs.len() - 1) as f64 * q) as usize];
    eprintln!(
        "hand-off from a leader's return to the next leader's start over {} terms: p50 {:?}, p90 {:?}, max {:?}",
        hand_offs.len(),
        at(0.5),
        at(0.9),
        at(1.0)
    );
    ledger.check(1);
}

#[test]
fn a_closure_that_closes_its_own_selector_ends_it_without_waiting_for_itself() {
    let path = unique_path("selector-self-close");
    let client = client();
    let own: Arc<std::sync::OnceLock<Arc<LeaderSelector>>> = Arc::default();
    let reach = Arc::clone(&own);
    let selector = Arc::new(
        LeaderSelector::builder(&client, &path, move |leader| {
            assert!(leader.is_leader());
            if let Some(selector) = reach.get() {
                selector.close().unwrap();
                assert!(!leader.is_leader(), "closing ended leadership");
            }
        })
        .auto_requeue(true)
        .build()
        .unwrap(),
    );
    own.set(Arc::clone(&selector)).unwrap();
    eventually(WAIT, "the selector closed itself", || {
        selector.state() == SelectorState::Closed
    });
    assert_eq!(selector.panics(), 0, "{:?}", selector.last_panic());
    eventually(WAIT, "its node is gone", || nodes(&client, &path).is_empty());
    selector.close_timeout(WAIT).unwrap();
}

#[test]
fn tokens_grow_across_the_election_s_container_reaped_and_created_again() {
    let server = TestingServer::builder()
        .container_check_interval(Duration::from_millis(100))
        .start()
        .unwrap();
    let client = client_of(&server.connect_string());
    let (led, terms) = crossbeam_channel::unbounded();
    let mut seen = Vec::new();
    for round in 0..3 {
        let led = led.clone();
        let selector = LeaderSelector::builder(&client, "/election", move |leader| {
            led.send((leader.token(), leader.node().to_owned())).unwrap();
        })
        .auto_requeue(false)
        .build()
        .unwrap();
        let (token, node) = terms.recv_timeout(WAIT).unwrap();
        assert!(
            node.ends_with("-lock-0000000000"),
            "round {round}: the sequences started over: {node}"
        );
        seen.push(token);
        selector.close().unwrap();
        // Empty, the election's container is reaped by the server.
        eventually(WAIT, "the election's container is reaped", || {
            client.exists("/election").unwrap().is_none()
        });
    }
    assert!(seen.windows(2).all(|w| w[0] < w[1]), "tokens only grow: {seen:?}");
}

#[test]
fn a_leader_whose_closure_returned_no_longer_says_it_leads_once_the_next_leads() {
    // The leader's link is slow: its delete reaches the server, and the
    // next participant leads, a whole delay before the delete's answer
    // gets back to the leader. It must have stopped saying it leads before
    // it sent the delete, not when the answer comes.
    let proxy = FaultProxy::start(&crate::support::server::shared_connect_string()).unwrap();
    let path = unique_path("selector-ends-before-release");
    let (slow, fast) = (crate::support::proxied_client(&proxy), client());
    let (release, released) = crossbeam_channel::bounded::<()>(0);
    let a = LeaderSelector::builder(&slow, &path, move |context| {
        // Leads until the test says so (or leadership is lost).
        let lost = context.lost();
        crossbeam_channel::select! {
            recv(released) -> _ => {}
            recv(lost) -> _ => {}
        }
    })
    .id("a")
    .build()
    .unwrap();
    eventually(WAIT, "a leads", || a.has_leadership());
    let b = LeaderSelector::builder(&fast, &path, |context| {
        let _ = context.lost().recv();
    })
    .id("b")
    .build()
    .unwrap();
    eventually(WAIT, "b waits in line", || nodes(&client(), &path).len() == 2);
    proxy.set_delay(Duration::from_millis(500));
    drop(release);
    eventually(WAIT, "b leads", || b.has_leadership());
    assert!(!a.has_leadership(), "a still says it leads while b leads");
    proxy.set_delay(Duration::ZERO);
    b.close().unwrap();
    a.close().unwrap();
}

#[test]
fn a_closure_that_asks_to_close_after_its_term_leads_once_then_the_selector_closes_and_another_leads() {
    let path = unique_path("selector-close-after-term");
    let ledger = Arc::new(Ledger::new());
    let (a_client, b_client) = (client(), client());
    let a = LeaderSelector::builder(&a_client, &path, |leader| {
        leader.close_after_term();
        // Asking changes nothing of the term: it still leads.
        assert!(leader.is_leader(), "asking to close after the term ended it");
    })
    .id("a")
    .auto_requeue(true)
    .build()
    .unwrap();
    eventually(WAIT, "a closed after its term", || a.state() == SelectorState::Closed);
    assert_eq!(a.terms(), 1, "a led once, though it requeues by itself");
    assert_eq!(a.panics(), 0, "{:?}", a.last_panic());
    let (b, b_terms) = selector(&b_client, &path, "b", HOLD, &ledger);
    eventually(WAIT, "b led twice", || b_terms.all().len() >= 2);
    let ids: Vec<String> = b.participants().unwrap().into_iter().map(|p| p.id).collect();
    assert!(!ids.contains(&"a".to_owned()), "a is out of the line: {ids:?}");
    assert_eq!(a.terms(), 1, "a never led again");
    a.close_timeout(WAIT).unwrap();
    b.close().unwrap();
}
