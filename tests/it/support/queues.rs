//! Builders of the queues the tests use.

use zk_queue::{DistributedQueue, QueueBuilder, StringSerializer, ZkClient};

use super::recorder::Recorder;

/// A builder of string items whose puts return once stored.
pub fn producer(client: &ZkClient, path: &str) -> QueueBuilder<String> {
    QueueBuilder::new(client, path, StringSerializer).put_in_background(false)
}

/// A builder of string items consumed by `recorder`.
pub fn consumer(client: &ZkClient, path: &str, recorder: &Recorder) -> QueueBuilder<String> {
    QueueBuilder::new(client, path, StringSerializer).consumer(recorder.clone())
}

/// A started consumer of `path` on each of `clients`, all consumed by
/// `recorder`; lock-safe with the lock path `locks` when given.
pub fn consumers_on(
    clients: &[ZkClient],
    path: &str,
    recorder: &Recorder,
    locks: Option<&str>,
) -> Vec<DistributedQueue<String>> {
    clients
        .iter()
        .map(|c| {
            let builder = consumer(c, path, recorder);
            let builder = match locks {
                Some(locks) => builder.lock_path(locks),
                None => builder,
            };
            builder.build_queue().unwrap()
        })
        .collect()
}
