//! A lock-safe consumer's window writes whose reply is lost (or whose
//! request never reaches the server): the multi creating a window's locks,
//! and the multi acknowledging a batch. Either may have been applied whole
//! or not at all; the consumer must find out which before it forgets or
//! releases anything, so no lock is left behind and no item is delivered
//! twice.

use zk_queue::testing::{FaultProxy, Request};
use zk_queue::{DistributedQueue, ZkClient};

use super::WAIT;
use crate::support::queues::{consumer, producer};
use crate::support::recorder::Recorder;
use crate::support::server::{shared_connect_string, unique_path};
use crate::support::{client, eventually, proxied_client};

/// Items put before the consumer starts: one window, so one multi of locks.
const ITEMS: usize = 4;

fn sorted_children(client: &ZkClient, path: &str) -> Vec<String> {
    let mut names = client.get_children(path).map(|(c, _)| c).unwrap_or_default();
    names.sort();
    names
}

/// A queue of [`ITEMS`] items and a lock-safe consumer of it through a
/// fault proxy, whose deliveries are held until the test releases them.
struct Setup {
    proxy: FaultProxy,
    direct: ZkClient,
    path: String,
    locks: String,
    values: Vec<String>,
    recorder: Recorder,
    _client: ZkClient,
    queue: DistributedQueue<String>,
}

/// Puts the items, lets `fault` set a fault on the proxy, then starts the
/// consumer; returns once it holds a lease and the fault fired. Nothing is
/// acknowledged while the deliveries are held, so a multi dropped by then
/// was one creating locks.
fn held_window(name: &str, fault: impl FnOnce(&FaultProxy)) -> Setup {
    let (path, locks) = (unique_path(name), unique_path(&format!("{name}-locks")));
    let direct = client();
    let values: Vec<String> = (0..ITEMS).map(|i| format!("{name}-{i}")).collect();
    let producer = producer(&direct, &path).build_queue().unwrap();
    for value in &values {
        producer.put(value.clone()).unwrap();
    }
    let proxy = FaultProxy::start(&shared_connect_string()).unwrap();
    let client = proxied_client(&proxy);
    fault(&proxy);
    let recorder = Recorder::new().held();
    let queue = consumer(&client, &path, &recorder)
        .lock_path(&locks)
        .build_queue()
        .unwrap();
    eventually(WAIT, "leases taken, and the fault fired", || {
        !sorted_children(&direct, &locks).is_empty() && !proxy.dropping_reply() && !proxy.dropping_request()
    });
    Setup {
        proxy,
        direct,
        path,
        locks,
        values,
        recorder,
        _client: client,
        queue,
    }
}

impl Setup {
    /// Lets the held deliveries go and checks every item is consumed once,
    /// the queue and its locks end empty, and an item put now is the next
    /// delivery (an item delivered again would come before it).
    fn every_item_once_and_no_lock_left(&self) {
        self.recorder.release();
        let mut consumed = self.recorder.wait_for(ITEMS, WAIT);
        consumed.sort();
        assert_eq!(consumed, self.values, "every item exactly once");
        eventually(WAIT, "the queue and its locks end empty", || {
            sorted_children(&self.direct, &self.path).is_empty()
                && sorted_children(&self.direct, &self.locks).is_empty()
        });
        producer(&self.direct, &self.path)
            .build_queue()
            .unwrap()
            .put("last".into())
            .unwrap();
        self.recorder.wait_for(ITEMS + 1, WAIT);
        let mut all = self.recorder.deliveries();
        assert_eq!(all.pop().as_deref(), Some("last"), "nothing delivered twice before it");
        all.sort();
        assert_eq!(
            all,
            self.values,
            "nothing delivered twice: {:?}",
            self.recorder.deliveries()
        );
        let stats = self.queue.stats();
        assert_eq!(stats.lease_lost, 0, "{stats:?}");
    }
}

#[test]
fn a_lost_reply_to_a_window_of_lock_creates_leaves_no_lock_and_delivers_each_item_once() {
    let setup = held_window("lock-multi-reply-lost", |proxy| proxy.drop_reply_to(Request::Multi));
    // The multi was applied: every lock of it is found ours by its token.
    eventually(WAIT, "a lease on every item", || {
        sorted_children(&setup.direct, &setup.locks).len() == ITEMS
    });
    setup.every_item_once_and_no_lock_left();
    setup.queue.close();
}

#[test]
fn a_lock_create_multi_that_never_reached_the_server_is_sent_again_and_delivers_each_item_once() {
    let setup = held_window("lock-multi-request-lost", |proxy| proxy.drop_request_to(Request::Multi));
    setup.every_item_once_and_no_lock_left();
    setup.queue.close();
}

#[test]
fn a_lost_reply_to_an_acknowledge_multi_leaves_no_lock_and_delivers_nothing_twice() {
    let setup = held_window("ack-multi-reply-lost", |_| {});
    // Every lock taken (one window): the next multi acknowledges.
    eventually(WAIT, "a lease on every item", || {
        sorted_children(&setup.direct, &setup.locks).len() == ITEMS
    });
    setup.proxy.drop_reply_to(Request::Multi);
    setup.every_item_once_and_no_lock_left();
    assert!(
        !setup.proxy.dropping_reply(),
        "an acknowledge multi's reply was dropped"
    );
    setup.queue.close();
}

#[test]
fn an_acknowledge_multi_that_never_reached_the_server_is_sent_again_and_delivers_nothing_twice() {
    let setup = held_window("ack-multi-request-lost", |_| {});
    eventually(WAIT, "a lease on every item", || {
        sorted_children(&setup.direct, &setup.locks).len() == ITEMS
    });
    setup.proxy.drop_request_to(Request::Multi);
    setup.every_item_once_and_no_lock_left();
    assert!(!setup.proxy.dropping_request(), "an acknowledge multi was dropped");
    setup.queue.close();
}
