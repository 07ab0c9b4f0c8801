//! Requeues whose multi never reaches the server, or whose reply is lost on
//! the way back.
//!
//! A lock-safe consumer puts a failed delivery back (`ErrorMode::Requeue`)
//! in one multi fenced on the item's lock: check the lock, delete the item,
//! create it again under the same prefix, delete the lock (its acknowledger
//! sends it, with any other item's that is ready, see
//! `requeue_batch_replies`). The multi is sent again in the same session; if
//! the first one was applied, the lock is gone and the item's absence says
//! the requeue was done. Either way the item is stored once, under a new node, delivered
//! again and consumed once more, and no lock is left.
//!
//! A consumer without a lock path never requeues: it deletes an item before
//! the consumer sees it, and a failure only logs.

use std::time::Duration;

use crossbeam_channel::{Receiver, Sender};
use zk_queue::inspect::{decode_item, Layout};
use zk_queue::testing::{FaultProxy, Request};
use zk_queue::{ConsumeError, ItemMeta, QueueBuilder, QueueStats, StringSerializer, ZkClient};

use super::WAIT;
use crate::support::queues::producer;
use crate::support::server::{shared_connect_string, unique_path};
use crate::support::{self, eventually};

/// The two forms of a lock-safe consumer: both requeue a failed delivery
/// through the same multi.
#[derive(Clone, Copy, Debug)]
enum Form {
    /// A callback that returns an error.
    Callback,
    /// A pull receiver's taker that nacks.
    Pull,
}

/// A started lock-safe consumer that fails the first delivery of `job` and
/// holds its second one until the test lets it finish; it consumes any other
/// item at once.
struct Consumer {
    queue: zk_queue::DistributedQueue<String>,
    /// Every delivery, with what the consumer was told about it.
    seen: Receiver<(String, ItemMeta)>,
    /// Lets the held delivery finish (acknowledged).
    finish: Sender<()>,
}

impl Consumer {
    fn start(form: Form, client: &ZkClient, path: &str, locks: &str) -> Consumer {
        let (seen_tx, seen) = crossbeam_channel::unbounded();
        let (finish, finish_rx) = crossbeam_channel::unbounded::<()>();
        let builder = QueueBuilder::new(client, path, StringSerializer)
            .lock_path(locks)
            .redelivery_backoff(Duration::ZERO, Duration::ZERO);
        let queue = match form {
            Form::Callback => builder
                .consumer_with_meta(move |item: String, meta: &ItemMeta| -> Result<(), ConsumeError> {
                    let job = item == "job";
                    seen_tx.send((item, meta.clone())).map_err(|e| e.to_string())?;
                    match meta.attempt() {
                        _ if !job => Ok(()),
                        1 => Err("failing the first delivery".into()),
                        _ => finish_rx.recv_timeout(WAIT).map_err(|e| e.to_string().into()),
                    }
                })
                .build_queue()
                .unwrap(),
            Form::Pull => {
                let (builder, receiver) = builder.pull_consumer();
                let queue = builder.build_queue().unwrap();
                std::thread::spawn(move || {
                    while let Ok(Some(delivery)) = receiver.take_timeout(WAIT) {
                        let job = *delivery == "job";
                        if seen_tx.send(((*delivery).clone(), delivery.meta().clone())).is_err() {
                            return;
                        }
                        if !job {
                            delivery.ack();
                        } else if delivery.meta().attempt() == 1 {
                            delivery.nack("failing the first delivery");
                        } else if finish_rx.recv_timeout(WAIT).is_ok() {
                            delivery.ack();
                        }
                    }
                });
                queue
            }
        };
        Consumer { queue, seen, finish }
    }

    /// The next delivery.
    fn next(&self) -> (String, ItemMeta) {
        self.seen.recv_timeout(WAIT).expect("a delivery")
    }
}

/// The children of `path`, sorted.
fn children(client: &ZkClient, path: &str) -> Vec<String> {
    let mut names = client.get_children(path).unwrap().0;
    names.sort();
    names
}

/// Puts one item, loses the multi of its requeue as `lose` says, and checks
/// the item is stored exactly once, delivered again and consumed once more,
/// with no lock left.
fn a_lost_requeue_stores_the_item_once(name: &str, form: Form, lose: fn(&FaultProxy)) {
    let proxy = FaultProxy::start(&shared_connect_string()).unwrap();
    let client = support::proxied_client(&proxy);
    let direct = support::client();
    let path = unique_path(name);
    let locks = unique_path(&format!("{name}-locks"));
    let producer = producer(&direct, &path).build_queue().unwrap();
    producer.put("job".into()).unwrap();
    let [original]: [String; 1] = children(&direct, &path).try_into().unwrap();

    // Nothing before the requeue sends a multi: it is the first.
    lose(&proxy);
    let consumer = Consumer::start(form, &client, &path, &locks);
    let (item, first) = consumer.next();
    assert_eq!(
        (item.as_str(), first.attempt(), first.name()),
        ("job", 1, original.as_str())
    );
    let (item, second) = consumer.next();
    assert!(!proxy.dropping_request() && !proxy.dropping_reply(), "the fault fired");
    assert_eq!((item.as_str(), second.attempt()), ("job", 2), "delivered again");

    // While the second delivery is held: one node, the requeued one, and
    // only its lock.
    let stored = children(&direct, &path);
    assert_eq!(stored, [second.name()], "stored exactly once, under the node delivered");
    assert_ne!(second.name(), original, "the failed node was replaced");
    let (data, _) = direct.get_data(&format!("{path}/{}", second.name())).unwrap();
    let requeued = decode_item(Layout::Curator, &data).unwrap();
    assert_eq!(requeued.records, [b"job".to_vec()]);
    assert_eq!(requeued.attempts, 1, "the node records the one failure");
    assert_eq!(
        children(&direct, &locks),
        [second.name()],
        "the old node's lock is gone"
    );

    consumer.finish.send(()).unwrap();
    eventually(WAIT, "the item is acknowledged and its lock deleted", || {
        children(&direct, &path).is_empty() && children(&direct, &locks).is_empty()
    });
    // Stored twice, the item would come again before an item put now.
    producer.put("last".into()).unwrap();
    let (item, last) = consumer.next();
    assert_eq!(
        (item.as_str(), last.attempt()),
        ("last", 1),
        "no third delivery of the job"
    );
    let stats: QueueStats = consumer.queue.stats();
    assert_eq!((stats.requeued, stats.lease_lost), (1, 0), "{stats:?}");
    consumer.queue.close();
}

#[test]
fn a_requeue_whose_multi_reply_was_lost_stores_the_item_once() {
    a_lost_requeue_stores_the_item_once("requeue-reply-lost", Form::Callback, |proxy| {
        proxy.drop_reply_to(Request::Multi)
    });
}

#[test]
fn a_requeue_whose_multi_never_reached_the_server_stores_the_item_once() {
    a_lost_requeue_stores_the_item_once("requeue-request-lost", Form::Callback, |proxy| {
        proxy.drop_request_to(Request::Multi)
    });
}

#[test]
fn a_nack_whose_requeue_reply_was_lost_stores_the_item_once() {
    a_lost_requeue_stores_the_item_once("nack-reply-lost", Form::Pull, |proxy| {
        proxy.drop_reply_to(Request::Multi)
    });
}

#[test]
fn a_nack_whose_requeue_never_reached_the_server_stores_the_item_once() {
    a_lost_requeue_stores_the_item_once("nack-request-lost", Form::Pull, |proxy| {
        proxy.drop_request_to(Request::Multi)
    });
}
