//! Building: each kind's `build_*`, validating the options, and the parts a sharded queue borrows.

use crate::client::{Acl, ZkClient};
use crate::error::{Error, Result};
use crate::naming::Kind;
use crate::path;
use crate::queue::core::{Consumer, Core};
use crate::queue::put::Producer;
use crate::queue::stats::QueueCounters;
use crate::queue::store::Store;
use crate::queue::{DelayQueue, DistributedQueue, IdQueue, PriorityQueue, Queue};
use crate::sync::Gate;
use std::sync::Arc;

use super::QueueBuilder;

impl<T: Send + 'static> QueueBuilder<T> {
    /// A plain FIFO queue (Curator's `buildQueue`), started: its nodes are
    /// created (queue, lock and dead-letter paths), and its consumer (if it
    /// has one) and its put thread (for background puts) run until it is
    /// closed or dropped.
    ///
    /// # Errors
    /// [`Error::InvalidPath`](crate::Error::InvalidPath) or [`Error::InvalidArgument`](crate::Error::InvalidArgument) for inconsistent
    /// options (see the setters), before any request; ZooKeeper errors
    /// creating the nodes; [`Error::NotAuthorized`](crate::Error::NotAuthorized) for a queue with a
    /// consumer whose client may not read the queue node (ZooKeeper checks no
    /// ACL when a node exists, so this is read once here rather than met at
    /// the first scan); [`Error::Spawn`](crate::Error::Spawn) if a thread cannot be started. The
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
    /// look, so a steady stream of puts cannot starve the consumer). A
    /// consumer without a lock path and without others of this crate on
    /// the queue still claims whole windows
    /// ([`claim_window`](Self::claim_window)): it looks while it hands a
    /// window over, and hands urgent items ahead of the rest of the window.
    /// A lock-safe one, or one sharing the queue, ends a window where it
    /// looks.
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

    fn build<K>(self, kind: Kind) -> Result<Queue<T, K>> {
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
