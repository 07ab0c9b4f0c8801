//! [`Queue`]: the handle every queue kind shares.

use std::marker::PhantomData;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::core::Core;
use super::engine::Engine;
use super::put::Producer;
use super::{CloseReport, DeliverAt, PutListener, QueueStats};
use crate::error::{Error, PutError, Result};
use crate::naming::{is_item, Kind};
use crate::path;

/// A queue of Curator's family, built and started by a
/// [`QueueBuilder`](crate::QueueBuilder): what every kind shares is here,
/// and each kind `K` adds its own put family (see [`Fifo`](crate::kinds::Fifo),
/// [`Priority`](crate::kinds::Priority), [`Delay`](crate::kinds::Delay) and
/// [`Id`](crate::kinds::Id)). The aliases [`DistributedQueue`](crate::DistributedQueue),
/// [`PriorityQueue`](crate::PriorityQueue), [`DelayQueue`](crate::DelayQueue)
/// and [`IdQueue`](crate::IdQueue) name the four kinds as Curator does.
///
/// A handle is ready when built: its nodes exist, and its consumer (if it has
/// one) and its put thread (for background puts) run until it is closed or
/// dropped. See the [crate docs](crate#delivery-guarantees) for its guarantees.
///
/// ```no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// use zk_queue::{Queue, QueueBuilder, StringSerializer, ZkClient};
/// let client = ZkClient::connect("127.0.0.1:2181")?;
/// let queue = QueueBuilder::new(&client, "/jobs", StringSerializer).build_queue()?;
/// queue.put("one".to_string())?;
/// queue.put_multi(vec!["two".to_string(), "three".to_string()])?;
///
/// // Code that serves any kind takes the shared part:
/// fn report<T: Send + 'static, K>(queue: &Queue<T, K>) -> zk_queue::Result<()> {
///     println!("{} ({}): {} items", queue.path(), queue.kind(), queue.len()?);
///     Ok(())
/// }
/// report(&queue)?;
/// queue.close();
/// # Ok(())
/// # }
/// ```
pub struct Queue<T, K = crate::kinds::Fifo> {
    /// What the consumer engine shares: the node, the options, the counters.
    pub(super) core: Arc<Core<T>>,
    /// Where puts go, top-down: the producer, then its store.
    pub(super) producer: Producer<T>,
    kind: PhantomData<fn() -> K>,
}

impl<T: Send + 'static, K> Queue<T, K> {
    /// Put calls whose put ended (stored or failed).
    pub(crate) fn puts_ended(&self) -> u64 {
        self.core.counters.puts_ended.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// A handle on a queue not started yet: see [`start`](Self::start).
    pub(super) fn new(core: Arc<Core<T>>, producer: Producer<T>) -> Self {
        Queue {
            core,
            producer,
            kind: PhantomData,
        }
    }

    /// Creates the queue's nodes, starts its consumer engine and its put
    /// thread, and accepts puts; called once, by the builder. If it fails,
    /// closing the handle stops the threads it started.
    pub(super) fn start(&self) -> Result<()> {
        self.core.start(Engine::start)?;
        self.producer.start()?;
        log::info!("queue {} started", self.core.path);
        Ok(())
    }

    /// Waits for background puts, stops claiming items, and waits for
    /// items being consumed, all within the final-flush time
    /// ([`QueueBuilder::final_flush`](crate::QueueBuilder::final_flush),
    /// default 5 s), and reports what happened. Also done on drop.
    /// Background puts still pending then are logged at WARN with their
    /// count and returned in [`CloseReport::puts_pending`]. Puts on
    /// a closed queue fail with [`Error::QueueClosed`](crate::Error::QueueClosed),
    /// and so do takes from its pull receiver. Closing again does nothing and
    /// reports nothing.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = QueueBuilder::new(&client, "/jobs", StringSerializer).build_queue()?;
    /// queue.put("last".to_string())?;
    /// let report = queue.close();
    /// println!("{} items finished while closing", report.finished);
    /// # Ok(())
    /// # }
    /// ```
    pub fn close(&self) -> CloseReport {
        self.close_timeout(self.core.options.final_flush)
    }

    /// Like [`close`](Self::close), waiting at most `timeout` instead of the
    /// final-flush time.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use std::time::Duration;
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = QueueBuilder::new(&client, "/jobs", StringSerializer).build_queue()?;
    /// let report = queue.close_timeout(Duration::from_secs(30));
    /// assert!(report.is_complete() || report.still_running > 0 || report.puts_pending > 0);
    /// # Ok(())
    /// # }
    /// ```
    pub fn close_timeout(&self, timeout: Duration) -> CloseReport {
        let deadline =
            deadline_in(timeout).unwrap_or_else(|| Instant::now() + Duration::from_secs(u64::from(u32::MAX)));
        self.close_until(deadline)
    }

    /// Waits until every background put has finished (stored or failed);
    /// `false` if some are still pending after `timeout`, and `false` (once)
    /// if a background put failed since the last put or flush that reported
    /// a failure. Their outcomes reach the put listeners. Without
    /// [`put_in_background`](crate::QueueBuilder::put_in_background) there
    /// is nothing to wait for: every put returned once stored or failed.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// # let queue = QueueBuilder::new(&client, "/jobs", StringSerializer).build_queue()?;
    /// use std::time::Duration;
    /// if !queue.flush_timeout(Duration::from_secs(5)) {
    ///     eprintln!("some puts are still pending, or failed");
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn flush_timeout(&self, timeout: Duration) -> bool {
        self.producer.flush(deadline_in(timeout))
    }

    /// Waits up to `timeout` for background puts to finish, as
    /// [`flush_timeout`](Self::flush_timeout) but reporting no failure.
    pub(crate) fn settle_puts(&self, timeout: Duration) -> bool {
        self.producer.settle(deadline_in(timeout))
    }

    /// Adds a listener told of every put's outcome.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// # let queue = QueueBuilder::new(&client, "/jobs", StringSerializer).build_queue()?;
    /// struct Log;
    /// impl zk_queue::PutListener<String> for Log {
    ///     fn put_failed(&self, items: &[String], error: &zk_queue::Error) {
    ///         eprintln!("lost {} item(s): {error}", items.len());
    ///     }
    /// }
    /// queue.add_put_listener(Log);
    /// # Ok(())
    /// # }
    /// ```
    pub fn add_put_listener(&self, listener: impl PutListener<T>) {
        self.producer.add_listener(Arc::new(listener))
    }

    /// The queue node's path.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = QueueBuilder::new(&client, "/jobs", StringSerializer).build_queue()?;
    /// assert_eq!(queue.path(), "/jobs");
    /// # Ok(())
    /// # }
    /// ```
    pub fn path(&self) -> &str {
        &self.core.path
    }

    /// How this queue names and orders its items.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient, inspect::Kind};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = QueueBuilder::new(&client, "/tasks", StringSerializer).build_priority_queue(10)?;
    /// assert_eq!(queue.kind(), Kind::Priority);
    /// # Ok(())
    /// # }
    /// ```
    pub fn kind(&self) -> Kind {
        self.core.kind
    }

    /// What this handle has done since it was built: items put, claimed,
    /// consumed, requeued, dead-lettered, and how many are being consumed
    /// now. A snapshot, read without waiting.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = QueueBuilder::new(&client, "/jobs", StringSerializer)
    ///     .consumer(|job: String| -> Result<(), zk_queue::ConsumeError> {
    ///         println!("{job}");
    ///         Ok(())
    ///     })
    ///     .build_queue()?;
    /// let stats = queue.stats();
    /// println!(
    ///     "{} consumed, {} failed, {} in flight, {} waiting",
    ///     stats.consumed,
    ///     stats.consumer_errors,
    ///     stats.in_flight,
    ///     queue.len()?
    /// );
    /// # Ok(())
    /// # }
    /// ```
    pub fn stats(&self) -> QueueStats {
        self.core.counters.snapshot()
    }

    /// How many items the queue node holds now, counted afresh with one
    /// listing: children named as Curator's queue items, whoever put them,
    /// including items being consumed (locked, not yet deleted) and delayed
    /// items not yet due; other children are not counted. A multi-item node
    /// counts once. 0 if the queue node does not exist.
    ///
    /// # Errors
    /// ZooKeeper errors listing the queue node.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// # let queue = QueueBuilder::new(&client, "/jobs", StringSerializer).build_queue()?;
    /// println!("{} items waiting", queue.len()?);
    /// # Ok(())
    /// # }
    /// ```
    pub fn len(&self) -> Result<usize> {
        match self.core.client.get_children(&self.core.path) {
            Ok((names, _)) => Ok(names.iter().filter(|n| is_item(n)).count()),
            Err(Error::NoNode { .. }) => Ok(0),
            Err(e) => Err(e),
        }
    }

    /// Whether [`len`](Self::len) is zero.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// # let queue = QueueBuilder::new(&client, "/jobs", StringSerializer).build_queue()?;
    /// if queue.is_empty()? {
    ///     println!("idle");
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }

    /// How long the item next in line has waited: this machine's clock
    /// minus the item's creation time on the server (so clock skew between
    /// them shifts it). `None` for an empty queue.
    ///
    /// # Errors
    /// ZooKeeper errors listing the queue or reading the item.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// # let queue = QueueBuilder::new(&client, "/jobs", StringSerializer).build_queue()?;
    /// if let Some(age) = queue.oldest_age()? {
    ///     println!("the oldest item has waited {age:?}");
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn oldest_age(&self) -> Result<Option<Duration>> {
        let core = &self.core;
        let mut names = match core.client.get_children(&core.path) {
            Ok((names, _)) => names,
            Err(Error::NoNode { .. }) => return Ok(None),
            Err(e) => return Err(e),
        };
        names.retain(|n| is_item(n));
        core.kind.sort(&mut names);
        for name in names {
            // The head may be consumed meanwhile: look at the next one then.
            if let Some(stat) = core.client.exists(&path::join(&core.path, &name))? {
                let age = DeliverAt::now().epoch_millis() - stat.ctime;
                return Ok(Some(Duration::from_millis(age.max(0).unsigned_abs())));
            }
        }
        Ok(None)
    }
}

impl<T: Send + 'static, K> Queue<T, K> {
    /// Puts one item under `prefix`: the one path of every kind's put family.
    pub(super) fn put_one(
        &self,
        prefix: &str,
        item: T,
        deadline: Option<Instant>,
    ) -> std::result::Result<(), PutError<T>> {
        self.producer
            .put(prefix, [item], deadline)
            .map_err(|e| e.map(|[item]| item))
    }

    /// Puts several items in one node under `prefix`.
    pub(super) fn put_many(
        &self,
        prefix: &str,
        items: Vec<T>,
        deadline: Option<Instant>,
    ) -> std::result::Result<(), PutError<Vec<T>>> {
        self.producer.put(prefix, items, deadline)
    }
}

/// The deadline of a close waiting `timeout`: far away if it overflows.
fn close_deadline(timeout: Duration) -> Instant {
    let now = Instant::now();
    deadline_in(timeout).unwrap_or_else(|| now + Duration::from_secs(u64::from(u32::MAX)))
}

/// The deadline `timeout` from now; `None` (no deadline) if it overflows.
pub(super) fn deadline_in(timeout: Duration) -> Option<Instant> {
    Instant::now().checked_add(timeout)
}

impl<T, K> Queue<T, K> {
    /// Flushes puts, stops claiming, waits for in-flight items, all by
    /// `deadline`.
    fn close_until(&self, deadline: Instant) -> CloseReport {
        let Some(started) = self.producer.shut() else {
            return CloseReport::default();
        };
        let before = self.core.counters.snapshot();
        // A queue whose start failed has no puts to wait for, but may have
        // threads to stop.
        let puts_pending = self.producer.finish(started, deadline);
        self.core.stop(deadline);
        self.producer.forget_listeners();
        let report = CloseReport::between(&before, &self.core.counters.snapshot(), puts_pending);
        log::info!("queue {} closed: {report:?}", self.core.path);
        report
    }
}

impl<T, K> Drop for Queue<T, K> {
    fn drop(&mut self) {
        let _ = self.close_until(close_deadline(self.core.options.final_flush));
    }
}

impl<T, K> std::fmt::Debug for Queue<T, K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queue")
            .field("path", &self.core.path)
            .field("kind", &self.core.kind)
            .finish()
    }
}
