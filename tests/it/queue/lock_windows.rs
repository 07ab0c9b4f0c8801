//! A lock-safe consumer writes a window at a time: its locks in one multi,
//! the acknowledges of a batch side by side in one multi. A multi is all or
//! nothing, so one item that fails (its lock held by another consumer, its
//! lease lost) must cost that item alone: the rest of the window is sent
//! again without it. With a backlog, a window locks at least half the claim
//! window once acknowledgements free the room, not whatever the first of
//! them freed.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use zk_queue::client::{ClientStats, CreateMode};
use zk_queue::testing::{FaultProxy, TestingServer};
use zk_queue::{Error, QueueBuilder, StringSerializer, ZkClient};

use super::{items, WAIT};
use crate::support::queues::{consumer, producer};
use crate::support::recorder::Recorder;
use crate::support::server::{shared_connect_string, unique_path};
use crate::support::{client, client_of, eventually, proxied_client, wait_for_watches};

/// The delay each way of the slow link behind which the consumer runs:
/// long beside a round trip of the server's.
const SLOW_LINK: Duration = Duration::from_millis(750);

/// Puts `values` into the queue at `path` and returns its node names, in
/// queue order.
fn put_all(client: &ZkClient, path: &str, values: &[String]) -> Vec<String> {
    let producer = producer(client, path).build_queue().unwrap();
    for value in values {
        producer.put(value.clone()).unwrap();
    }
    sorted_children(client, path)
}

fn sorted_children(client: &ZkClient, path: &str) -> Vec<String> {
    let mut names = client.get_children(path).map(|(c, _)| c).unwrap_or_default();
    names.sort();
    names
}

#[test]
fn a_window_of_lock_creates_skips_an_item_locked_elsewhere_and_takes_the_rest() {
    // A server of its own, so its watch count is the consumer's.
    let server = TestingServer::start().unwrap();
    let direct = client_of(&server.connect_string());
    let (path, locks) = (unique_path("lock-window-held"), unique_path("lock-window-held-locks"));
    let values = items("held-", 6);
    let names = put_all(&direct, &path, &values);
    direct.ensure_path(&locks).unwrap();

    // A slow link: the consumer's window of locks reaches the server two
    // delays after its listing of the lock directory does.
    let proxy = FaultProxy::start(&server.connect_string()).unwrap();
    proxy.set_delay(SLOW_LINK);
    let consumer_client = proxied_client(&proxy);
    // Held: the consumer's one thread keeps the first delivery, and the
    // scanner waits to hand over the next, so the leases seen then are
    // those of its first window.
    let recorder = Recorder::new().held();
    let queue = consumer(&consumer_client, &path, &recorder)
        .lock_path(&locks)
        .build_queue()
        .unwrap();
    // The queue listed, then the lock directory (each leaves a watch):
    // another consumer locks the third item before the window's locks
    // arrive, too late for the listing to show it.
    wait_for_watches(&server, 2);
    let other = client_of(&server.connect_string());
    let held_lock = format!("{locks}/{}", names[2]);
    other
        .create(&held_lock, b"another consumer", CreateMode::Ephemeral)
        .unwrap();
    let held_czxid = direct.exists(&held_lock).unwrap().expect("the other lock").czxid;
    eventually(WAIT, "one window locks all five others", || {
        sorted_children(&direct, &locks) == names
    });
    let lock = direct
        .exists(&held_lock)
        .unwrap()
        .expect("the other consumer's lock stays");
    assert_eq!(lock.czxid, held_czxid, "the other consumer's lock, untouched");
    proxy.set_delay(Duration::ZERO);
    recorder.release();

    let mut consumed = recorder.wait_for(5, WAIT);
    consumed.sort();
    let mut rest = values.clone();
    let held_value = rest.remove(2);
    assert_eq!(consumed, rest, "every item but the one locked elsewhere");
    eventually(WAIT, "the five acknowledged, the held item left", || {
        sorted_children(&direct, &path) == [names[2].clone()]
    });
    let stats: ClientStats = consumer_client.stats();
    // One multi for the window (and one more without the held item); a
    // create per lock would make 6.
    assert!(stats.create < 5, "the locks were created one request each: {stats:?}");

    // Its holder gone, the item is taken too, once.
    other.close();
    let mut all = recorder.wait_for(6, WAIT);
    all.sort();
    assert_eq!(all, values, "every item exactly once");
    assert!(recorder.items().contains(&held_value));
    eventually(WAIT, "no lock left", || sorted_children(&direct, &locks).is_empty());
    queue.close();
}

#[test]
fn an_acknowledge_window_with_one_lease_lost_acknowledges_the_others_and_reports_it() {
    let (path, locks) = (unique_path("ack-window-lost"), unique_path("ack-window-lost-locks"));
    let direct = client();
    let values = items("ack-", 5);
    let names = put_all(&direct, &path, &values);
    let proxy = FaultProxy::start(&shared_connect_string()).unwrap();
    let consumer_client = proxied_client(&proxy);
    let (builder, receiver) = QueueBuilder::new(&consumer_client, &path, StringSerializer)
        .lock_path(&locks)
        .pull_consumer();
    let queue = builder.build_queue().unwrap();
    let deliveries: Vec<_> = (0..values.len())
        .map(|_| receiver.take_timeout(WAIT).unwrap().expect("a delivery"))
        .collect();
    assert_eq!(
        deliveries
            .iter()
            .map(|d| d.meta().name().to_owned())
            .collect::<Vec<_>>(),
        names
    );
    // The fourth lease is lost: its lock is no longer at the version taken.
    let lost = &names[3];
    direct.set_data(&format!("{locks}/{lost}"), b"changed", None).unwrap();

    // A slow link keeps the acknowledger busy with the first acknowledge
    // while the other four queue up behind it, to go out together.
    proxy.set_delay(SLOW_LINK);
    let multis_before = consumer_client.stats().multi;
    let mut deliveries = deliveries.into_iter();
    deliveries.next().unwrap().ack();
    for delivery in deliveries {
        delivery.ack();
    }
    let errors = receiver.errors();
    let lost_path = format!("{path}/{lost}");
    let reported = loop {
        match errors.recv_timeout(WAIT) {
            Ok(Error::LeaseLost { path }) => break path,
            Ok(other) => println!("also reported: {other}"),
            Err(e) => panic!("no lost lease reported: {e}"),
        }
    };
    assert_eq!(reported, lost_path, "the lease lost is the one reported");
    eventually(WAIT, "the four others acknowledged", || {
        sorted_children(&direct, &path) == [lost.clone()] && sorted_children(&direct, &locks) == [lost.clone()]
    });
    proxy.set_delay(Duration::ZERO);
    let multis = consumer_client.stats().multi - multis_before;
    // The first alone, then the four together (and again without the lost
    // one); an acknowledge per multi would make 5.
    assert!(multis <= 4, "{multis} multis for 5 acknowledges");
    let stats = queue.stats();
    assert_eq!(stats.lease_lost, 1, "{stats:?}");
    assert!(
        !errors.try_iter().any(|e| matches!(e, Error::LeaseLost { .. })),
        "one lease reported lost"
    );
    queue.close();
}

#[test]
fn the_leases_of_a_window_not_handed_over_are_released_together() {
    let (path, locks) = (
        unique_path("lock-window-release"),
        unique_path("lock-window-release-locks"),
    );
    let direct = client();
    let values = items("release-", 3);
    let names = put_all(&direct, &path, &values);
    // Nodes with children are not items: locked with the window, then let go.
    for name in [&names[0], &names[2]] {
        direct
            .create(&format!("{path}/{name}/child"), b"", CreateMode::Persistent)
            .unwrap();
    }
    let recorder = Recorder::new();
    let consumer_client = client();
    let queue = consumer(&consumer_client, &path, &recorder)
        .lock_path(&locks)
        .build_queue()
        .unwrap();
    assert_eq!(recorder.wait_for(1, WAIT), [values[1].clone()]);
    eventually(WAIT, "no lock left", || sorted_children(&direct, &locks).is_empty());
    assert_eq!(
        sorted_children(&direct, &path),
        [names[0].clone(), names[2].clone()],
        "the nodes that are not items stay"
    );
    let stats: ClientStats = consumer_client.stats();
    // Both locks deleted in one multi; released one by one they would
    // take a delete each.
    assert_eq!(stats.delete, 0, "the locks were released one request each: {stats:?}");
    queue.close();
}

#[test]
fn a_window_of_locked_items_is_read_back_with_its_locks_in_one_request() {
    let (path, locks) = (unique_path("lock-window-reads"), unique_path("lock-window-reads-locks"));
    let direct = client();
    let values = items("reads-", 6);
    put_all(&direct, &path, &values);
    let consumer_client = client();
    let before = consumer_client.stats();
    // Held: the consumer's one thread keeps the first delivery and the
    // scanner waits to hand over the next, so the reads counted once an
    // item is claimed are those of its first window (all six items).
    let recorder = Recorder::new().held();
    let queue = consumer(&consumer_client, &path, &recorder)
        .lock_path(&locks)
        .build_queue()
        .unwrap();
    eventually(WAIT, "the first window claimed", || queue.stats().claimed >= 1);
    let reads = consumer_client.stats().get_data - before.get_data;
    recorder.release();
    let mut consumed = recorder.wait_for(6, WAIT);
    consumed.sort();
    assert_eq!(consumed, values, "every item once");
    // Two reads at the start (the queue node, readable by this consumer;
    // the lock path recorded on it), then the window's locks (a multi's
    // creates come without their stats) read back with its items in one
    // multi-read: 3. The locks read back, then the items, would make 4.
    assert_eq!(
        reads,
        3,
        "reads before the first hand-over: {:?}",
        consumer_client.stats()
    );
    queue.close();
}

#[test]
fn a_lock_safe_consumer_with_a_backlog_locks_at_least_half_a_window_at_a_time() {
    // Behind a slow link, so every lock lives long enough for the observer
    // to see it.
    let server = TestingServer::start().unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).unwrap();
    let own = proxied_client(&proxy);
    let (admin, observer) = (client_of(&server.connect_string()), client_of(&server.connect_string()));
    let path = unique_path("lock-windows-half");
    let locks = format!("{path}-locks");
    let (backlog, window) = (256, 64);
    let producer = producer(&admin, &path).put_in_background(true).build_queue().unwrap();
    for value in items("item-", backlog) {
        producer.put(value).unwrap();
    }
    assert!(producer.flush_timeout(WAIT), "the backlog was not stored");
    proxy.set_delay(Duration::from_millis(50));
    let recorder = Recorder::new();
    let queue = consumer(&own, &path, &recorder)
        .lock_path(&locks)
        .claim_window(window)
        .build_queue()
        .unwrap();
    // The locks of one window are created in one multi, one transaction:
    // they share a creation zxid.
    let mut created: HashMap<String, i64> = HashMap::new();
    let deadline = Instant::now() + WAIT;
    while recorder.items().len() < backlog {
        assert!(Instant::now() < deadline, "the backlog was not consumed");
        let names = observer
            .get_children(&locks)
            .map(|(names, _)| names)
            .unwrap_or_default();
        let new: Vec<String> = names.into_iter().filter(|name| !created.contains_key(name)).collect();
        for name in new {
            if let Ok(Some(stat)) = observer.exists(&format!("{locks}/{name}")) {
                created.insert(name, stat.czxid);
            }
        }
    }
    queue.close();
    producer.close();
    let mut windows: BTreeMap<i64, usize> = BTreeMap::new();
    for czxid in created.values() {
        *windows.entry(*czxid).or_default() += 1;
    }
    let sizes: Vec<usize> = windows.into_values().collect();
    eprintln!(
        "{backlog} items ({} locks seen) in lock windows of {sizes:?}",
        created.len()
    );
    // Locking whatever room the first acknowledgements freed makes windows
    // of a few items between the large ones.
    let small = sizes[..sizes.len() - 1]
        .iter()
        .filter(|&&size| size < window / 2)
        .count();
    assert!(
        small <= 1,
        "lock windows of fewer than {} items with a backlog left: {sizes:?}",
        window / 2
    );
}
