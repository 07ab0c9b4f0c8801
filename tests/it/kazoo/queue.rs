//! kazoo's `Queue` and `KazooQueue` on one queue, both ways.

use std::time::Duration;

use zk_queue::recipes::KazooQueue;
use zk_queue::Error;

use super::peer::{kazoo_put, KazooPeer, LINE_WAIT};
use super::{items, kazoo_order, PRIORITIES};
use crate::support::server::{shared_connect_string, unique_path};
use crate::support::{client, nodes, within};

/// Takes every entry left, without waiting.
fn drain(queue: &KazooQueue) -> Vec<String> {
    std::iter::from_fn(|| queue.try_take().unwrap())
        .map(|data| String::from_utf8(data).unwrap())
        .collect()
}

#[test]
fn kazoo_producer_items_are_taken_here_by_priority_then_put_order() {
    let path = unique_path("kazoo-queue-from-kazoo");
    let put = items("k", PRIORITIES);
    kazoo_put(&shared_connect_string(), &path, "queue", &put);
    let client = client();
    let queue = KazooQueue::new(&client, &path).unwrap();
    assert_eq!(queue.len().unwrap(), put.len());
    assert_eq!(drain(&queue), kazoo_order(&put));
    assert!(nodes(&client, &path).is_empty(), "every entry deleted");
}

#[test]
fn items_put_here_are_got_by_kazoo_by_priority_then_put_order() {
    let path = unique_path("kazoo-queue-to-kazoo");
    let client = client();
    let queue = KazooQueue::new(&client, &path).unwrap();
    let put = items("z", PRIORITIES);
    for (priority, data) in &put {
        queue.put(data.as_bytes(), *priority).unwrap();
    }
    let got: Vec<String> = KazooPeer::spawn(&["get", &shared_connect_string(), &path])
        .finish()
        .iter()
        .map(|line| line["data"].as_str().expect("a data line").to_owned())
        .collect();
    assert_eq!(got, kazoo_order(&put));
    assert!(nodes(&client, &path).is_empty(), "kazoo deleted every entry");
}

#[test]
fn entries_of_both_producers_are_taken_in_one_order() {
    let path = unique_path("kazoo-queue-mixed");
    let client = client();
    let queue = KazooQueue::new(&client, &path).unwrap();
    // Ours first, then kazoo's: equal priorities keep put order across both.
    let ours = items("z", &[50, 100, 3]);
    let theirs = items("k", &[100, 3, 50]);
    for (priority, data) in &ours {
        queue.put(data.as_bytes(), *priority).unwrap();
    }
    kazoo_put(&shared_connect_string(), &path, "queue", &theirs);
    let all: Vec<(u16, String)> = ours.into_iter().chain(theirs).collect();
    assert_eq!(drain(&queue), kazoo_order(&all));
}

#[test]
fn a_waiting_take_gets_an_entry_kazoo_puts_later() {
    let path = unique_path("kazoo-queue-wait");
    let client = client();
    let queue = KazooQueue::new(&client, &path).unwrap();
    std::thread::scope(|s| {
        let taker = s.spawn(|| queue.take_timeout(LINE_WAIT));
        kazoo_put(&shared_connect_string(), &path, "queue", &items("late", &[100]));
        let taken = taker.join().unwrap().unwrap();
        assert_eq!(taken.as_deref(), Some(&b"late-0"[..]));
    });
}

#[test]
fn a_take_timeout_on_an_empty_queue_returns_none_by_its_timeout() {
    let path = unique_path("kazoo-queue-empty");
    let client = client();
    let queue = KazooQueue::new(&client, &path).unwrap();
    let bound = Duration::from_millis(300);
    assert_eq!(
        within("empty take_timeout", bound, || queue.take_timeout(bound)).unwrap(),
        None
    );
    assert_eq!(queue.try_take().unwrap(), None);
}

#[test]
fn a_priority_above_999_is_refused_before_sending() {
    let path = unique_path("kazoo-queue-priority");
    let client = client();
    let queue = KazooQueue::new(&client, &path).unwrap();
    let err = queue.put(b"x", 1000).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err:?}");
    assert!(err.to_string().contains("between 0 and 999"), "{err}");
    assert_eq!(client.exists(&path).unwrap(), None, "nothing was created");
    assert!(queue.put(b"x", 999).unwrap().starts_with(&format!("{path}/entry-999-")));
}
