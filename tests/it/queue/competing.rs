//! Consumers competing for one queue spread their claims over it instead of
//! all reading and deleting (or locking) its head: the requests they spend
//! per item stay near what one consumer alone spends.

use zk_queue::{ClientStats, QueueBuilder, StringSerializer};

use super::{items, WAIT};
use crate::support::client;
use crate::support::queues::consumer;
use crate::support::recorder::Recorder;
use crate::support::server::unique_path;

const ITEMS: usize = 2_000;
const CONSUMERS: usize = 4;

fn total(stats: &ClientStats) -> u64 {
    stats.create
        + stats.delete
        + stats.exists
        + stats.get_data
        + stats.set_data
        + stats.get_children
        + stats.multi
        + stats.other
}

/// Fills a queue with `ITEMS` single-item nodes, lets `CONSUMERS` consumers
/// (each with its own client) drain it together, checks every item came
/// exactly once, and returns the consumers' requests per item.
fn requests_per_item_draining_together(name: &str, lock_safe: bool) -> f64 {
    let path = unique_path(name);
    let locks = unique_path(&format!("{name}-locks"));
    let producer_client = client();
    let producer = QueueBuilder::new(&producer_client, &path, StringSerializer)
        .build_queue()
        .unwrap();
    let expected = items("item-", ITEMS);
    for item in &expected {
        producer.put(item.clone()).unwrap();
    }
    assert!(producer.flush_timeout(WAIT), "the puts were not stored");

    let recorder = Recorder::new();
    let clients: Vec<_> = (0..CONSUMERS).map(|_| client()).collect();
    let before: u64 = clients.iter().map(|c| total(&c.stats())).sum();
    let queues: Vec<_> = clients
        .iter()
        .map(|c| {
            let builder = consumer(c, &path, &recorder);
            let builder = if lock_safe { builder.lock_path(&locks) } else { builder };
            builder.build_queue().unwrap()
        })
        .collect();
    let mut delivered = recorder.wait_for(ITEMS, WAIT);
    for queue in queues {
        queue.close();
    }
    let spent: u64 = clients.iter().map(|c| total(&c.stats())).sum::<u64>() - before;
    delivered.sort();
    let mut wanted = expected;
    wanted.sort();
    assert_eq!(delivered, wanted, "every item exactly once");
    spent as f64 / ITEMS as f64
}

#[test]
fn four_plain_consumers_draining_one_queue_spread_their_claims_instead_of_all_claiming_its_head() {
    let per_item = requests_per_item_draining_together("competing-plain", false);
    println!("{CONSUMERS} plain consumers: {per_item:.2} requests per item");
    // Alone: a read and a delete per item, and a listing now and then. All
    // claiming the head, they spent 7.8.
    assert!(per_item <= 3.0, "{per_item:.2} requests per item");
}

#[test]
fn four_lock_safe_consumers_draining_one_queue_spread_their_claims_instead_of_all_locking_its_head() {
    let per_item = requests_per_item_draining_together("competing-lock-safe", true);
    println!("{CONSUMERS} lock-safe consumers: {per_item:.2} requests per item");
    // Alone: a lock create, a read, a check of the lock and the fenced
    // multi. All locking the head, they spent 6.8.
    assert!(per_item <= 5.5, "{per_item:.2} requests per item");
}
