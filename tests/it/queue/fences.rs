//! The fence on a lock-safe consumer's lease: an acknowledge deletes its
//! item only while the lock is the very node the consumer created (its
//! creation zxid), at the version it was taken at, in the same session.
//! Another session's lock of the same name, or a lock whose version moved,
//! leaves the item where it is, ends as a lost lease, and is never deleted
//! by the consumer that lost it.

use crossbeam_channel::Receiver;
use zk_queue::client::CreateMode;
use zk_queue::{Delivery, DistributedQueue, Error, ItemReceiver, QueueBuilder, StringSerializer, ZkClient};

use super::WAIT;
use crate::support::queues::producer;
use crate::support::server::unique_path;
use crate::support::{client, eventually};

/// A lock-safe pull consumer holding the one item put at a fresh path.
struct Holder {
    path: String,
    locks: String,
    queue: DistributedQueue<String>,
    receiver: ItemReceiver<String>,
    delivery: Delivery<String>,
    /// Its client, kept open so its session (and lock) stays.
    _client: ZkClient,
}

impl Holder {
    fn new(name: &str, direct: &ZkClient) -> Holder {
        let (path, locks) = (unique_path(name), unique_path(&format!("{name}-locks")));
        producer(direct, &path)
            .build_queue()
            .unwrap()
            .put("held".to_string())
            .unwrap();
        let client = client();
        let (builder, receiver) = QueueBuilder::new(&client, &path, StringSerializer)
            .lock_path(&locks)
            .pull_consumer();
        let queue = builder.build_queue().unwrap();
        let delivery = receiver.take_timeout(WAIT).unwrap().expect("the item");
        Holder {
            path,
            locks,
            queue,
            receiver,
            delivery,
            _client: client,
        }
    }

    /// The item's path.
    fn item(&self) -> String {
        format!("{}/{}", self.path, self.delivery.meta().name())
    }

    /// The path of the item's lock.
    fn lock(&self) -> String {
        format!("{}/{}", self.locks, self.delivery.meta().name())
    }

    /// Acknowledges the item and waits until the acknowledge is settled,
    /// applied or not; returns the queue and the errors it told.
    fn ack_and_settle(self) -> (DistributedQueue<String>, Receiver<Error>) {
        let errors = self.receiver.errors();
        self.delivery.ack();
        eventually(WAIT, "the acknowledge is settled", || self.queue.stats().in_flight == 0);
        (self.queue, errors)
    }

    /// Acknowledges the item, whose lock is no longer the one taken, and
    /// asserts that the fence held: the item stays, the lock the test left
    /// (holding `lock_data`) stays, and the consumer tells of a lost lease.
    fn assert_fenced(self, direct: &ZkClient, lock_data: &[u8]) {
        let (item, lock) = (self.item(), self.lock());
        let (queue, errors) = self.ack_and_settle();
        assert!(direct.exists(&item).unwrap().is_some(), "the item stays");
        let told = errors.recv_timeout(WAIT).expect("an error is told");
        assert!(matches!(&told, Error::LeaseLost { path } if *path == item), "{told}");
        assert_eq!(queue.stats().lease_lost, 1, "{:?}", queue.stats());
        let (data, _) = direct.get_data(&lock).unwrap();
        assert_eq!(data, lock_data, "the lock the acknowledge found stays");
        queue.close();
    }
}

#[test]
fn an_acknowledge_whose_lock_another_session_holds_now_leaves_the_item_and_that_lock() {
    let direct = client();
    let holder = Holder::new("fence-replaced", &direct);
    let lock = holder.lock();
    // The lock goes (an operator deleted it, say) and another session takes
    // the item: its lock has the same name, and the same version, 0.
    direct.delete(&lock, None).unwrap();
    let other = client();
    other.create(&lock, b"another holder's", CreateMode::Ephemeral).unwrap();
    holder.assert_fenced(&direct, b"another holder's");
}

#[test]
fn an_acknowledge_whose_lock_moved_past_its_version_leaves_the_item_and_that_lock() {
    let direct = client();
    let holder = Holder::new("fence-moved", &direct);
    let lock = holder.lock();
    // Same node, same session, a newer version: no longer the lock taken.
    direct.set_data(&lock, b"moved", None).unwrap();
    holder.assert_fenced(&direct, b"moved");
}
