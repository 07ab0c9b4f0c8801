//! The handles of the four queue kinds; each differs only in how items are
//! named when put.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::core::Core;
use super::{PutListener, QueueStats};
use crate::client::CreateMode;
use crate::error::{Error, Result};
use crate::naming::{delay_prefix, fix_id, id_prefix, is_item, parse_id, priority_prefix, QUEUE_PREFIX};
use crate::path;

/// Methods every kind shares, documented once here.
macro_rules! common_methods {
    ($kind:ident) => {
        impl<T: Send + 'static> $kind<T> {
            pub(crate) fn from_core(core: Arc<Core<T>>) -> Self {
                $kind { core }
            }

            /// Creates the queue's nodes (queue, lock and dead-letter paths)
            /// and starts its threads: the consumer, if it has one, and the
            /// put thread for background puts.
            ///
            /// # Errors
            /// [`Error::InvalidState`] if started before or closed; ZooKeeper
            /// errors creating the nodes; [`Error::NotAuthorized`] for a queue
            /// with a consumer whose client may not read the queue node
            /// (ZooKeeper checks no ACL when a node exists, so this is
            /// read once here rather than met at the first scan).
            ///
            /// ```no_run
            /// # fn main() -> Result<(), zk_queue::Error> {
            /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
            /// # let client = ZkClient::connect("127.0.0.1:2181")?;
            /// # let queue = QueueBuilder::new(&client, "/jobs", StringSerializer).build_queue()?;
            /// queue.start()?;
            /// # Ok(())
            /// # }
            /// ```
            pub fn start(&self) -> Result<()> {
                self.core.start()
            }

            /// Waits for background puts, stops claiming items, and waits for
            /// items being consumed, all within the final-flush time. Also
            /// done on drop. A closed queue cannot restart.
            ///
            /// ```no_run
            /// # fn main() -> Result<(), zk_queue::Error> {
            /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
            /// # let client = ZkClient::connect("127.0.0.1:2181")?;
            /// # let queue = QueueBuilder::new(&client, "/jobs", StringSerializer).build_queue()?;
            /// queue.start()?;
            /// queue.close();
            /// # Ok(())
            /// # }
            /// ```
            pub fn close(&self) {
                self.core.close()
            }

            /// Waits until every background put has finished (stored or
            /// failed); `false` if some are still pending after `timeout`.
            ///
            /// ```no_run
            /// # fn main() -> Result<(), zk_queue::Error> {
            /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
            /// # let client = ZkClient::connect("127.0.0.1:2181")?;
            /// # let queue = QueueBuilder::new(&client, "/jobs", StringSerializer).build_queue()?;
            /// use std::time::Duration;
            /// if !queue.flush_puts(Duration::from_secs(5))? {
            ///     eprintln!("some puts are still pending");
            /// }
            /// # Ok(())
            /// # }
            /// ```
            pub fn flush_puts(&self, timeout: Duration) -> Result<bool> {
                Ok(self.core.wait_pending(Instant::now().checked_add(timeout)))
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
                self.core.add_listener(Arc::new(listener))
            }

            /// The queue node's path.
            ///
            /// ```no_run
            /// # fn main() -> Result<(), zk_queue::Error> {
            /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
            /// # let client = ZkClient::connect("127.0.0.1:2181")?;
            /// # let queue = QueueBuilder::new(&client, "/jobs", StringSerializer).build_queue()?;
            /// assert_eq!(queue.path(), "/jobs");
            /// # Ok(())
            /// # }
            /// ```
            pub fn path(&self) -> &str {
                &self.core.path
            }

            /// What this handle has done since it was built: items put,
            /// claimed, consumed, requeued, dead-lettered, and how many are
            /// being consumed now. A snapshot, read without waiting.
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
            /// queue.start()?;
            /// let stats = queue.stats();
            /// println!(
            ///     "{} consumed, {} failed, {} in flight, {} waiting",
            ///     stats.consumed,
            ///     stats.consumer_errors,
            ///     stats.in_flight,
            ///     queue.depth()?
            /// );
            /// # Ok(())
            /// # }
            /// ```
            pub fn stats(&self) -> QueueStats {
                self.core.counters.snapshot()
            }

            /// How many items the queue node holds now, counted afresh with
            /// one listing: children named as Curator's queue items, whoever
            /// put them, including items being consumed (locked, not yet
            /// deleted) and delayed items not yet due; other children are not
            /// counted. A multi-item node counts once. 0 if the queue node
            /// does not exist.
            ///
            /// # Errors
            /// ZooKeeper errors listing the queue node.
            ///
            /// ```no_run
            /// # fn main() -> Result<(), zk_queue::Error> {
            /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
            /// # let client = ZkClient::connect("127.0.0.1:2181")?;
            /// # let queue = QueueBuilder::new(&client, "/jobs", StringSerializer).build_queue()?;
            /// println!("{} items waiting", queue.depth()?);
            /// # Ok(())
            /// # }
            /// ```
            pub fn depth(&self) -> Result<usize> {
                match self.core.client.get_children(&self.core.path) {
                    Ok((names, _)) => Ok(names.iter().filter(|n| is_item(n)).count()),
                    Err(Error::NoNode { .. }) => Ok(0),
                    Err(e) => Err(e),
                }
            }

            /// How long the item next in line has waited: this machine's
            /// clock minus the item's creation time on the server (so clock
            /// skew between them shifts it). `None` for an empty queue.
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
                self.core.oldest_age()
            }
        }

        impl<T> Drop for $kind<T> {
            fn drop(&mut self) {
                self.core.close();
            }
        }

        impl<T> std::fmt::Debug for $kind<T> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($kind))
                    .field("path", &self.core.path)
                    .finish()
            }
        }
    };
}

/// Generates a kind's `put` family for a naming argument.
macro_rules! put_methods {
    ($kind:ident, $($arg:ident: $ty:ty),* => $prefix:expr) => {
        impl<T: Send + 'static> $kind<T> {
            /// Puts one item; on a full bounded queue, waits for space. See
            /// the type's docs for an example.
            ///
            /// The item's node carries a random token after its frame, which
            /// Curator peers ignore. If a dropped connection loses the reply
            /// to the create, the queue's newest items are read back: a put
            /// found there is reported stored, one not found is sent again.
            /// So a lost reply neither stores the item twice nor reports it
            /// failed, unless a consumer took it before the read-back (then
            /// it is stored again: a duplicate, never a loss).
            ///
            /// ``` no_run
            /// # fn main() -> Result<(), zk_queue::Error> {
            /// # use std::time::{Duration, SystemTime};
            /// # use zk_queue::{DeliverAt, QueueBuilder, StringSerializer, ZkClient};
            /// # let client = ZkClient::connect("127.0.0.1:2181")?;
            /// # let queue = QueueBuilder::new(&client, "/jobs", StringSerializer).build_queue()?;
            /// # let priority = QueueBuilder::new(&client, "/tasks", StringSerializer).build_priority_queue(0)?;
            /// # let delay = QueueBuilder::new(&client, "/reminders", StringSerializer).build_delay_queue()?;
            /// # let ids = QueueBuilder::new(&client, "/orders", StringSerializer).build_id_queue()?;
            /// # let soon = DeliverAt::from(SystemTime::now() + Duration::from_secs(60));
            /// # let job = || "job".to_string();
            /// // Each kind takes its naming argument after the item:
            /// queue.put(job())?;
            /// priority.put(job(), 5)?;
            /// delay.put(job(), soon)?;
            /// ids.put(job(), "job-1")?;
            /// # Ok(())
            /// # }
            /// ```
            pub fn put(&self, item: T $(, $arg: $ty)*) -> Result<()> {
                self.core.put_items(&$prefix, vec![item], None).map(|_| ())
            }

            /// Puts one item, waiting at most `timeout` for space in a bounded
            /// queue (a true deadline: unrelated changes do not restart it);
            /// `false` if the queue stayed full. The deadline also ends the
            /// retries of a put sent while the connection is down: then it
            /// fails with [`Error::Timeout`](crate::Error::Timeout), at most
            /// one request timeout after `timeout`, and the item may or may
            /// not have been stored.
            ///
            /// ``` no_run
            /// # fn main() -> Result<(), zk_queue::Error> {
            /// # use std::time::{Duration, SystemTime};
            /// # use zk_queue::{DeliverAt, QueueBuilder, StringSerializer, ZkClient};
            /// # let client = ZkClient::connect("127.0.0.1:2181")?;
            /// # let queue = QueueBuilder::new(&client, "/jobs", StringSerializer).build_queue()?;
            /// # let priority = QueueBuilder::new(&client, "/tasks", StringSerializer).build_priority_queue(0)?;
            /// # let delay = QueueBuilder::new(&client, "/reminders", StringSerializer).build_delay_queue()?;
            /// # let ids = QueueBuilder::new(&client, "/orders", StringSerializer).build_id_queue()?;
            /// # let soon = DeliverAt::from(SystemTime::now() + Duration::from_secs(60));
            /// # let job = || "job".to_string();
            /// let wait = Duration::from_secs(5);
            /// if !queue.put_timeout(job(), wait)? {
            ///     eprintln!("the queue stayed full");
            /// }
            /// // the other kinds take their naming argument before the timeout:
            /// priority.put_timeout(job(), 5, wait)?;
            /// delay.put_timeout(job(), soon, wait)?;
            /// ids.put_timeout(job(), "job-1", wait)?;
            /// # Ok(())
            /// # }
            /// ```
            pub fn put_timeout(&self, item: T $(, $arg: $ty)*, timeout: Duration) -> Result<bool> {
                self.core.put_items(&$prefix, vec![item], Instant::now().checked_add(timeout))
            }

            /// Puts several items in one node; consumers get them one by one,
            /// in order. They count as one item toward `max_items`. An empty
            /// list is refused with [`Error::InvalidArgument`](crate::Error::InvalidArgument)
            /// before anything is sent.
            ///
            /// ``` no_run
            /// # fn main() -> Result<(), zk_queue::Error> {
            /// # use std::time::{Duration, SystemTime};
            /// # use zk_queue::{DeliverAt, QueueBuilder, StringSerializer, ZkClient};
            /// # let client = ZkClient::connect("127.0.0.1:2181")?;
            /// # let queue = QueueBuilder::new(&client, "/jobs", StringSerializer).build_queue()?;
            /// # let priority = QueueBuilder::new(&client, "/tasks", StringSerializer).build_priority_queue(0)?;
            /// # let delay = QueueBuilder::new(&client, "/reminders", StringSerializer).build_delay_queue()?;
            /// # let ids = QueueBuilder::new(&client, "/orders", StringSerializer).build_id_queue()?;
            /// # let soon = DeliverAt::from(SystemTime::now() + Duration::from_secs(60));
            /// # let job = || "job".to_string();
            /// let jobs = || vec![job(), job()];
            /// queue.put_multi(jobs())?;
            /// priority.put_multi(jobs(), 5)?;
            /// delay.put_multi(jobs(), soon)?;
            /// ids.put_multi(jobs(), "batch-1")?;
            /// # Ok(())
            /// # }
            /// ```
            pub fn put_multi(&self, items: Vec<T> $(, $arg: $ty)*) -> Result<()> {
                self.core.put_items(&$prefix, items, None).map(|_| ())
            }

            /// [`put_multi`](Self::put_multi) with a deadline, as
            /// [`put_timeout`](Self::put_timeout).
            ///
            /// ``` no_run
            /// # fn main() -> Result<(), zk_queue::Error> {
            /// # use std::time::{Duration, SystemTime};
            /// # use zk_queue::{DeliverAt, QueueBuilder, StringSerializer, ZkClient};
            /// # let client = ZkClient::connect("127.0.0.1:2181")?;
            /// # let queue = QueueBuilder::new(&client, "/jobs", StringSerializer).build_queue()?;
            /// # let priority = QueueBuilder::new(&client, "/tasks", StringSerializer).build_priority_queue(0)?;
            /// # let delay = QueueBuilder::new(&client, "/reminders", StringSerializer).build_delay_queue()?;
            /// # let ids = QueueBuilder::new(&client, "/orders", StringSerializer).build_id_queue()?;
            /// # let soon = DeliverAt::from(SystemTime::now() + Duration::from_secs(60));
            /// # let job = || "job".to_string();
            /// let (jobs, wait) = (|| vec![job(), job()], Duration::from_secs(5));
            /// assert!(queue.put_multi_timeout(jobs(), wait)?);
            /// priority.put_multi_timeout(jobs(), 5, wait)?;
            /// delay.put_multi_timeout(jobs(), soon, wait)?;
            /// ids.put_multi_timeout(jobs(), "batch-1", wait)?;
            /// # Ok(())
            /// # }
            /// ```
            pub fn put_multi_timeout(&self, items: Vec<T> $(, $arg: $ty)*, timeout: Duration) -> Result<bool> {
                self.core.put_items(&$prefix, items, Instant::now().checked_add(timeout))
            }
        }
    };
}

/// A FIFO queue of Curator's `DistributedQueue` format (`queue-<seq>` nodes
/// holding item frames); made by [`QueueBuilder::build_queue`](crate::QueueBuilder::build_queue).
///
/// See the [crate docs](crate#delivery-guarantees) for its guarantees.
///
/// ```no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
/// let client = ZkClient::connect("127.0.0.1:2181")?;
/// let queue = QueueBuilder::new(&client, "/jobs", StringSerializer).build_queue()?;
/// queue.start()?;
/// queue.put("one".to_string())?;
/// queue.put_multi(vec!["two".to_string(), "three".to_string()])?;
/// queue.flush_puts(std::time::Duration::from_secs(5))?;
/// queue.close();
/// # Ok(())
/// # }
/// ```
pub struct DistributedQueue<T> {
    core: Arc<Core<T>>,
}
common_methods!(DistributedQueue);
put_methods!(DistributedQueue, => QUEUE_PREFIX);

/// A priority queue of Curator's `DistributedPriorityQueue` format: lower
/// priorities first, equal priorities in put order; made by
/// [`QueueBuilder::build_priority_queue`](crate::QueueBuilder::build_priority_queue).
///
/// ```no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
/// let client = ZkClient::connect("127.0.0.1:2181")?;
/// let queue = QueueBuilder::new(&client, "/tasks", StringSerializer).build_priority_queue(0)?;
/// queue.start()?;
/// queue.put("later".to_string(), 10)?;
/// queue.put("urgent".to_string(), -5)?;
/// # Ok(())
/// # }
/// ```
pub struct PriorityQueue<T> {
    core: Arc<Core<T>>,
}
common_methods!(PriorityQueue);
put_methods!(PriorityQueue, priority: i32 => priority_prefix(priority));

/// A delay queue of Curator's `DistributedDelayQueue` format: each item is
/// delivered once its time has come (by the consumer's clock), earliest
/// first, equal times in put order; made by
/// [`QueueBuilder::build_delay_queue`](crate::QueueBuilder::build_delay_queue).
///
/// ```no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// use std::time::{Duration, SystemTime};
/// use zk_queue::{DeliverAt, QueueBuilder, StringSerializer, ZkClient};
/// let client = ZkClient::connect("127.0.0.1:2181")?;
/// let queue = QueueBuilder::new(&client, "/reminders", StringSerializer).build_delay_queue()?;
/// queue.start()?;
/// queue.put("in a minute".to_string(), DeliverAt::from(SystemTime::now() + Duration::from_secs(60)))?;
/// queue.put("at an epoch".to_string(), DeliverAt::from_epoch_millis(1_900_000_000_000)?)?;
/// # Ok(())
/// # }
/// ```
pub struct DelayQueue<T> {
    core: Arc<Core<T>>,
}
common_methods!(DelayQueue);
put_methods!(DelayQueue, deliver_at: DeliverAt => delay_prefix(deliver_at.0));

/// When a [`DelayQueue`] item is due: epoch milliseconds, as Curator stores it.
///
/// ```
/// use std::time::{Duration, UNIX_EPOCH};
/// use zk_queue::DeliverAt;
/// let at = DeliverAt::from(UNIX_EPOCH + Duration::from_millis(1_700_000_000_000));
/// assert_eq!(at.epoch_millis(), 1_700_000_000_000);
/// assert!(DeliverAt::from_epoch_millis(0).is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct DeliverAt(i64);

impl DeliverAt {
    /// A due time in epoch milliseconds; it must be positive (as Curator requires).
    ///
    /// ```
    /// use zk_queue::DeliverAt;
    /// let at = DeliverAt::from_epoch_millis(1_900_000_000_000)?;
    /// assert_eq!(at.epoch_millis(), 1_900_000_000_000);
    /// assert!(DeliverAt::from_epoch_millis(-1).is_err());
    /// # Ok::<(), zk_queue::Error>(())
    /// ```
    pub fn from_epoch_millis(millis: i64) -> Result<DeliverAt> {
        if millis <= 0 {
            return Err(Error::InvalidArgument(format!(
                "a delivery time must be a positive epoch in milliseconds, not {millis}"
            )));
        }
        Ok(DeliverAt(millis))
    }

    /// The due time in epoch milliseconds.
    ///
    /// ```
    /// use std::time::{Duration, UNIX_EPOCH};
    /// use zk_queue::DeliverAt;
    /// let at = DeliverAt::from(UNIX_EPOCH + Duration::from_secs(2));
    /// assert_eq!(at.epoch_millis(), 2_000);
    /// ```
    pub fn epoch_millis(self) -> i64 {
        self.0
    }
}

impl From<SystemTime> for DeliverAt {
    /// Times before the epoch (or its first millisecond) count as due at once.
    fn from(time: SystemTime) -> DeliverAt {
        let millis = time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis());
        DeliverAt(i64::try_from(millis).unwrap_or(i64::MAX).max(1))
    }
}

/// A queue of items with ids, of Curator's `DistributedIdQueue` format: FIFO,
/// and items can be removed by id; made by
/// [`QueueBuilder::build_id_queue`](crate::QueueBuilder::build_id_queue).
///
/// Ids are stored with `/` and `|` replaced by `_`, as Curator does; unlike
/// Curator, [`remove`](Self::remove) applies the same replacement, so any id
/// that was put can be removed.
///
/// ```no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
/// let client = ZkClient::connect("127.0.0.1:2181")?;
/// let queue = QueueBuilder::new(&client, "/orders", StringSerializer).build_id_queue()?;
/// queue.start()?;
/// queue.put("ship it".to_string(), "order/42")?;
/// assert_eq!(queue.remove("order/42")?, 1);
/// # Ok(())
/// # }
/// ```
pub struct IdQueue<T> {
    core: Arc<Core<T>>,
}
common_methods!(IdQueue);
put_methods!(IdQueue, id: &str => checked_id_prefix(id)?);

fn checked_id_prefix(id: &str) -> Result<String> {
    if id.is_empty() {
        return Err(Error::InvalidArgument("an item id must not be empty".into()));
    }
    Ok(id_prefix(id))
}

impl<T: Send + 'static> IdQueue<T> {
    /// Removes every item with this id and returns how many were removed.
    /// Items a lock-safe consumer is processing are skipped (and logged):
    /// they are not removed and not counted.
    ///
    /// ``` no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = QueueBuilder::new(&client, "/orders", StringSerializer).build_id_queue()?;
    /// queue.start()?;
    /// queue.put("ship".to_string(), "order-7")?;
    /// queue.flush_puts(std::time::Duration::from_secs(5))?;
    /// assert_eq!(queue.remove("order-7")?, 1);
    /// # Ok(())
    /// # }
    /// ```
    pub fn remove(&self, id: &str) -> Result<usize> {
        let wanted = fix_id(id);
        let core = &self.core;
        let (names, _) = match core.client.get_children(&core.path) {
            Err(Error::NoNode { .. }) => return Ok(0),
            other => other?,
        };
        let (mut removed, mut held) = (0, 0);
        for name in names.iter().filter(|n| parse_id(n) == Some(wanted.as_str())) {
            let item = path::join(&core.path, name);
            let lock = match &core.options.lock_path {
                Some(lock_dir) => {
                    let lock = path::join(lock_dir, name);
                    match core
                        .client
                        .create_with_acl(&lock, b"", CreateMode::Ephemeral, &core.options.acl)
                    {
                        Ok(_) => Some(lock),
                        Err(Error::NodeExists { .. }) => {
                            held += 1;
                            continue;
                        }
                        Err(e) => return Err(e),
                    }
                }
                None => None,
            };
            match core.client.delete(&item, None) {
                Ok(()) => removed += 1,
                Err(Error::NoNode { .. }) => {}
                Err(e) => return Err(e),
            }
            if let Some(lock) = lock {
                match core.client.delete(&lock, None) {
                    Ok(()) | Err(Error::NoNode { .. }) => {}
                    Err(e) => log::warn!("cannot release lock {lock}: {e}"),
                }
            }
        }
        if held > 0 {
            log::info!(
                "{}: {held} item(s) with id {id:?} are being consumed and were not removed",
                core.path
            );
        }
        Ok(removed)
    }
}
