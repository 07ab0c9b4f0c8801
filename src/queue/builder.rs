//! [`QueueBuilder`]: options shared by every Curator-compatible queue kind.

use std::sync::Arc;
use std::time::Duration;

use super::consumer::WithMeta;
use super::core::{Consumer, Core, Options};
use super::pull::{self, ItemReceiver};
use super::put::{Producer, PutMode};
use super::stats::QueueCounters;
use super::store::Store;
use super::{
    ConsumeError, DelayQueue, DistributedQueue, ErrorMode, IdQueue, ItemMeta, PriorityQueue, Queue, QueueConsumer,
    ShardPolicy, ShardedQueue,
};
use crate::client::{Acl, ZkClient};
use crate::codec::QueueSerializer;
use crate::error::{Error, Result};
use crate::naming::Kind;
use crate::path;
use crate::sync::{Backoff, Gate};

/// The default redelivery back-off: the first pause and the cap.
const DEFAULT_BACKOFF: (Duration, Duration) = (Duration::from_secs(1), Duration::from_secs(60));

/// Builds the queues of Curator's family; consuming setters, each documenting
/// its default.
///
/// ```no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// use std::time::Duration;
/// use zk_queue::{ConsumeError, ErrorMode, QueueBuilder, StringSerializer, ZkClient};
///
/// let client = ZkClient::connect("127.0.0.1:2181")?;
/// let queue = QueueBuilder::new(&client, "/jobs", StringSerializer)
///     .consumer(|job: String| -> Result<(), ConsumeError> {
///         println!("working on {job}");
///         Ok(())
///     })
///     .lock_path("/jobs-locks")
///     .error_mode(ErrorMode::Requeue)
///     .max_attempts(5)
///     .dead_letter_path("/jobs-dead")
///     .build_queue()?;
/// queue.put("resize 42".to_string())?;
/// # Ok(())
/// # }
/// ```
#[must_use = "a builder does nothing until one of its `build_*` methods is called"]
pub struct QueueBuilder<T> {
    client: ZkClient,
    path: String,
    serializer: Arc<dyn QueueSerializer<T>>,
    consumer: Option<Consumer<T>>,
    options: Options,
    /// The put path's settings, which the consumer engine never sees.
    puts: PutMode,
    error_mode_set: bool,
    put_in_background_set: bool,
    /// How often the metrics sampler reads the queue's gauges.
    #[cfg(feature = "metrics")]
    metrics_interval: Duration,
}

impl<T: Send + 'static> QueueBuilder<T> {
    /// A builder for a queue at `path` whose items `serializer` turns into
    /// bytes. Without a [`consumer`](Self::consumer) the queue only produces.
    ///
    /// ``` no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let producer = QueueBuilder::new(&client, "/jobs", StringSerializer).build_queue()?;
    /// producer.put("hello".to_string())?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn new(client: &ZkClient, path: &str, serializer: impl QueueSerializer<T>) -> QueueBuilder<T> {
        QueueBuilder {
            client: client.clone(),
            path: path.to_owned(),
            serializer: Arc::new(serializer),
            consumer: None,
            options: Options {
                lock_path: None,
                final_flush: Duration::from_secs(5),
                consumer_threads: 1,
                claim_window: 64,
                rescan_interval: Duration::from_secs(30),
                error_mode: ErrorMode::Requeue,
                max_attempts: None,
                redelivery_backoff: Backoff::new(DEFAULT_BACKOFF.0, DEFAULT_BACKOFF.1),
                min_items_before_refresh: 0,
                dead_letter_path: None,
                acl: client.default_acl().to_vec(),
                listing_gate: None,
            },
            puts: PutMode {
                max_items: None,
                in_background: true,
                coalesce: None,
            },
            error_mode_set: false,
            put_in_background_set: false,
            #[cfg(feature = "metrics")]
            metrics_interval: Duration::from_secs(10),
        }
    }

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

    /// Makes the consumer an [`ItemReceiver`] that plain threads take items
    /// from, instead of a callback; replaces any [`consumer`](Self::consumer).
    /// Up to [`claim_window`](Self::claim_window) deliveries may be
    /// outstanding (taken, not yet settled) at once, over any number of
    /// threads; a take beyond that waits until one is settled (see
    /// [`ItemReceiver`]).
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

    /// Bounds the queue: a put waits while it holds `max_items` items or more
    /// (counted afresh; several producers together may overshoot by up to one
    /// item each). Also makes puts foreground unless
    /// [`put_in_background`](Self::put_in_background) is set. Defaults to
    /// unbounded.
    ///
    /// ``` no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = QueueBuilder::new(&client, "/jobs", StringSerializer).max_items(100).build_queue()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn max_items(mut self, max_items: usize) -> Self {
        self.puts.max_items = Some(max_items);
        self
    }

    /// Whether `put` returns once the item is handed to the queue's put
    /// thread (`true`) or once it is stored (`false`). Results of background
    /// puts, failures included, reach the put listeners;
    /// [`flush_timeout`](Queue::flush_timeout) waits for them. Defaults to
    /// `true`, or `false` when [`max_items`](Self::max_items) is set.
    ///
    /// ``` no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = QueueBuilder::new(&client, "/jobs", StringSerializer)
    ///     .put_in_background(false) // `put` returns once the item is stored
    ///     .build_queue()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn put_in_background(mut self, background: bool) -> Self {
        self.puts.in_background = background;
        self.put_in_background_set = true;
        self
    }

    /// Whether single puts (`put`, `try_put`, `put_timeout`; the same
    /// priority or due time) made while the queue's put thread is writing
    /// are written together as one node, in Curator's multi-item frame (as
    /// [`put_multi`](super::Queue::put_multi) writes, and Curator's consumers
    /// read). A queue that is not busy writes each put at once, as without
    /// coalescing. Each put still gets its own result (background puts in
    /// the put listeners, foreground ones from `put`, which waits for its
    /// node); one thread's items keep their order. Id queues are not
    /// coalesced: an id names one item. What it changes for consumers: a
    /// node holds several items, so a lock-safe consumer's lock, a requeue
    /// and a crash concern the node's remaining items together. A node holds
    /// at most 1,024 items and 256 KiB. Defaults to `false`.
    ///
    /// ``` no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = QueueBuilder::new(&client, "/events", StringSerializer).coalesce_puts(true).build_queue()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn coalesce_puts(mut self, coalesce: bool) -> Self {
        self.puts.coalesce = coalesce.then(|| self.puts.coalesce.unwrap_or_default());
        self
    }

    /// With [`coalesce_puts`](Self::coalesce_puts), how long the put thread
    /// waits after a put for others to join its node: more items per node,
    /// each put up to `linger` later. Defaults to zero: nothing waits, and
    /// items gather only while a write is in flight. Turns coalescing on.
    ///
    /// ``` no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// use std::time::Duration;
    /// let queue = QueueBuilder::new(&client, "/events", StringSerializer)
    ///     .coalesce_linger(Duration::from_millis(2))
    ///     .build_queue()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn coalesce_linger(mut self, linger: Duration) -> Self {
        self.puts.coalesce = Some(linger);
        self
    }

    /// How long `close` waits for background puts and in-flight items to
    /// finish. Defaults to 5 seconds; zero does not wait.
    ///
    /// ``` no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// use std::time::Duration;
    /// let queue = QueueBuilder::new(&client, "/jobs", StringSerializer).final_flush(Duration::from_secs(30)).build_queue()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn final_flush(mut self, time: Duration) -> Self {
        self.options.final_flush = time;
        self
    }

    /// How many threads run a callback [`consumer`](Self::consumer): how
    /// many items are processed at once. 1 keeps FIFO order within this
    /// process. A [`pull_consumer`](Self::pull_consumer) has no threads of
    /// its own (its takers are the threads): building one with a count other
    /// than 1 fails with [`Error::InvalidArgument`]. Defaults to 1.
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
    /// once either way). With a lock path, these are
    /// leases taken ahead: other consumers skip the items until they are
    /// acknowledged or released, and a consumer never holds more than this
    /// many leases at once (so a consumer that crashes or whose session
    /// expires redelivers at most this many nodes: the records of one
    /// `put_multi` share a node). For a
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

    /// What happens to an item whose consumer returned an error; needs a
    /// [`lock_path`](Self::lock_path). Defaults to [`ErrorMode::Requeue`].
    ///
    /// ``` no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// use zk_queue::ErrorMode;
    /// let queue = QueueBuilder::new(&client, "/jobs", StringSerializer).lock_path("/jobs-locks").error_mode(ErrorMode::Delete).build_queue()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn error_mode(mut self, mode: ErrorMode) -> Self {
        self.options.error_mode = mode;
        self.error_mode_set = true;
        self
    }

    /// After this many failed deliveries a requeued item moves to the
    /// [`dead_letter_path`](Self::dead_letter_path) instead of looping. Needs
    /// a dead-letter path. Defaults to no limit (as Curator).
    ///
    /// ``` no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = QueueBuilder::new(&client, "/jobs", StringSerializer)
    ///     .lock_path("/jobs-locks")
    ///     .dead_letter_path("/jobs-dead")
    ///     .max_attempts(3)
    ///     .build_queue()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn max_attempts(mut self, attempts: u32) -> Self {
        self.options.max_attempts = Some(attempts);
        self
    }

    /// How long a failed item waits before it is delivered again (with
    /// [`ErrorMode::Requeue`]): after its n-th failure, a random pause between
    /// half and all of `initial` doubled n − 1 times, capped at `max`
    /// (exponential back-off with equal jitter). With `initial` zero a failed
    /// item is delivered again at once. Defaults to 1 second, capped at 60
    /// seconds.
    ///
    /// The requeued node records when it is due again after its frame, so the
    /// pause holds across consumers and crashes: this crate's consumers (with
    /// or without a lock path, callback or pull) leave it alone until then,
    /// each reading it once and waking for it when it is due, by its clock
    /// (as for delay queues). Curator's consumers, [`RawQueue`](crate::admin::RawQueue)
    /// and `zkq take` see an ordinary item and may take it earlier; that is
    /// correct, only sooner.
    ///
    /// # Errors
    /// The `build_*` methods fail with [`Error::InvalidArgument`] if `max` is
    /// less than `initial`.
    ///
    /// ``` no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// use std::time::Duration;
    /// let queue = QueueBuilder::new(&client, "/jobs", StringSerializer)
    ///     .lock_path("/jobs-locks")
    ///     .redelivery_backoff(Duration::from_millis(200), Duration::from_secs(10))
    ///     .build_queue()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn redelivery_backoff(mut self, initial: Duration, max: Duration) -> Self {
        self.options.redelivery_backoff = Backoff::new(initial, max);
        self
    }

    /// Where items go that cannot be consumed: undecodable items (byte for
    /// byte), and items that failed `max_attempts` times. Items there keep
    /// their name prefix (priority, due time or id) and their frame, so a
    /// queue on that path (this crate's or Curator's) reads them as the
    /// original items; after the frame each records why it died, when, and
    /// the queue and node it came from ([`DeadLetters::list`](crate::admin::DeadLetters::list)). It must not be
    /// the queue path, lie inside it, or be the lock path. Defaults to none:
    /// undecodable items are left in place and logged.
    ///
    /// ``` no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = QueueBuilder::new(&client, "/jobs", StringSerializer).lock_path("/jobs-locks").dead_letter_path("/jobs-dead").build_queue()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn dead_letter_path(mut self, path: &str) -> Self {
        self.options.dead_letter_path = Some(path.to_owned());
        self
    }

    /// The ACL of every node the queue creates: the queue node and any
    /// missing ancestors, the lock and dead-letter directories, item nodes,
    /// lock nodes, requeued items and items moved to the dead-letter path.
    /// Defaults to the client's default ACL
    /// ([`ZkClientBuilder::default_acl`](crate::ZkClientBuilder::default_acl)).
    ///
    /// ZooKeeper checks each node's own ACL (nothing is inherited), and a
    /// node that already exists keeps the ACL it has. A client whose
    /// identities the ACL does not allow can neither read, take, delete nor
    /// put items: each such call fails with [`Error::NotAuthorized`], and a
    /// consumer is told through [`QueueConsumer::error`] (or its
    /// [`ItemReceiver`]'s takes return the error) while the queue retries with
    /// back-off; nothing is deleted or left locked. Whether a node exists, and
    /// its [`Stat`](crate::client::Stat), stay visible to every client.
    ///
    /// Give the queue's own clients every permission: consuming lists and
    /// deletes items and creates and deletes lock nodes, and requeueing
    /// creates items. [`Acl::creator_all`] stands for the creating client's
    /// identities, so that client must have authenticated
    /// ([`ZkClientBuilder::add_auth`](crate::ZkClientBuilder::add_auth)).
    ///
    /// # Errors
    /// The `build_*` methods fail with [`Error::InvalidArgument`] for an empty
    /// ACL.
    ///
    /// ``` no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// use zk_queue::{QueueBuilder, StringSerializer, ZkClient, client::{Acl, Perms}};
    /// let client = ZkClient::builder("127.0.0.1:2181").add_auth("digest", b"worker:secret").connect()?;
    /// let queue = QueueBuilder::new(&client, "/jobs", StringSerializer)
    ///     .acl(vec![Acl::digest("worker", "secret", Perms::ALL)])
    ///     .build_queue()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn acl(mut self, acl: Vec<Acl>) -> Self {
        self.options.acl = acl;
        self
    }

    /// A plain FIFO queue (Curator's `buildQueue`), started: its nodes are
    /// created (queue, lock and dead-letter paths), and its consumer (if it
    /// has one) and its put thread (for background puts) run until it is
    /// closed or dropped.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] or [`Error::InvalidArgument`] for inconsistent
    /// options (see the setters), before any request; ZooKeeper errors
    /// creating the nodes; [`Error::NotAuthorized`] for a queue with a
    /// consumer whose client may not read the queue node (ZooKeeper checks no
    /// ACL when a node exists, so this is read once here rather than met at
    /// the first scan); [`Error::Spawn`] if a thread cannot be started. The
    /// other `build_*` methods fail the same way.
    ///
    /// ``` no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = QueueBuilder::new(&client, "/jobs", StringSerializer).build_queue()?;
    /// assert_eq!(queue.path(), "/jobs");
    /// # Ok(())
    /// # }
    /// ```
    pub fn build_queue(self) -> Result<DistributedQueue<T>> {
        self.build(Kind::Plain)
    }

    /// A priority queue (Curator's `buildPriorityQueue`): lower priorities
    /// first, equal priorities in put order. After
    /// `min_items_before_refresh` items of a listing, a consumer looks again
    /// for urgent items, so a new urgent item waits for at most that many
    /// beyond those already claimed (at least one item is processed per
    /// look, so a steady stream of puts cannot starve the consumer).
    ///
    /// A consumer learns the names of the items created since its listing
    /// from a persistent recursive watch on the queue (ZooKeeper 3.6 or
    /// later) and puts them into their places, so looking again does not
    /// list a deep backlog again; after a pass that left nothing behind
    /// (without a lock path), it takes the items created since instead of
    /// listing the queue at all. After a disconnection (ZooKeeper drops the
    /// watch's events meanwhile), when the queue node was deleted, at the
    /// [`rescan_interval`](Self::rescan_interval), and on servers without
    /// such watches, it lists the queue again instead, as Curator does. The
    /// watch reports every create and delete under the queue to each such
    /// consumer.
    ///
    /// ``` no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = QueueBuilder::new(&client, "/tasks", StringSerializer).build_priority_queue(10)?;
    /// queue.put("urgent".to_string(), -1)?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn build_priority_queue(self, min_items_before_refresh: usize) -> Result<PriorityQueue<T>> {
        let mut builder = self;
        builder.options.min_items_before_refresh = min_items_before_refresh;
        builder.build(Kind::Priority)
    }

    /// A delay queue (Curator's `buildDelayQueue`): items are delivered once
    /// their time has come, earliest first, equal times in put order.
    ///
    /// ``` no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// use std::time::{Duration, SystemTime};
    /// use zk_queue::DeliverAt;
    /// let queue = QueueBuilder::new(&client, "/reminders", StringSerializer).build_delay_queue()?;
    /// queue.put("later".to_string(), DeliverAt::from(SystemTime::now() + Duration::from_secs(60)))?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn build_delay_queue(self) -> Result<DelayQueue<T>> {
        self.build(Kind::Delay)
    }

    /// A queue of items with ids (Curator's `buildIdQueue`), FIFO, whose items
    /// can be removed by id.
    ///
    /// ``` no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = QueueBuilder::new(&client, "/orders", StringSerializer).build_id_queue()?;
    /// queue.put("ship".to_string(), "order-7")?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn build_id_queue(self) -> Result<IdQueue<T>> {
        if self.path.contains('|') {
            return Err(Error::InvalidPath {
                path: self.path,
                reason: "an id queue's path must not contain '|'",
            });
        }
        self.build(Kind::Id)
    }

    /// A sharded queue (Curator's `QueueSharder` layout): plain FIFO shards
    /// `queue-<UUID>` under this builder's path, each a queue built with
    /// this builder's settings, and a leader, elected at `leader_path` with
    /// Curator's `LeaderLatch` names, that adds a shard as `policy` says.
    /// Java `QueueSharder`s with the same paths share it. A lock path or a
    /// dead-letter path set here is the parent of each shard's own (a child
    /// named after the shard). See [`ShardedQueue`] for what puts and
    /// consumers do.
    ///
    /// ``` no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// use zk_queue::{QueueBuilder, ShardPolicy, StringSerializer, ZkClient};
    /// let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = QueueBuilder::new(&client, "/jobs", StringSerializer)
    ///     .build_sharded_queue("/jobs-leader", ShardPolicy::new().threshold(10_000))?;
    /// queue.put("job".to_string())?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// As [`build_queue`](Self::build_queue); also [`Error::InvalidArgument`]
    /// for a policy without room or time, or a leader path that is the
    /// queue path, inside it, or holds it. A [`pull_consumer`](Self::pull_consumer)'s
    /// receiver takes the items of every shard.
    pub fn build_sharded_queue(self, leader_path: &str, policy: ShardPolicy) -> Result<ShardedQueue<T>> {
        ShardedQueue::start(self, leader_path, policy)
    }

    /// This builder for the shard `shard` (a child of its path) of a sharded
    /// queue; a lock or dead-letter path becomes its child of that name. The
    /// shards' scanners list through `listing_gate`.
    pub(crate) fn for_shard(&self, shard: &str, listing_gate: &Arc<Gate>) -> QueueBuilder<T> {
        let mut options = self.options.clone();
        options.listing_gate = Some(Arc::clone(listing_gate));
        options.lock_path = options.lock_path.map(|p| path::join(&p, shard));
        options.dead_letter_path = options.dead_letter_path.map(|p| path::join(&p, shard));
        QueueBuilder {
            client: self.client.clone(),
            path: path::join(&self.path, shard),
            serializer: Arc::clone(&self.serializer),
            // A pull consumer's shards each get their own side of the one
            // receiver.
            consumer: match &self.consumer {
                Some(Consumer::Pull(pull)) => Some(Consumer::Pull(Arc::new(pull.sibling()))),
                other => other.clone(),
            },
            options,
            puts: self.puts,
            error_mode_set: self.error_mode_set,
            put_in_background_set: self.put_in_background_set,
            #[cfg(feature = "metrics")]
            metrics_interval: self.metrics_interval,
        }
    }

    /// The client, the path and the ACL a sharded queue's own nodes take.
    pub(crate) fn sharding_parts(&self) -> (&ZkClient, &str, &[Acl]) {
        (&self.client, &self.path, &self.options.acl)
    }

    /// Whether the items go to a pull receiver.
    pub(crate) fn pulls(&self) -> bool {
        matches!(self.consumer, Some(Consumer::Pull(_)))
    }

    /// Closes the pull receiver of a sharded queue, whose shards' sides of
    /// it do not (see `for_shard`).
    pub(crate) fn close_pull(&self) {
        if let Some(Consumer::Pull(pull)) = &self.consumer {
            pull.closing();
        }
    }

    fn build<K>(mut self, kind: Kind) -> Result<Queue<T, K>> {
        path::validate_queue_path(&self.path)?;
        let invalid = |what: &str| Err(Error::InvalidArgument(what.to_owned()));
        for (name, other) in [
            ("lock path", &self.options.lock_path),
            ("dead-letter path", &self.options.dead_letter_path),
        ] {
            let Some(other) = other else { continue };
            path::validate_queue_path(other)?;
            if path::is_at_or_under(other, &self.path) {
                return invalid(&format!("the {name} must not be the queue path or inside it"));
            }
        }
        if self.options.lock_path.is_some() && self.options.lock_path == self.options.dead_letter_path {
            // Dead letters are `queue-<seq>` nodes: there, each would pass for the
            // lock of the queue item of the same name, which then stays stuck.
            return invalid("the lock path and the dead-letter path must not be the same node");
        }
        if self.puts.max_items == Some(0) {
            return invalid("max items must be positive");
        }
        if self.options.claim_window == 0 {
            return invalid("claim window must be at least 1");
        }
        if self.options.rescan_interval.is_zero() {
            return invalid("the rescan interval must not be zero");
        }
        if self.options.consumer_threads == 0 {
            return invalid("consumer threads must be at least 1");
        }
        if self.pulls() && self.options.consumer_threads != 1 {
            return invalid("consumer threads do not apply to a pull consumer: its takers are its threads");
        }
        if self.options.max_attempts == Some(0) {
            return invalid("max attempts must be at least 1");
        }
        let (initial, max) = self.options.redelivery_backoff.bounds();
        if max < initial {
            return invalid("the redelivery back-off's cap must not be less than its first pause");
        }
        if self.options.max_attempts.is_some() && self.options.dead_letter_path.is_none() {
            return invalid("max attempts needs a dead-letter path");
        }
        if self.error_mode_set && self.options.lock_path.is_none() {
            return invalid("an error mode needs a lock path: without one, items are deleted before consumption");
        }
        if self.options.acl.is_empty() {
            return invalid("ACL must not be empty");
        }
        if self.puts.max_items.is_some() && !self.put_in_background_set {
            self.puts.in_background = false;
        }
        #[cfg(feature = "metrics")]
        let counters = Arc::new(QueueCounters::for_queue(&self.path, self.metrics_interval));
        #[cfg(not(feature = "metrics"))]
        let counters = Arc::new(QueueCounters::default());
        let store = Store::new(
            self.client.clone(),
            self.path.clone(),
            self.options.acl.clone(),
            Arc::clone(&counters),
        );
        let producer = Producer::new(
            store,
            Arc::clone(&self.serializer),
            kind,
            self.puts,
            Arc::clone(&counters),
        );
        let core = Arc::new(Core::new(
            self.client,
            self.path,
            kind,
            self.serializer,
            self.consumer,
            self.options,
            counters,
        ));
        // The handle closes the queue if starting fails half way.
        let queue = Queue::new(core, producer);
        queue.start()?;
        Ok(queue)
    }
}

impl<T> std::fmt::Debug for QueueBuilder<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueueBuilder")
            .field("path", &self.path)
            .field("consumer", &self.consumer.is_some())
            .field("options", &self.options)
            .field("puts", &self.puts)
            .finish()
    }
}
