//! Building and starting the queues the tests use.

use zk_queue::{DelayQueue, DistributedQueue, IdQueue, PriorityQueue, QueueBuilder, StringSerializer, ZkClient};

use super::recorder::Recorder;

/// A queue handle of any kind.
pub trait Startable {
    fn start(&self) -> zk_queue::Result<()>;
}

macro_rules! startable {
    ($($kind:ident),*) => {
        $(impl<T: Send + 'static> Startable for $kind<T> {
            fn start(&self) -> zk_queue::Result<()> {
                $kind::start(self)
            }
        })*
    };
}
startable!(DistributedQueue, PriorityQueue, DelayQueue, IdQueue);

/// Starts a queue just built.
pub fn started<Q: Startable>(built: zk_queue::Result<Q>) -> Q {
    let queue = built.unwrap();
    queue.start().unwrap();
    queue
}

/// A builder of string items whose puts return once stored.
pub fn producer(client: &ZkClient, path: &str) -> QueueBuilder<String> {
    QueueBuilder::new(client, path, StringSerializer).put_in_background(false)
}

/// A builder of string items consumed by `recorder`.
pub fn consumer(client: &ZkClient, path: &str, recorder: &Recorder) -> QueueBuilder<String> {
    QueueBuilder::new(client, path, StringSerializer).consumer(recorder.clone())
}
