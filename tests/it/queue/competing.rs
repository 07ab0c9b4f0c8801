//! The requests a consumer spends per item: alone, a plain consumer a
//! multi-read and a multi of deletes per window, a lock-safe one a multi of
//! lock creates and a multi of fenced acknowledges per window, with a
//! window's locks read back with its items in one multi-read and an
//! acknowledge batch's lock checks in another; competing for one queue,
//! consumers spread their claims over it instead of all reading and
//! deleting (or locking) its head, so they stay near what one spends.

use zk_queue::{QueueBuilder, StringSerializer};

use super::{items, WAIT};
use crate::support::client;
use crate::support::queues::consumers_on;
use crate::support::recorder::Recorder;
use crate::support::server::unique_path;

const ITEMS: usize = 2_000;
const CONSUMERS: usize = 4;

/// Fills a queue with `ITEMS` single-item nodes, lets `consumers` consumers
/// (each with its own client) drain it together, checks every item came
/// exactly once, and returns the consumers' requests per item.
fn requests_per_item_draining_together(name: &str, consumers: usize, lock_safe: bool) -> f64 {
    let path = unique_path(name);
    let locks = unique_path(&format!("{name}-locks"));
    let producer_client = client();
    let producer = QueueBuilder::new(&producer_client, &path, StringSerializer)
        .put_in_background(true)
        .build_queue()
        .unwrap();
    let expected = items("item-", ITEMS);
    for item in &expected {
        producer.put(item.clone()).unwrap();
    }
    assert!(producer.flush_timeout(WAIT), "the puts were not stored");

    let recorder = Recorder::new();
    let clients: Vec<_> = (0..consumers).map(|_| client()).collect();
    let before: u64 = clients.iter().map(|c| c.stats().total()).sum();
    let queues = consumers_on(&clients, &path, &recorder, lock_safe.then_some(locks.as_str()));
    let mut delivered = recorder.wait_for(ITEMS, WAIT);
    for queue in queues {
        queue.close();
    }
    let spent: u64 = clients.iter().map(|c| c.stats().total()).sum::<u64>() - before;
    delivered.sort();
    let mut wanted = expected;
    wanted.sort();
    assert_eq!(delivered, wanted, "every item exactly once");
    spent as f64 / ITEMS as f64
}

#[test]
fn a_lone_plain_consumer_spends_one_multi_read_and_one_multi_of_deletes_per_window() {
    let per_item = requests_per_item_draining_together("lone-plain", 1, false);
    println!("1 plain consumer: {per_item:.2} requests per item");
    // Two requests per 64-item window make 0.03, and listings add some; a
    // delete per item would make it at least 1 (2 with a read per item).
    assert!(per_item <= 0.25, "{per_item:.2} requests per item");
}

#[test]
fn a_lone_lock_safe_consumer_spends_a_multi_of_locks_and_a_multi_of_acknowledges_per_window() {
    let per_item = requests_per_item_draining_together("lone-lock-safe", 1, true);
    println!("1 lock-safe consumer: {per_item:.2} requests per item");
    // A few requests per window make 0.21 to 0.23 (0.24 to 0.27 when a
    // window's locks and items were read back in a request each; the
    // window test in lock_windows.rs counts that read exactly); a lock
    // create per item would make it at least 1, with a multi per item as
    // well 2 (4 with a read and a lock check per item).
    assert!(per_item <= 0.5, "{per_item:.2} requests per item");
}

#[test]
fn four_plain_consumers_draining_one_queue_spread_their_claims_instead_of_all_claiming_its_head() {
    let per_item = requests_per_item_draining_together("competing-plain", CONSUMERS, false);
    println!("{CONSUMERS} plain consumers: {per_item:.2} requests per item");
    // Alone: well under 1. All claiming the head, they spent 3.2 when a
    // delete was a request per item (7.8 when a read was one too).
    assert!(per_item <= 2.0, "{per_item:.2} requests per item");
}

#[test]
fn four_lock_safe_consumers_draining_one_queue_spread_their_claims_instead_of_all_locking_its_head() {
    let per_item = requests_per_item_draining_together("competing-lock-safe", CONSUMERS, true);
    println!("{CONSUMERS} lock-safe consumers: {per_item:.2} requests per item");
    // Alone: 0.22 or so; together 0.57 to 0.77 (0.80 to 0.86 when a
    // window's locks and items were read back in a request each). With a
    // lock create and a multi per item they spent 3.2 (3.9 all locking the
    // head, 6.8 when a read and a lock check were a request per item each).
    assert!(per_item <= 1.5, "{per_item:.2} requests per item");
}
