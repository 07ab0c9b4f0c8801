//! Batched requeues whose multi, or its reply, is lost.
//!
//! A lock-safe consumer's acknowledger sends the requeues of several failed
//! items in one multi (per item: check the lock, delete the item, create it
//! again, delete the lock). A multi whose reply is lost may have been
//! applied whole or not at all; the acknowledger sends it again in the same
//! session until it settles (a lock found gone after a lost reply: the item
//! gone too says the requeue went through). Either way each item is stored
//! once, delivered again once, and no lock is left.
//!
//! Here a window of items fails at once, after the first delivery was held
//! until the fault was set, so the first multis after it are requeues: the
//! first one's loss piles the other items' requeues up behind it, and they
//! go out together in the next (a slow link makes sure they all pile up).
//! The requeued items back off for seconds, so the consumer sends no lock
//! multi meanwhile.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender};
use zk_queue::client::CreateMode;
use zk_queue::testing::{FaultProxy, Request};
use zk_queue::{ConsumeError, DistributedQueue, ItemMeta, QueueBuilder, StringSerializer, ZkClient};

use super::WAIT;
use crate::support::server::{shared_connect_string, unique_path};
use crate::support::{eventually, frame, proxied_client, put_framed};

/// Items failing together: one window.
const ITEMS: usize = 10;

/// The delay each way between the consumer and the server while the items
/// fail.
const LINK: Duration = Duration::from_millis(200);

/// The children of `path`, sorted (none if it does not exist).
fn children(client: &ZkClient, path: &str) -> Vec<String> {
    let mut names = client.get_children(path).map(|(c, _)| c).unwrap_or_default();
    names.sort();
    names
}

/// A lock-safe consumer failing every item's first delivery; the very first
/// delivery waits for `gate` before it fails. Every delivery is told.
fn consumer(
    client: &ZkClient,
    path: &str,
    locks: &str,
    gate: Receiver<()>,
) -> (DistributedQueue<String>, Receiver<(String, ItemMeta)>) {
    let (seen, deliveries): (Sender<(String, ItemMeta)>, _) = crossbeam_channel::unbounded();
    let gated = AtomicBool::new(false);
    let queue = QueueBuilder::new(client, path, StringSerializer)
        .lock_path(locks)
        .redelivery_backoff(Duration::from_secs(4), Duration::from_secs(4))
        .consumer_with_meta(move |item: String, meta: &ItemMeta| -> Result<(), ConsumeError> {
            seen.send((item, meta.clone())).map_err(|e| e.to_string())?;
            if !gated.swap(true, Ordering::SeqCst) {
                gate.recv_timeout(WAIT).map_err(|e| e.to_string())?;
            }
            match meta.attempt() {
                1 => Err("failing the first delivery".into()),
                _ => Ok(()),
            }
        })
        .build_queue()
        .unwrap();
    (queue, deliveries)
}

/// Puts [`ITEMS`] items, lets the consumer hold the first delivery until
/// `fault` is set, then checks every item is requeued once, delivered again
/// once and consumed, with no node or lock left.
fn lost_requeue_batch_stores_each_item_once(name: &str, fault: impl FnOnce(&FaultProxy)) {
    let proxy = FaultProxy::start(&shared_connect_string()).unwrap();
    let client = proxied_client(&proxy);
    let direct = crate::support::client();
    let (path, locks) = (unique_path(name), unique_path(&format!("{name}-locks")));
    let values: Vec<String> = (0..ITEMS).map(|i| format!("job-{i:02}")).collect();
    put_framed(&direct, &path, &values);
    let originals = children(&direct, &path);

    let (open, gate) = crossbeam_channel::bounded(1);
    let (queue, deliveries) = consumer(&client, &path, &locks, gate);
    let next = || deliveries.recv_timeout(WAIT).expect("a delivery");
    let (first, first_meta) = next();
    assert_eq!(first, values[0]);
    eventually(WAIT, "a lease on every item (one window)", || {
        children(&direct, &locks).len() == ITEMS
    });
    fault(&proxy);
    // A slow link: the items fail while the first requeue is on its way, so
    // the others' requeues pile up behind it whatever the machine's load.
    proxy.set_delay(LINK);
    let before = client.stats().multi;
    open.send(()).unwrap();
    // Every requeue settled (each counted once, below) before any requeued
    // item comes due: the multis meanwhile are the requeues' and resends'.
    eventually(WAIT, "every item requeued", || queue.stats().requeued >= ITEMS as u64);
    proxy.set_delay(Duration::ZERO);
    let multis = client.stats().multi - before;
    eprintln!("{name}: {ITEMS} requeues settled with {multis} multis");
    assert!(
        multis <= (ITEMS / 2) as u64,
        "{multis} multis for {ITEMS} requeues: one each would be {ITEMS}, plus resends"
    );

    let mut seen = vec![(first, first_meta)];
    seen.extend((1..2 * ITEMS).map(|_| next()));
    assert!(!proxy.dropping_reply() && !proxy.dropping_request(), "the fault fired");
    let mut attempts: HashMap<&str, Vec<u32>> = HashMap::new();
    for (item, meta) in &seen {
        attempts.entry(item.as_str()).or_default().push(meta.attempt());
        if meta.attempt() == 2 {
            assert!(
                !originals.contains(&meta.name().to_owned()),
                "{item} from its requeued node"
            );
        }
    }
    assert_eq!(attempts.len(), ITEMS, "{attempts:?}");
    for (item, tries) in &attempts {
        assert_eq!(tries, &[1, 2], "{item}: requeued once: {attempts:?}");
    }
    eventually(WAIT, "the queue and its locks end empty", || {
        children(&direct, &path).is_empty() && children(&direct, &locks).is_empty()
    });
    // An item stored twice would come again before one put now.
    direct
        .create(
            &format!("{path}/queue-"),
            &frame(&[b"last"]),
            CreateMode::PersistentSequential,
        )
        .unwrap();
    let (item, meta) = next();
    assert_eq!((item.as_str(), meta.attempt()), ("last", 1), "no third delivery");
    let stats = queue.stats();
    assert_eq!(
        (stats.requeued, stats.lease_lost),
        (ITEMS as u64, 0),
        "each requeue counted once: {stats:?}"
    );
    queue.close();
}

#[test]
fn lost_replies_to_batched_requeue_multis_store_each_item_once() {
    // The first requeue multi and the next (the others' requeues, piled up
    // behind it): both applied, both unanswered.
    lost_requeue_batch_stores_each_item_once("requeue-batch-replies-lost", |proxy| {
        proxy.drop_replies_to(Request::Multi, 2)
    });
}

#[test]
fn a_batched_requeue_multi_that_never_reached_the_server_is_sent_again_with_the_others_once() {
    lost_requeue_batch_stores_each_item_once("requeue-batch-request-lost", |proxy| {
        proxy.drop_request_to(Request::Multi)
    });
}
