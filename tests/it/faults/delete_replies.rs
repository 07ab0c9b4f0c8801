//! Claiming deletes that are lost on the way to the server, or whose reply
//! is lost on the way back: the claimed item is delivered exactly once. A
//! window of one item is claimed with a single delete, a larger one with a
//! multi of deletes: both are covered.

use zk_queue::testing::{FaultProxy, Request};
use zk_queue::SimpleQueue;

use super::WAIT;
use crate::support::queues::{consumer, producer};
use crate::support::recorder::Recorder;
use crate::support::server::{shared_connect_string, unique_path};
use crate::support::{self, eventually};

/// Runs a plain consumer of `count` items through a proxy that loses the
/// first claiming delete as `lose` says, and checks every item is delivered
/// once.
fn plain_consumer_delivers_each_item_once(name: &str, count: usize, lose: fn(&FaultProxy)) {
    let proxy = FaultProxy::start(&shared_connect_string()).unwrap();
    let client = support::proxied_client(&proxy);
    let direct = support::client();
    let path = unique_path(name);
    let producer = producer(&direct, &path).build_queue().unwrap();
    let items: Vec<String> = (0..count).map(|i| format!("job-{i}")).collect();
    for item in &items {
        producer.put(item.clone()).unwrap();
    }
    lose(&proxy);
    let recorder = Recorder::new();
    let queue = consumer(&client, &path, &recorder).build_queue().unwrap();
    assert_eq!(recorder.wait_for(items.len(), WAIT), items);
    assert!(!proxy.dropping_request() && !proxy.dropping_reply(), "the fault fired");
    eventually(WAIT, "the queue is empty", || {
        direct.get_children(&path).unwrap().0.is_empty()
    });
    // Delivered again, a duplicate would come with the next listing: put
    // one more item and see it come alone.
    producer.put("last".into()).unwrap();
    recorder.wait_for(items.len() + 1, WAIT);
    assert_eq!(recorder.items().len(), items.len() + 1, "{:?}", recorder.items());
    queue.close();
}

#[test]
fn a_plain_consumer_delivers_once_an_item_whose_claiming_delete_never_reached_the_server() {
    plain_consumer_delivers_each_item_once("plain-delete-request-lost", 1, |proxy| {
        proxy.drop_request_to(Request::Delete)
    });
}

#[test]
fn a_plain_consumer_delivers_once_each_item_whose_claiming_multi_never_reached_the_server() {
    plain_consumer_delivers_each_item_once("plain-multi-request-lost", 5, |proxy| {
        proxy.drop_request_to(Request::Multi)
    });
}

#[test]
fn a_plain_consumer_delivers_once_each_item_whose_claiming_multi_reply_was_lost() {
    plain_consumer_delivers_each_item_once("plain-multi-reply-lost", 5, |proxy| proxy.drop_reply_to(Request::Multi));
}

#[test]
fn a_plain_consumer_delivers_once_an_item_whose_claiming_delete_reply_was_lost() {
    plain_consumer_delivers_each_item_once("plain-delete-reply-lost", 1, |proxy| {
        proxy.drop_reply_to(Request::Delete)
    });
}

/// Polls a `SimpleQueue` through a proxy that loses the first claiming
/// delete as `lose` says, and checks every item is returned once.
fn simple_poll_returns_each_item_once(name: &str, prefetch: usize, lose: fn(&FaultProxy)) {
    let proxy = FaultProxy::start(&shared_connect_string()).unwrap();
    let client = support::proxied_client(&proxy);
    let direct = support::client();
    let path = unique_path(name);
    let offering = SimpleQueue::new(&direct, &path).unwrap();
    for i in 0..3 {
        offering.offer(format!("job-{i}").as_bytes()).unwrap();
    }
    let polling = SimpleQueue::builder(&client, &path).prefetch(prefetch).build().unwrap();
    lose(&proxy);
    let mut got = Vec::new();
    while let Some(item) = polling.poll().unwrap() {
        got.push(String::from_utf8(item).unwrap());
    }
    assert!(!proxy.dropping_request() && !proxy.dropping_reply(), "the fault fired");
    assert_eq!(got, ["job-0", "job-1", "job-2"]);
    assert!(direct.get_children(&path).unwrap().0.is_empty());
}

#[test]
fn simple_queue_poll_returns_once_an_item_whose_delete_never_reached_the_server() {
    simple_poll_returns_each_item_once("simple-delete-request-lost", 0, |proxy| {
        proxy.drop_request_to(Request::Delete)
    });
}

#[test]
fn a_prefetching_simple_queue_returns_once_each_item_of_a_window_whose_claiming_multi_never_reached_the_server() {
    simple_poll_returns_each_item_once("simple-prefetch-multi-request-lost", 8, |proxy| {
        proxy.drop_request_to(Request::Multi)
    });
}

#[test]
fn simple_queue_poll_returns_once_an_item_whose_delete_reply_was_lost() {
    simple_poll_returns_each_item_once("simple-delete-reply-lost", 0, |proxy| {
        proxy.drop_reply_to(Request::Delete)
    });
}

#[test]
fn a_prefetching_simple_queue_returns_once_each_item_of_a_window_whose_claiming_multi_reply_was_lost() {
    simple_poll_returns_each_item_once("simple-prefetch-multi-reply-lost", 8, |proxy| {
        proxy.drop_reply_to(Request::Multi)
    });
}
