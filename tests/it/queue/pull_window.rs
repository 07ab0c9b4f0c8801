//! How many deliveries a pull consumer's takers may hold at once: up to the
//! claim window, over any number of threads, and a take beyond it waits.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use zk_queue::{ItemReceiver, QueueBuilder, StringSerializer, ZkClient};

use crate::support::queues::producer;
use crate::support::{client, eventually, server::unique_path, Stop};

const WAIT: Duration = Duration::from_secs(30);

/// The number of lock nodes under `locks` (none if it is missing).
fn locks_held(client: &ZkClient, locks: &str) -> usize {
    client.get_children(locks).map(|(l, _)| l.len()).unwrap_or(0)
}

#[test]
fn four_threads_sharing_one_receiver_hold_four_deliveries_at_once() {
    let (path, locks) = (unique_path("pull-shared"), unique_path("pull-shared-locks"));
    let client = client();
    let (builder, receiver) = QueueBuilder::new(&client, &path, StringSerializer)
        .lock_path(&locks)
        .pull_consumer();
    let _queue = builder.build_queue().unwrap();
    let producer = producer(&client, &path).build_queue().unwrap();
    for i in 0..4 {
        producer.put(format!("job-{i}")).unwrap();
    }
    // A barrier with a deadline: every thread reaches it while holding its
    // delivery, so four are outstanding at once.
    let (holding, checked) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let mut got: Vec<String> = thread::scope(|s| {
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let (receiver, holding, checked) = (receiver.clone(), &holding, &checked);
                let (client, locks) = (&client, &locks);
                s.spawn(move || {
                    let delivery = receiver.take_timeout(WAIT).unwrap().expect("an item");
                    holding.fetch_add(1, Ordering::SeqCst);
                    eventually(WAIT, "four threads hold a delivery at once", || {
                        holding.load(Ordering::SeqCst) == 4
                    });
                    assert_eq!(locks_held(client, locks), 4, "each outstanding delivery holds its lock");
                    // None acknowledges before all have counted the locks.
                    checked.fetch_add(1, Ordering::SeqCst);
                    eventually(WAIT, "four threads counted the locks", || {
                        checked.load(Ordering::SeqCst) == 4
                    });
                    delivery.ack()
                })
            })
            .collect();
        threads.into_iter().map(|t| t.join().unwrap()).collect()
    });
    got.sort();
    assert_eq!(got, ["job-0", "job-1", "job-2", "job-3"]);
    eventually(WAIT, "acknowledged items are deleted", || {
        client.get_children(&path).unwrap().0.is_empty()
    });
}

#[test]
fn one_thread_takes_a_second_delivery_before_acknowledging_the_first() {
    let path = unique_path("pull-two");
    let client = client();
    let (builder, receiver) = QueueBuilder::new(&client, &path, StringSerializer)
        .lock_path(&unique_path("pull-two-locks"))
        .pull_consumer();
    let _queue = builder.build_queue().unwrap();
    let producer = producer(&client, &path).build_queue().unwrap();
    producer.put("first".into()).unwrap();
    producer.put("second".into()).unwrap();
    let first = receiver.take_timeout(WAIT).unwrap().expect("the first item");
    let second = receiver
        .take_timeout(WAIT)
        .unwrap()
        .expect("a second item while the first is held");
    assert_eq!((first.item().as_str(), second.item().as_str()), ("first", "second"));
    // Settled in the other order.
    second.ack();
    first.ack();
    eventually(WAIT, "both items are deleted", || {
        client.get_children(&path).unwrap().0.is_empty()
    });
}

/// Holds `window` deliveries of `window + 1` items, checks that a further
/// take waits (and that `take_timeout` returns at its deadline), then
/// acknowledges one and checks that the waiting taker gets the last item.
/// `claimed_all` says when the queue has claimed the last item too, if it
/// can (without a lock path), so the wait is the window's, not the claim's.
fn a_take_beyond_the_window_waits(
    client: &ZkClient,
    path: &str,
    receiver: &ItemReceiver<String>,
    window: usize,
    ready: impl Fn() -> bool,
) {
    let producer = producer(client, path).build_queue().unwrap();
    for i in 0..=window {
        producer.put(format!("job-{i}")).unwrap();
    }
    let mut held: Vec<_> = (0..window)
        .map(|_| receiver.take_timeout(WAIT).unwrap().expect("an item within the window"))
        .collect();
    eventually(WAIT, "the queue is as far as it can go", &ready);
    assert!(receiver.try_take().unwrap().is_none(), "the window is full");
    let timeout = Duration::from_millis(500);
    let started = Instant::now();
    assert!(receiver.take_timeout(timeout).unwrap().is_none(), "the window is full");
    let waited = started.elapsed();
    assert!(
        waited >= timeout && waited < timeout + Duration::from_secs(5),
        "take_timeout returns at its deadline: {waited:?}"
    );
    let last = thread::scope(|s| {
        let waiter = s.spawn(|| receiver.take_timeout(WAIT));
        held.remove(0).ack();
        waiter
            .join()
            .unwrap()
            .unwrap()
            .expect("served once a delivery is settled")
    });
    assert_eq!(last.ack(), format!("job-{window}"));
    for delivery in held {
        delivery.ack();
    }
}

#[test]
fn a_take_beyond_the_claim_window_waits_until_a_delivery_is_settled_and_never_more_locks_are_held() {
    let (path, locks) = (unique_path("pull-window"), unique_path("pull-window-locks"));
    let client = client();
    let (builder, receiver) = QueueBuilder::new(&client, &path, StringSerializer)
        .lock_path(&locks)
        .claim_window(2)
        .pull_consumer();
    let _queue = builder.build_queue().unwrap();
    // Counts the locks all along, from a client of its own.
    let (done, most) = (Stop::new(), AtomicUsize::new(0));
    thread::scope(|s| {
        s.spawn(|| {
            let watcher = crate::support::client();
            while !done.stopped() {
                most.fetch_max(locks_held(&watcher, &locks), Ordering::SeqCst);
            }
        });
        // Stops the counting even if the checks panic.
        let _done = done.on_drop();
        a_take_beyond_the_window_waits(&client, &path, &receiver, 2, || locks_held(&client, &locks) == 2);
    });
    assert_eq!(most.load(Ordering::SeqCst), 2, "never more locks than the claim window");
}

#[test]
fn without_a_lock_path_a_take_beyond_the_claim_window_waits_until_a_delivery_is_settled() {
    let path = unique_path("pull-window-plain");
    let client = client();
    let (builder, receiver) = QueueBuilder::new(&client, &path, StringSerializer)
        .claim_window(2)
        .pull_consumer();
    let queue = builder.build_queue().unwrap();
    // The last item is claimed (deleted) and ready, yet not handed out.
    a_take_beyond_the_window_waits(&client, &path, &receiver, 2, || queue.stats().claimed == 3);
}
