//! Builders of the queues the tests use.

use zk_queue::{QueueBuilder, StringSerializer, ZkClient};

use super::recorder::Recorder;

/// A builder of string items whose puts return once stored.
pub fn producer(client: &ZkClient, path: &str) -> QueueBuilder<String> {
    QueueBuilder::new(client, path, StringSerializer).put_in_background(false)
}

/// A builder of string items consumed by `recorder`.
pub fn consumer(client: &ZkClient, path: &str, recorder: &Recorder) -> QueueBuilder<String> {
    QueueBuilder::new(client, path, StringSerializer).consumer(recorder.clone())
}
