//! A lock-safe consumer's requeues and dead-letter moves batched into
//! multis, as its acknowledgements are: a window of failed items goes back
//! to the queue (or to the dead-letter path) in far fewer multis than items,
//! each item once, with its attempt count and story; a lock changed under
//! one item of a batch fences that item alone.

use std::collections::HashMap;
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender};
use zk_queue::inspect::{decode_item, Layout};
use zk_queue::{ConsumeError, DistributedQueue, ItemMeta, QueueBuilder, StringSerializer, ZkClient};

use super::WAIT;
use crate::support::server::unique_path;
use crate::support::{client, eventually, put_framed};

/// The children of `path`, sorted (none if it does not exist).
fn children(client: &ZkClient, path: &str) -> Vec<String> {
    let mut names = client.get_children(path).map(|(c, _)| c).unwrap_or_default();
    names.sort();
    names
}

/// Puts `n` items `<prefix>-0000`, … under `path` in one pipelined batch,
/// in order; returns their values.
fn put_items(client: &ZkClient, path: &str, prefix: &str, n: usize) -> Vec<String> {
    let values: Vec<String> = (0..n).map(|i| format!("{prefix}-{i:04}")).collect();
    put_framed(client, path, &values);
    values
}

/// A lock-safe consumer that fails every item's first `failures`
/// deliveries, at once, and consumes the next; it tells every delivery.
fn failing_consumer(
    client: &ZkClient,
    path: &str,
    locks: &str,
    failures: u32,
) -> (QueueBuilder<String>, Receiver<(String, ItemMeta)>) {
    let (seen, deliveries) = crossbeam_channel::unbounded();
    let builder = QueueBuilder::new(client, path, StringSerializer)
        .lock_path(locks)
        .redelivery_backoff(Duration::ZERO, Duration::ZERO)
        .consumer_with_meta(move |item: String, meta: &ItemMeta| -> Result<(), ConsumeError> {
            let attempt = meta.attempt();
            seen.send((item, meta.clone())).map_err(|e| e.to_string())?;
            match attempt <= failures {
                true => Err(format!("failing attempt {attempt}").into()),
                false => Ok(()),
            }
        });
    (builder, deliveries)
}

/// Receives `n` deliveries.
fn receive(deliveries: &Receiver<(String, ItemMeta)>, n: usize) -> Vec<(String, ItemMeta)> {
    (0..n)
        .map(|i| {
            deliveries
                .recv_timeout(WAIT)
                .unwrap_or_else(|_| panic!("{i} of {n} deliveries"))
        })
        .collect()
}

/// The multis `client` sent while `run` ran.
fn multis_during<R>(client: &ZkClient, run: impl FnOnce() -> R) -> (u64, R) {
    let before = client.stats().multi;
    let result = run();
    (client.stats().multi - before, result)
}

#[test]
fn a_window_of_failed_items_is_requeued_in_few_multis_each_once_with_its_attempt() {
    // Three windows of the default 64.
    const ITEMS: usize = 192;
    let (path, locks) = (unique_path("requeue-batches"), unique_path("requeue-batches-locks"));
    let direct = client();
    let values = put_items(&direct, &path, "job", ITEMS);
    let originals = children(&direct, &path);
    let consumer_client = client();
    let (multis, (queue, deliveries)) = multis_during(&consumer_client, || {
        let (builder, deliveries) = failing_consumer(&consumer_client, &path, &locks, 1);
        let queue = builder.build_queue().unwrap();
        let deliveries = receive(&deliveries, 2 * ITEMS);
        eventually(WAIT, "the queue and its locks end empty", || {
            children(&direct, &path).is_empty() && children(&direct, &locks).is_empty()
        });
        (queue, deliveries)
    });

    // Each item twice: failed on its first delivery from its own node, then
    // consumed from the node its requeue created, which records the failure.
    let mut by_item: HashMap<&str, Vec<&ItemMeta>> = HashMap::new();
    for (item, meta) in &deliveries {
        by_item.entry(item.as_str()).or_default().push(meta);
    }
    assert_eq!(by_item.len(), ITEMS, "every item delivered");
    for (i, value) in values.iter().enumerate() {
        let metas = &by_item[value.as_str()];
        let attempts: Vec<u32> = metas.iter().map(|m| m.attempt()).collect();
        assert_eq!(attempts, [1, 2], "{value}: requeued once, its failure counted");
        assert_eq!(metas[0].name(), originals[i], "{value}: first from its own node");
        assert!(
            !originals.contains(&metas[1].name().to_owned()),
            "{value}: then from its requeued node, not {}",
            metas[1].name()
        );
    }
    let stats = queue.stats();
    assert_eq!(
        (stats.requeued, stats.consumer_errors, stats.consumed, stats.lease_lost),
        (ITEMS as u64, ITEMS as u64, ITEMS as u64, 0),
        "{stats:?}"
    );
    // One multi per requeue would be 192 multis before any lock or
    // acknowledgement. Batched, a multi takes up to 16 requeues, 21
    // acknowledgements or 64 locks: about 40 multis in all here. Load
    // shrinks the batches (a batch holds what the worker failed while the
    // one before was in flight), so the bound is a third of the items.
    eprintln!("{ITEMS} items requeued and consumed with {multis} multis");
    assert!(
        multis <= (ITEMS / 3) as u64,
        "{multis} multis for {ITEMS} items failed once, then consumed"
    );
    queue.close();
}

#[test]
fn a_window_of_items_failing_their_last_attempt_moves_to_the_dead_letter_path_in_few_multis_with_their_story() {
    const ITEMS: usize = 128;
    let path = unique_path("dead-letter-batches");
    let (locks, dead) = (format!("{path}-locks"), format!("{path}-dead"));
    let direct = client();
    let values = put_items(&direct, &path, "doomed", ITEMS);
    let consumer_client = client();
    let (multis, queue) = multis_during(&consumer_client, || {
        let (builder, deliveries) = failing_consumer(&consumer_client, &path, &locks, u32::MAX);
        let queue = builder.max_attempts(1).dead_letter_path(&dead).build_queue().unwrap();
        let deliveries = receive(&deliveries, ITEMS);
        assert!(deliveries.iter().all(|(_, meta)| meta.attempt() == 1));
        eventually(WAIT, "every item moved and every lock gone", || {
            children(&direct, &dead).len() >= ITEMS
                && children(&direct, &path).is_empty()
                && children(&direct, &locks).is_empty()
        });
        queue
    });

    // Each once, in the order they failed, with its story.
    let letters = children(&direct, &dead);
    assert_eq!(letters.len(), ITEMS, "each item moved once");
    for (value, letter) in values.iter().zip(&letters) {
        let (data, _) = direct.get_data(&format!("{dead}/{letter}")).unwrap();
        let item = decode_item(Layout::Curator, &data).unwrap();
        assert_eq!(item.records, [value.as_bytes().to_vec()], "{letter}");
        assert_eq!(item.attempts, 1, "{letter}");
        let death = item.death.expect("the dead letter's story");
        assert_eq!(
            (death.reason.as_str(), death.source.as_str()),
            ("failing attempt 1", path.as_str())
        );
    }
    let stats = queue.stats();
    assert_eq!(
        (stats.dead_lettered, stats.requeued, stats.lease_lost),
        (ITEMS as u64, 0, 0),
        "{stats:?}"
    );
    // One multi per move would be 128, plus the locks'.
    eprintln!("{ITEMS} items moved to the dead-letter path with {multis} multis");
    assert!(multis <= (ITEMS / 3) as u64, "{multis} multis for {ITEMS} items moved");
    queue.close();
}

/// A lock-safe consumer whose first delivery waits for `gate`, and which
/// fails every first delivery of an item but that one.
fn gated_consumer(
    client: &ZkClient,
    path: &str,
    locks: &str,
    gate: Receiver<()>,
) -> (DistributedQueue<String>, Receiver<(String, ItemMeta)>) {
    let (seen, deliveries): (Sender<(String, ItemMeta)>, _) = crossbeam_channel::unbounded();
    let queue = QueueBuilder::new(client, path, StringSerializer)
        .lock_path(locks)
        .redelivery_backoff(Duration::ZERO, Duration::ZERO)
        .consumer_with_meta(move |item: String, meta: &ItemMeta| -> Result<(), ConsumeError> {
            let first = item.starts_with("gate");
            seen.send((item, meta.clone())).map_err(|e| e.to_string())?;
            if first {
                gate.recv_timeout(WAIT).map_err(|e| e.to_string())?;
                return Ok(());
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

#[test]
fn a_lock_changed_under_one_item_of_a_requeue_batch_fences_that_item_alone() {
    const JOBS: usize = 12;
    let (path, locks) = (
        unique_path("requeue-batch-fence"),
        unique_path("requeue-batch-fence-locks"),
    );
    let direct = client();
    put_items(&direct, &path, "gate", 1);
    let values = put_items(&direct, &path, "job", JOBS);
    let originals = children(&direct, &path);
    let (open, gate) = crossbeam_channel::bounded(1);
    let consumer_client = client();
    let (queue, deliveries) = gated_consumer(&consumer_client, &path, &locks, gate);
    let (first, _) = deliveries.recv_timeout(WAIT).unwrap();
    assert_eq!(first, "gate-0000");
    eventually(WAIT, "a lease on every item (one window)", || {
        children(&direct, &locks).len() == JOBS + 1
    });
    // A write to one lock in the middle changes its version, not its
    // creation: the lease's versioned lock delete inside the multi fails for
    // that item alone.
    // After the gate item, in put order.
    let fenced = &originals[1 + JOBS / 2];
    let fenced_lock = format!("{locks}/{fenced}");
    direct.set_data(&fenced_lock, b"another holder's", None).unwrap();
    open.send(()).unwrap();

    // Every job fails once; every other one is requeued once and consumed.
    let seen = receive(&deliveries, 1 + 2 * (JOBS - 1));
    let mut attempts: HashMap<&str, Vec<u32>> = HashMap::new();
    for (item, meta) in &seen {
        attempts.entry(item.as_str()).or_default().push(meta.attempt());
    }
    let fenced_value = values[JOBS / 2].as_str();
    assert_eq!(attempts.len(), JOBS, "{attempts:?}");
    for (item, tries) in &attempts {
        let expected: &[u32] = if *item == fenced_value { &[1] } else { &[1, 2] };
        assert_eq!(tries, expected, "{item}: {attempts:?}");
    }
    eventually(WAIT, "the others acknowledged, the fenced item counted lost", || {
        children(&direct, &path) == [fenced.clone()] && queue.stats().lease_lost == 1
    });
    // Untouched: not requeued, not deleted, its lock as the other holder
    // left it.
    let (lock, _) = direct.get_data(&fenced_lock).unwrap();
    assert_eq!(lock, b"another holder's");
    assert_eq!(children(&direct, &locks), std::slice::from_ref(fenced));
    let stats = queue.stats();
    assert_eq!((stats.requeued, stats.lease_lost), ((JOBS - 1) as u64, 1), "{stats:?}");
    queue.close();
}
