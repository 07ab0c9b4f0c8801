//! How a queue consumes: its consumer, lock path, threads, claim window and rescans.

use crate::queue::consumer::WithMeta;
use crate::queue::core::Consumer;
use crate::queue::pull::{self, ItemReceiver};
use crate::queue::{ConsumeError, ItemMeta, QueueConsumer};
use std::sync::Arc;
use std::time::Duration;

use super::QueueBuilder;

impl<T: Send + 'static> QueueBuilder<T> {
    /// The consumer of items. Defaults to none: a producer-only queue.
    ///
    /// ``` no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = QueueBuilder::new(&client, "/jobs", StringSerializer)
    ///     .consumer(|job: String| -> Result<(), zk_queue::ConsumeError> {
    ///         println!("got {job}");
    ///         Ok(())
    ///     })
    ///     .build_queue()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn consumer(mut self, consumer: impl QueueConsumer<T>) -> Self {
        self.consumer = Some(Consumer::Callback(Arc::new(consumer)));
        self
    }

    /// The consumer of items, a closure that also reads each item's
    /// [`ItemMeta`] (attempt, node name, priority, due time, id, put time);
    /// replaces any [`consumer`](Self::consumer). Defaults to none.
    ///
    /// ``` no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// use zk_queue::{ConsumeError, ItemMeta};
    /// let queue = QueueBuilder::new(&client, "/jobs", StringSerializer)
    ///     .lock_path("/jobs-locks")
    ///     .consumer_with_meta(|job: String, meta: &ItemMeta| -> Result<(), ConsumeError> {
    ///         println!("{job}, attempt {}", meta.attempt());
    ///         Ok(())
    ///     })
    ///     .build_queue()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn consumer_with_meta<F>(mut self, consumer: F) -> Self
    where
        F: Fn(T, &ItemMeta) -> std::result::Result<(), ConsumeError> + Send + Sync + 'static,
    {
        self.consumer = Some(Consumer::Callback(Arc::new(WithMeta(consumer))));
        self
    }

    /// Makes the consumer an [`ItemReceiver`](crate::ItemReceiver) that plain threads take items
    /// from, instead of a callback; replaces any [`consumer`](Self::consumer).
    /// Up to [`claim_window`](Self::claim_window) deliveries may be
    /// outstanding (taken, not yet settled) at once, over any number of
    /// threads; a take beyond that waits until one is settled (see
    /// [`ItemReceiver`](crate::ItemReceiver)).
    ///
    /// ``` no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let (builder, receiver) = QueueBuilder::new(&client, "/jobs", StringSerializer).pull_consumer();
    /// let queue = builder.build_queue()?;
    /// let job = receiver.take()?;
    /// println!("got {}", job.ack());
    /// # Ok(())
    /// # }
    /// ```
    pub fn pull_consumer(mut self) -> (Self, ItemReceiver<T>) {
        let (consumer, receiver) = pull::channel(self.client.downgrade());
        self.consumer = Some(Consumer::Pull(Arc::new(consumer)));
        (self, receiver)
    }

    /// Turns on lock-safe consumption: an item is claimed by creating the
    /// ephemeral lock node `<lock_path>/<item name>` and deleted only after
    /// the consumer returns `Ok` (at least once, nothing lost). Compatible with
    /// Curator's `lockPath`. Defaults to none: items are deleted before the
    /// consumer sees them (at most once).
    ///
    /// ``` no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = QueueBuilder::new(&client, "/jobs", StringSerializer).lock_path("/jobs-locks").build_queue()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn lock_path(mut self, lock_path: &str) -> Self {
        self.options.lock_path = Some(lock_path.to_owned());
        self
    }

    /// How many threads run a callback [`consumer`](Self::consumer): how
    /// many items are processed at once. 1 keeps FIFO order within this
    /// process. A [`pull_consumer`](Self::pull_consumer) has no threads of
    /// its own (its takers are the threads): building one with a count other
    /// than 1 fails with [`Error::InvalidArgument`](crate::Error::InvalidArgument). Defaults to 1.
    ///
    /// ``` no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = QueueBuilder::new(&client, "/jobs", StringSerializer)
    ///     .consumer(|job: String| -> Result<(), zk_queue::ConsumeError> {
    ///         println!("{job}");
    ///         Ok(())
    ///     })
    ///     .consumer_threads(8) // items processed in parallel, in no set order
    ///     .build_queue()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn consumer_threads(mut self, threads: usize) -> Self {
        self.options.consumer_threads = threads;
        self
    }

    /// How many items a consumer claims at once, with pipelined requests
    /// (their data read with one multi-read request per 64 items on
    /// ZooKeeper 3.6 and later), before handing them to its threads in
    /// order. Without a lock path,
    /// claimed items are already deleted, so a consumer that crashes loses up
    /// to this many, besides the items its threads were processing (at most
    /// once either way); the next window's items are read while a window's
    /// deletes commit, but claimed only once it is handed over. With a lock
    /// path, these are
    /// leases taken ahead: other consumers skip the items until they are
    /// acknowledged or released, and a consumer never holds more than this
    /// many leases at once (so a consumer that crashes or whose session
    /// expires redelivers at most this many nodes: the records of one
    /// `put_multi` share a node); one with a backlog that holds more than
    /// half this many waits, while its acknowledgements are on their way,
    /// for room for half of them before it locks more. For a
    /// [`pull_consumer`](Self::pull_consumer) it is also how many deliveries
    /// may be outstanding (taken and not yet settled) at once. 1 claims one
    /// item at a time. Defaults to 64.
    ///
    /// ``` no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = QueueBuilder::new(&client, "/jobs", StringSerializer).lock_path("/jobs-locks").claim_window(1).build_queue()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn claim_window(mut self, items: usize) -> Self {
        self.options.claim_window = items;
        self
    }

    /// How long an idle consumer waits on its watches before it lists the
    /// queue again anyway. A consumer wakes on every change it is told of;
    /// this covers the changes ZooKeeper never tells: it drops the event of
    /// a watch on a node whose ACL no longer lets this client read it, so a
    /// consumer whose access was taken away and given back would otherwise
    /// wait for the next reconnect. Each rescan is one listing. Defaults to
    /// 30 seconds; must not be zero.
    ///
    /// ``` no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// use std::time::Duration;
    /// let (builder, receiver) = QueueBuilder::new(&client, "/jobs", StringSerializer).pull_consumer();
    /// let queue = builder.rescan_interval(Duration::from_secs(5)).build_queue()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn rescan_interval(mut self, interval: Duration) -> Self {
        self.options.rescan_interval = interval;
        self
    }

    /// How often the queue's sampled gauges (`zk_queue_depth`,
    /// `zk_queue_in_flight`; see [`metrics`](crate::metrics)) are read: once
    /// when the queue is built, then every `interval`, each time with one
    /// `exists` request. Zero starts no sampler, and the gauges are not
    /// recorded. Defaults to 10 seconds.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// use std::time::Duration;
    /// let queue = QueueBuilder::new(&client, "/jobs", StringSerializer)
    ///     .metrics_interval(Duration::from_secs(30))
    ///     .build_queue()?;
    /// # Ok(())
    /// # }
    /// ```
    #[cfg(feature = "metrics")]
    #[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
    pub fn metrics_interval(mut self, interval: Duration) -> Self {
        self.metrics_interval = interval;
        self
    }
}
