//! kazoo's `LockingQueue` and `KazooLockingQueue` on one queue, both ways,
//! neither side taking an entry the other holds.

use std::time::Duration;

use zk_queue::recipes::KazooLockingQueue;
use zk_queue::Error;

use super::peer::{kazoo_put, KazooPeer, LINE_WAIT};
use super::{consume_all, items, kazoo_order, PRIORITIES};
use crate::support::server::{shared_connect_string, unique_path};
use crate::support::{client, nodes, within};

/// How long kazoo's `get` waits where the test expects it to find nothing.
const KAZOO_GET_TIMEOUT: Duration = Duration::from_secs(2);

/// kazoo's `consume` mode: up to `count` gets (each waiting up to
/// `timeout`) and consumes; the data consumed, and whether a get timed out.
fn kazoo_consume(path: &str, count: usize, timeout: Duration) -> (Vec<String>, bool) {
    let lines = KazooPeer::spawn(&[
        "consume",
        &shared_connect_string(),
        path,
        &count.to_string(),
        &timeout.as_secs_f64().to_string(),
    ])
    .finish();
    let timed_out = lines.last().is_some_and(|l| l["none"] == true);
    let data = lines
        .iter()
        .filter_map(|l| l["data"].as_str().map(str::to_owned))
        .collect();
    (data, timed_out)
}

/// Both of the queue's directories are empty: every entry and lock deleted.
fn assert_empty(client: &zk_queue::ZkClient, path: &str) {
    assert!(nodes(client, &format!("{path}/entries")).is_empty(), "entries left");
    assert!(nodes(client, &format!("{path}/taken")).is_empty(), "locks left");
}

#[test]
fn kazoo_locking_producer_entries_are_consumed_here_by_priority_then_put_order() {
    let path = unique_path("kazoo-locking-from-kazoo");
    let put = items("k", PRIORITIES);
    kazoo_put(&shared_connect_string(), &path, "locking", &put);
    let client = client();
    let queue = KazooLockingQueue::new(&client, &path).unwrap();
    assert_eq!(queue.len().unwrap(), put.len());
    assert_eq!(consume_all(&queue), kazoo_order(&put));
    assert_empty(&client, &path);
}

#[test]
fn entries_put_here_are_consumed_by_kazoo_by_priority_then_put_order() {
    let path = unique_path("kazoo-locking-to-kazoo");
    let client = client();
    let queue = KazooLockingQueue::new(&client, &path).unwrap();
    let put = items("z", PRIORITIES);
    for (priority, data) in &put {
        queue.put(data.as_bytes(), *priority).unwrap();
    }
    let (consumed, timed_out) = kazoo_consume(&path, put.len(), LINE_WAIT);
    assert!(!timed_out);
    assert_eq!(consumed, kazoo_order(&put));
    assert_empty(&client, &path);
}

#[test]
fn an_entry_kazoo_holds_is_not_taken_here_until_kazoo_releases_it() {
    let path = unique_path("kazoo-locking-kazoo-holds");
    let client = client();
    let queue = KazooLockingQueue::new(&client, &path).unwrap();
    let put = items("z", &[1, 2, 3]);
    for (priority, data) in &put {
        queue.put(data.as_bytes(), *priority).unwrap();
    }
    let mut holder = KazooPeer::spawn(&["hold", &shared_connect_string(), &path, "30"]);
    let held = holder.next_line();
    assert_eq!(held["held"], "z-0", "kazoo holds the first entry: {held}");
    let held_name = held["name"].as_str().unwrap().to_owned();
    assert!(
        nodes(&client, &format!("{path}/taken")).contains(&held_name),
        "kazoo's lock is there"
    );

    // The others are taken here, the held one is not.
    assert_eq!(consume_all(&queue), ["z-1", "z-2"]);
    let bound = Duration::from_millis(500);
    let waited = within("a take past kazoo's lock", bound, || queue.take_timeout(bound).unwrap());
    assert!(
        waited.is_none(),
        "took {:?}, which kazoo holds",
        waited.map(|e| e.name().to_owned())
    );
    holder.send("holds");
    assert_eq!(holder.next_line(), serde_json::json!({"holds": true}));

    // Released by kazoo: a waiting take here gets it.
    std::thread::scope(|s| {
        let taker = s.spawn(|| queue.take_timeout(LINE_WAIT).unwrap());
        holder.send("release");
        assert_eq!(holder.next_line()["released"], true);
        let entry = taker.join().unwrap().expect("the released entry");
        assert_eq!((entry.name(), entry.data()), (held_name.as_str(), &b"z-0"[..]));
        entry.consume().unwrap();
    });
    holder.finish();
    assert_empty(&client, &path);
}

#[test]
fn an_entry_kazoo_consumes_while_holding_it_is_gone_for_both() {
    let path = unique_path("kazoo-locking-kazoo-consumes");
    let client = client();
    let queue = KazooLockingQueue::new(&client, &path).unwrap();
    queue.put(b"only", 100).unwrap();
    let mut holder = KazooPeer::spawn(&["hold", &shared_connect_string(), &path, "30"]);
    assert_eq!(holder.next_line()["held"], "only");
    assert!(queue.try_take().unwrap().is_none(), "held by kazoo");
    holder.send("consume");
    assert_eq!(holder.next_line()["consumed"], true);
    holder.finish();
    assert_empty(&client, &path);
    assert!(queue.try_take().unwrap().is_none());
}

#[test]
fn an_entry_held_here_is_not_given_to_kazoo_until_released() {
    let path = unique_path("kazoo-locking-we-hold");
    let client = client();
    let queue = KazooLockingQueue::new(&client, &path).unwrap();
    queue.put(b"first", 1).unwrap();
    queue.put(b"second", 2).unwrap();
    let held = queue.take().unwrap();
    assert_eq!(held.data(), b"first");
    assert!(held.is_held().unwrap());

    // kazoo gets the other one, then its get times out: ours is skipped.
    let (consumed, timed_out) = kazoo_consume(&path, 2, KAZOO_GET_TIMEOUT);
    assert_eq!(consumed, ["second"]);
    assert!(timed_out, "kazoo's second get found nothing free");

    // Released here: kazoo gets it.
    held.release().unwrap();
    let (consumed, timed_out) = kazoo_consume(&path, 1, LINE_WAIT);
    assert_eq!((consumed, timed_out), (vec!["first".to_owned()], false));
    assert_empty(&client, &path);
}

#[test]
fn a_holder_whose_session_ends_gives_its_entry_to_kazoo() {
    let path = unique_path("kazoo-locking-session-ends");
    let holder_client = client();
    let queue = KazooLockingQueue::new(&holder_client, &path).unwrap();
    queue.put(b"orphan", 100).unwrap();
    let held = queue.take().unwrap();
    holder_client.close(); // the session and its lock end
    let (consumed, timed_out) = kazoo_consume(&path, 1, LINE_WAIT);
    assert_eq!((consumed, timed_out), (vec!["orphan".to_owned()], false));
    assert!(!held.is_held().unwrap_or(false));
    drop(held);
    assert_empty(&client(), &path);
}

#[test]
fn entries_put_all_here_are_consumed_by_kazoo_in_put_order() {
    let path = unique_path("kazoo-locking-put-all");
    let client = client();
    let queue = KazooLockingQueue::new(&client, &path).unwrap();
    let batch: Vec<(u16, String)> = items("b", &[7, 7, 7, 7]);
    let data: Vec<&[u8]> = batch.iter().map(|(_, d)| d.as_bytes()).collect();
    assert_eq!(queue.put_all(&data, 7).unwrap().len(), batch.len());
    queue.put(b"urgent", 0).unwrap();
    let (consumed, timed_out) = kazoo_consume(&path, batch.len() + 1, LINE_WAIT);
    assert!(!timed_out);
    let expected: Vec<String> = std::iter::once("urgent".to_owned())
        .chain(kazoo_order(&batch))
        .collect();
    assert_eq!(consumed, expected);
    assert_empty(&client, &path);
}

#[test]
fn a_consume_after_the_lock_vanished_is_lease_lost_deletes_nothing_and_kazoo_gets_the_entry() {
    let path = unique_path("kazoo-locking-lock-vanished");
    let client = client();
    let queue = KazooLockingQueue::new(&client, &path).unwrap();
    queue.put(b"kept", 100).unwrap();
    let held = queue.take().unwrap();
    // The lock goes as if its session had ended.
    let lock = format!("{path}/taken/{}", held.name());
    crate::support::client().delete(&lock, None).unwrap();
    assert!(!held.is_held().unwrap());
    let err = held.consume().unwrap_err();
    assert!(matches!(err, Error::LeaseLost { .. }), "{err:?}");
    assert_eq!(
        nodes(&client, &format!("{path}/entries")).len(),
        1,
        "the entry is still there"
    );
    let (consumed, timed_out) = kazoo_consume(&path, 1, LINE_WAIT);
    assert_eq!((consumed, timed_out), (vec!["kept".to_owned()], false));
}

#[test]
fn dropping_a_held_entry_hands_it_to_kazoo() {
    let path = unique_path("kazoo-locking-dropped");
    let client = client();
    let queue = KazooLockingQueue::new(&client, &path).unwrap();
    queue.put(b"dropped", 100).unwrap();
    drop(queue.take().unwrap());
    let (consumed, timed_out) = kazoo_consume(&path, 1, LINE_WAIT);
    assert_eq!((consumed, timed_out), (vec!["dropped".to_owned()], false));
    assert_empty(&client, &path);
}

#[test]
fn a_consume_or_release_whose_lock_kazoo_took_over_leaves_the_entry_and_kazoos_lock() {
    let path = unique_path("kazoo-locking-lock-taken-over");
    let client = client();
    let queue = KazooLockingQueue::new(&client, &path).unwrap();
    queue.put(b"a", 1).unwrap();
    queue.put(b"b", 2).unwrap();
    let (held_a, held_b) = (queue.take().unwrap(), queue.take().unwrap());
    // Both locks go (deleted by hand), and kazoo takes both entries.
    let admin = crate::support::client();
    for held in [&held_a, &held_b] {
        admin.delete(&format!("{path}/taken/{}", held.name()), None).unwrap();
    }
    let mut kazoos: Vec<KazooPeer> = ["a", "b"]
        .iter()
        .map(|data| {
            let mut kazoo = KazooPeer::spawn(&["hold", &shared_connect_string(), &path, "30"]);
            assert_eq!(kazoo.next_line()["held"], *data);
            kazoo
        })
        .collect();
    let err = held_a.consume().unwrap_err();
    assert!(matches!(err, Error::LeaseLost { .. }), "{err:?}");
    held_b.release().unwrap();
    for kazoo in &mut kazoos {
        kazoo.send("holds");
        assert_eq!(kazoo.next_line()["holds"], true, "kazoo's lock is intact");
        kazoo.send("consume");
        assert_eq!(kazoo.next_line()["consumed"], true);
    }
    kazoos.into_iter().for_each(|kazoo| drop(kazoo.finish()));
    assert_empty(&client, &path);
}
