//! `IdQueue::remove` against items a lock-safe consumer holds: a remover
//! with the consumers' lock path skips them; one without it deletes them,
//! and the holder's settling ends with `Error::ItemRemoved`, not a failed
//! multi.

use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender};
use parking_lot::Mutex;

use zk_queue::{ConsumeError, Error, IdQueue, QueueBuilder, QueueConsumer, StringSerializer, ZkClient};

use crate::queue::WAIT;
use crate::support::queues::producer;
use crate::support::{client, eventually, server::unique_path};

/// A consumer that holds its item until told to go on, and records the
/// errors it is told of.
struct Holding {
    entered: Sender<()>,
    go: Receiver<Result<(), String>>,
    errors: Arc<Mutex<Vec<Error>>>,
}

impl QueueConsumer<String> for Holding {
    fn consume(&self, _: String) -> Result<(), ConsumeError> {
        let _ = self.entered.send(());
        match self.go.recv_timeout(WAIT) {
            Ok(outcome) => outcome.map_err(ConsumeError::from),
            Err(_) => Err("never told to go on".into()),
        }
    }
    fn error(&self, error: &Error) {
        self.errors.lock().push(error.clone());
    }
}

/// A lock-safe id queue whose consumer holds the one item put with id
/// "order-7" until `go` says how its consumption ended.
struct Held {
    client: ZkClient,
    path: String,
    locks: String,
    queue: IdQueue<String>,
    go: Sender<Result<(), String>>,
    errors: Arc<Mutex<Vec<Error>>>,
}

fn held(name: &str) -> Held {
    let (path, locks) = (unique_path(name), unique_path(&format!("{name}-locks")));
    let client = client();
    let (entered, entered_rx) = crossbeam_channel::bounded(1);
    let (go, go_rx) = crossbeam_channel::bounded(1);
    let errors = Arc::new(Mutex::new(Vec::new()));
    let queue = QueueBuilder::new(&client, &path, StringSerializer)
        .consumer(Holding {
            entered,
            go: go_rx,
            errors: errors.clone(),
        })
        .lock_path(&locks)
        .build_id_queue()
        .unwrap();
    producer(&client, &path)
        .build_id_queue()
        .unwrap()
        .put("ship".into(), "order-7")
        .unwrap();
    entered_rx.recv_timeout(WAIT).expect("the consumer holds the item");
    Held {
        client,
        path,
        locks,
        queue,
        go,
        errors,
    }
}

impl Held {
    /// The item's node path.
    fn item_path(&self) -> String {
        let (names, _) = self.client.get_children(&self.path).unwrap();
        assert_eq!(names.len(), 1, "{names:?}");
        format!("{}/{}", self.path, names[0])
    }

    /// Waits until the consumer was told of an error, and returns them all.
    fn told(&self) -> Vec<Error> {
        eventually(WAIT, "the consumer is told how the item ended", || {
            !self.errors.lock().is_empty()
        });
        self.errors.lock().clone()
    }

    /// Waits until the lock is released and the queue is empty.
    fn nothing_left(&self) {
        eventually(WAIT, "the lock is released", || {
            self.client.get_children(&self.locks).unwrap().0.is_empty()
        });
        assert!(
            self.client.get_children(&self.path).unwrap().0.is_empty(),
            "the removed item is not put back"
        );
    }
}

/// Removes the held item through a handle without the consumer's lock
/// path, lets the consumer end with `outcome`, and checks that it hears
/// `Error::ItemRemoved` for the item and nothing else.
fn removed_under_its_holder(name: &str, outcome: Result<(), String>) {
    let held = held(name);
    let item = held.item_path();
    let remover = producer(&held.client, &held.path).build_id_queue().unwrap();
    assert_eq!(
        remover.remove("order-7").unwrap(),
        1,
        "without the lock path, the item is removed"
    );
    held.go.send(outcome).unwrap();
    let told = held.told();
    assert!(
        matches!(told.as_slice(), [Error::ItemRemoved { path }] if *path == item),
        "{told:?}"
    );
    held.nothing_left();
    let stats = held.queue.stats();
    assert_eq!((stats.removed_while_held, stats.lease_lost), (1, 0), "{stats:?}");
    eventually(WAIT, "the item is settled", || held.queue.stats().in_flight == 0);
}

#[test]
fn an_item_removed_without_the_lock_path_ends_its_holders_acknowledge_with_item_removed() {
    removed_under_its_holder("ids-removed-ack", Ok(()));
}

#[test]
fn an_item_removed_without_the_lock_path_ends_its_holders_requeue_with_item_removed() {
    removed_under_its_holder("ids-removed-nack", Err("failed".into()));
}

#[test]
fn a_remover_with_the_lock_path_skips_the_held_item_and_its_holder_acknowledges_it() {
    let held = held("ids-skipped");
    let remover = producer(&held.client, &held.path)
        .lock_path(&held.locks)
        .build_id_queue()
        .unwrap();
    assert_eq!(remover.remove("order-7").unwrap(), 0, "the held item is skipped");
    assert_eq!(held.client.get_children(&held.path).unwrap().0.len(), 1, "and kept");
    held.go.send(Ok(())).unwrap();
    eventually(WAIT, "the holder acknowledged it", || {
        held.queue.stats().consumed == 1 && held.queue.stats().in_flight == 0
    });
    held.nothing_left();
    assert!(held.errors.lock().is_empty(), "{:?}", held.errors.lock());
}

#[test]
fn a_pull_delivery_removed_without_the_lock_path_is_told_as_item_removed() {
    let (path, locks) = (unique_path("ids-removed-pull"), unique_path("ids-removed-pull-locks"));
    let client = client();
    let (builder, receiver) = QueueBuilder::new(&client, &path, StringSerializer)
        .lock_path(&locks)
        .pull_consumer();
    let errors = receiver.errors();
    let queue = builder.build_id_queue().unwrap();
    let remover = producer(&client, &path).build_id_queue().unwrap();
    remover.put("ship".into(), "order-7").unwrap();
    let delivery = receiver.take_timeout(WAIT).unwrap().expect("the item");
    assert_eq!(remover.remove("order-7").unwrap(), 1);
    delivery.ack();
    match errors.recv_timeout(WAIT) {
        Ok(Error::ItemRemoved { path: item }) => assert!(item.starts_with(&format!("{path}/queue-|order-7|"))),
        other => panic!("{other:?}"),
    }
    assert_eq!(queue.stats().removed_while_held, 1);
    eventually(WAIT, "the lock is released", || {
        client.get_children(&locks).unwrap().0.is_empty()
    });
    assert!(receiver.take_timeout(Duration::from_millis(200)).unwrap().is_none());
}
