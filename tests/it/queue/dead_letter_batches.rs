//! `DeadLetters::requeue_to` in batches: dead letters read with multi-reads
//! and moved many to a multi, in order; a letter changed by another client
//! meanwhile skipped while the others of its multi move; a multi whose reply
//! (or request) is lost settled before anything else is sent, so nothing
//! is moved twice.

use std::thread;
use std::time::{Duration, Instant};

use zk_queue::inspect::{decode_item, Layout};
use zk_queue::testing::{FaultProxy, Request};
use zk_queue::{admin::DeadLetters, ZkClient};

use super::WAIT;
use crate::support::server::{shared_connect_string, unique_path};
use crate::support::{client, eventually, frame, proxied_client, put_framed};

/// Dead letters in one multi: 64 operations, a create and a delete each.
const PER_MULTI: usize = 32;

/// Sets aside `n` plain dead letters under `dead`, in order, and returns
/// their records.
fn set_aside(client: &ZkClient, dead: &str, n: usize) -> Vec<String> {
    let values: Vec<String> = (0..n).map(|i| format!("letter-{i:04}")).collect();
    put_framed(client, dead, &values);
    values
}

/// The records of the items under `path`, in their nodes' order.
fn records(client: &ZkClient, path: &str) -> Vec<String> {
    let mut names = client.get_children(path).map(|(c, _)| c).unwrap_or_default();
    names.sort();
    names
        .iter()
        .map(|name| {
            let (data, _) = client.get_data(&format!("{path}/{name}")).unwrap();
            let mut item = decode_item(Layout::Curator, &data).unwrap();
            String::from_utf8(item.records.remove(0)).unwrap()
        })
        .collect()
}

#[test]
fn three_hundred_dead_letters_are_requeued_in_ten_multis_in_order_each_once() {
    let (dead, path) = (unique_path("dl-batch-dead"), unique_path("dl-batch"));
    let direct = client();
    let values = set_aside(&direct, &dead, 300);
    let requeuer = client();
    let before = requeuer.stats();
    let started = Instant::now();
    let moved = DeadLetters::new(&requeuer, &dead).unwrap().requeue_to(&path).unwrap();
    let took = started.elapsed();
    let spent = requeuer.stats();
    let (multis, reads) = (spent.multi - before.multi, spent.get_data - before.get_data);
    println!(
        "300 dead letters requeued in {took:?}: {multis} multis, {reads} reads, {} requests",
        spent.total() - before.total()
    );
    assert_eq!((moved.requeued, moved.skipped), (300, 0));
    assert_eq!(records(&direct, &path), values, "every letter once, in order");
    assert!(records(&direct, &dead).is_empty(), "no dead letter left");
    // 300 letters, 32 to a multi; 64 nodes to a multi-read.
    assert!(multis <= 300_u64.div_ceil(PER_MULTI as u64), "{multis} multis");
    assert!(reads <= 300_u64.div_ceil(64), "{reads} reads");
}

/// How long every chunk through the proxy takes each way: a multi is
/// answered no sooner than twice this after it was sent, the load margin
/// within which the test changes a letter between the read and the move.
const LINK: Duration = Duration::from_millis(500);

#[test]
fn a_letter_changed_between_the_read_and_the_move_is_skipped_and_the_rest_of_its_multi_moves() {
    let (dead, path) = (unique_path("dl-changed-dead"), unique_path("dl-changed"));
    let direct = client();
    let values = set_aside(&direct, &dead, 2 * PER_MULTI);
    let mut letters = direct.get_children(&dead).unwrap().0;
    letters.sort();
    // In the second multi, which is sent only after the first was answered.
    let changed = format!("{dead}/{}", letters[PER_MULTI + 5]);

    let proxy = FaultProxy::start(&shared_connect_string()).unwrap();
    let requeuer = proxied_client(&proxy);
    proxy.set_delay(LINK);
    let before = requeuer.stats();
    let handle = DeadLetters::new(&requeuer, &dead).unwrap();
    let target = path.clone();
    let moving = thread::spawn(move || handle.requeue_to(&target));
    // The first multi applied: every letter was read; the second multi
    // reaches the server no sooner than 2 × LINK after.
    eventually(WAIT, "the first multi applied", || {
        direct.get_children(&path).is_ok_and(|(c, _)| !c.is_empty())
    });
    direct
        .set_data(&changed, &frame(&[b"changed"]), None)
        .expect("changed before its multi arrived (load margin: 2 x LINK)");
    let moved = moving.join().unwrap().unwrap();
    let multis = requeuer.stats().multi - before.multi;

    assert_eq!((moved.requeued, moved.skipped), (2 * PER_MULTI - 1, 1));
    let mut wanted = values;
    wanted.remove(PER_MULTI + 5);
    assert_eq!(records(&direct, &path), wanted, "the others moved, in order");
    assert_eq!(records(&direct, &dead), ["changed"], "the changed letter stays");
    // Two multis, and the second once more without the changed letter.
    assert_eq!(multis, 3, "{multis} multis");
}

/// Requeues `n` dead letters through a proxy on which `fault` was set, and
/// checks each moved exactly once, in order, with the counts right.
fn requeue_through_a_fault(name: &str, n: usize, fault: impl FnOnce(&FaultProxy)) -> FaultProxy {
    let (dead, path) = (unique_path(&format!("{name}-dead")), unique_path(name));
    let direct = client();
    let values = set_aside(&direct, &dead, n);
    let proxy = FaultProxy::start(&shared_connect_string()).unwrap();
    let requeuer = proxied_client(&proxy);
    fault(&proxy);
    let moved = DeadLetters::new(&requeuer, &dead).unwrap().requeue_to(&path).unwrap();
    assert_eq!((moved.requeued, moved.skipped), (n, 0), "each counted once, as moved");
    assert_eq!(
        records(&direct, &path),
        values,
        "every letter once, in order: none moved twice"
    );
    assert!(records(&direct, &dead).is_empty(), "no dead letter left");
    proxy
}

#[test]
fn a_requeue_multi_whose_reply_is_lost_is_found_applied_and_nothing_moves_twice() {
    // Three multis: the first one's reply is lost after it was applied.
    let proxy = requeue_through_a_fault("dl-reply-lost", 2 * PER_MULTI + 3, |proxy| {
        proxy.drop_reply_to(Request::Multi)
    });
    assert!(!proxy.dropping_reply(), "a requeue multi's reply was dropped");
}

#[test]
fn a_requeue_multi_lost_on_the_way_is_found_unapplied_and_sent_again() {
    let proxy = requeue_through_a_fault("dl-request-lost", 2 * PER_MULTI + 3, |proxy| {
        proxy.drop_request_to(Request::Multi)
    });
    assert!(!proxy.dropping_request(), "a requeue multi was dropped");
}
