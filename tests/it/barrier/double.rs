//! `DoubleBarrier` among Rust members: a round lets its members in together
//! and out together; a timed-out member no longer counts; a `ready` left by
//! a round that ended without `leave` lets no lone member through; a lost
//! create reply leaves one member node.

use std::thread;
use std::time::{Duration, Instant};

use zk_queue::ZkClient;

use super::{member, nodes, one_round, Ledger, Round, WAIT};
use crate::support::server::unique_path;
use crate::support::{client, eventually, Bound};

/// The deadline of the member that gives up on entering.
const QUIT_DEADLINE: Duration = Duration::from_secs(1);

/// How late a timed enter may return with the server up (its node deleted
/// on the way out).
const LATE_WHEN_UP: Duration = Duration::from_millis(200);

/// How long the first members wait for the last before it comes.
const EARLY: Duration = Duration::from_millis(800);

#[test]
fn members_enter_together_once_all_came_and_leave_together_once_all_left() {
    let path = unique_path("double-barrier-round");
    let ledger = Ledger::new();
    let admin = client();
    thread::scope(|s| {
        // The members stay inside for different times, so leaving waits for
        // the slowest.
        for (n, id) in ["m0", "m1", "m2"].into_iter().enumerate() {
            let (path, ledger) = (&path, &ledger);
            s.spawn(move || {
                one_round(
                    &member(&client(), path, 4, id),
                    id,
                    Duration::from_millis(300 * n as u64),
                    ledger,
                )
            });
        }
        eventually(WAIT, "three members are waiting", || nodes(&admin, &path).len() == 3);
        thread::sleep(EARLY);
        assert!(
            ledger.steps("entered").is_empty(),
            "no one enters before the fourth comes"
        );
        let (path, ledger) = (&path, &ledger);
        s.spawn(move || one_round(&member(&client(), path, 4, "m3"), "m3", Duration::ZERO, ledger));
    });
    ledger.check_round(4);
    assert!(nodes(&admin, &path).is_empty(), "no member node and no ready left");
}

#[test]
fn a_timed_out_enter_deletes_its_node_so_the_others_are_not_let_in_one_short() {
    let path = unique_path("double-barrier-timeout");
    let admin = client();
    let quitter_client = client();
    let quitter = member(&quitter_client, &path, 3, "quitter");
    thread::scope(|s| {
        let stayer = s.spawn(|| member(&client(), &path, 3, "stayer").enter_timeout(Duration::from_secs(4)));
        eventually(WAIT, "the stayer is waiting", || nodes(&admin, &path) == ["stayer"]);
        let started = Instant::now();
        assert!(!quitter.enter_timeout(QUIT_DEADLINE).unwrap(), "two of three: not in");
        Bound::past(QUIT_DEADLINE, LATE_WHEN_UP).check("a timed-out enter", started.elapsed());
        assert_eq!(nodes(&admin, &path), ["stayer"], "the quitter's node is gone");
        // With the quitter's node left behind (as Curator leaves it), this
        // third member would let the stayer in.
        let third = member(&client(), &path, 3, "third");
        assert!(
            !third.enter_timeout(Duration::from_secs(1)).unwrap(),
            "two of three: not in"
        );
        assert!(!stayer.join().unwrap().unwrap(), "the stayer was not let in");
    });
    assert!(nodes(&admin, &path).is_empty(), "no node and no ready");
    // The quitter takes part in a full round later.
    let ledger = Ledger::new();
    thread::scope(|s| {
        s.spawn(|| one_round(&quitter, "quitter", Duration::ZERO, &ledger));
        for id in ["b", "c"] {
            let (path, ledger) = (&path, &ledger);
            s.spawn(move || one_round(&member(&client(), path, 3, id), id, Duration::ZERO, ledger));
        }
    });
    ledger.check_round(3);
}

#[test]
fn a_lone_member_does_not_pass_the_next_round_after_one_that_ended_without_leave() {
    let path = unique_path("double-barrier-stale");
    let admin = client();
    // A round whose members go away inside, without leaving.
    let gone: Vec<ZkClient> = (0..2).map(|_| client()).collect();
    thread::scope(|s| {
        for (n, c) in gone.iter().enumerate() {
            let path = &path;
            s.spawn(move || member(c, path, 2, &format!("old-{n}")).enter().unwrap());
        }
    });
    for c in &gone {
        c.close();
    }
    // A close waits a second at most for the server to end its session;
    // the members' nodes go with their sessions.
    eventually(WAIT, "the members' nodes go with their sessions", || {
        nodes(&admin, &path).len() == 1
    });
    assert_eq!(
        nodes(&admin, &path),
        ["ready"],
        "Curator's leftover: ready outlives its round"
    );
    let lone = member(&client(), &path, 2, "lone");
    assert!(
        !lone.enter_timeout(Duration::from_secs(1)).unwrap(),
        "one of two: not in"
    );
    assert!(
        nodes(&admin, &path).is_empty(),
        "the stale ready is deleted, and the lone member's node"
    );
    // The next full round goes through.
    let ledger = Ledger::new();
    thread::scope(|s| {
        s.spawn(|| one_round(&lone, "lone", Duration::ZERO, &ledger));
        let (path, ledger) = (&path, &ledger);
        s.spawn(move || one_round(&member(&client(), path, 2, "next"), "next", Duration::ZERO, ledger));
    });
    ledger.check_round(2);
}

#[test]
fn a_late_member_joins_a_round_that_is_in() {
    let path = unique_path("double-barrier-late");
    let admin = client();
    let (a, b) = (member(&client(), &path, 2, "a"), member(&client(), &path, 2, "b"));
    thread::scope(|s| {
        s.spawn(|| a.enter().unwrap());
        b.enter().unwrap();
    });
    // As Curator's: a round that is in lets a late member in at once.
    let late = member(&client(), &path, 2, "late");
    assert!(late.enter_timeout(Duration::ZERO).unwrap());
    assert_eq!(nodes(&admin, &path), ["a", "b", "late", "ready"]);
    thread::scope(|s| {
        s.spawn(|| a.leave().unwrap());
        s.spawn(|| b.leave().unwrap());
        late.leave().unwrap();
    });
    assert!(nodes(&admin, &path).is_empty());
}

#[test]
fn a_member_whose_create_reply_was_lost_enters_with_one_node() {
    let proxy = zk_queue::testing::FaultProxy::start(&crate::support::server::shared_connect_string()).unwrap();
    let lossy = crate::support::proxied_client(&proxy);
    let path = unique_path("double-barrier-lost-create");
    let admin = client();
    admin.ensure_path(&path).unwrap();
    let only = member(&lossy, &path, 1, "only");
    // The member node's create is applied, its reply lost.
    proxy.drop_reply_to(zk_queue::testing::Request::Create);
    assert!(only.enter_timeout(WAIT).unwrap(), "one of one: in");
    assert!(!proxy.dropping_reply(), "the fault was injected");
    assert_eq!(nodes(&admin, &path), ["only", "ready"]);
    only.leave().unwrap();
    assert!(nodes(&admin, &path).is_empty(), "no node and no ready left");
}
