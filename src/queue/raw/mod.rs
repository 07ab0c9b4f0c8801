//! [`RawQueue`]: a queue node of either layout, its items taken and deleted
//! as stored bytes, without a serializer.

use std::time::{Duration, Instant};

use crate::client::{Acl, ZkClient};
use crate::codec::FrameError;
use crate::error::Result;
use crate::inspect::{Death, ItemName, Layout, Listing};
use crate::path;
use crate::queue::lock_record::RecordedPaths;

mod lock;
mod purge;
mod take;

/// A queue node read and emptied item by item as stored bytes: the classic
/// recipe's `qn-` items or Curator's `queue-` item frames, of any kind,
/// detected from the children's names. This is what operator tools (`zkq`)
/// need: no serializer, no consumer threads, no lock.
///
/// Taking is at most once: an item node is read, then deleted at the version
/// read, and its records are returned only if that delete succeeded, so an
/// item another consumer takes meanwhile is never returned twice (and one
/// whose delete reply is lost is not returned at all). Items are taken in the
/// order the queue's consumers take them; a delay queue's items only once
/// they are due. Undecodable items are left where they are and reported.
///
/// Lock-safe consumers (this crate's or Curator's) lock the items they work
/// on under their lock path. Given that path ([`lock_path`](Self::lock_path)),
/// a `RawQueue` takes and purges only items it could lock itself the same
/// way, so it never takes an item such a consumer holds, and no such consumer
/// starts on an item it is taking. Without it, locks are not seen.
///
/// ```no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// use std::time::Duration;
/// use zk_queue::{ZkClient, admin::RawQueue};
///
/// let client = ZkClient::connect("127.0.0.1:2181")?;
/// let jobs = RawQueue::new(&client, "/jobs")?;
/// let taken = jobs.take_timeout(10, Duration::from_secs(5))?;
/// for item in &taken.items {
///     for record in &item.records {
///         println!("{}: {}", item.name.name, String::from_utf8_lossy(record));
///     }
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct RawQueue {
    client: ZkClient,
    path: String,
    layout: Option<Layout>,
    locks: Option<String>,
    /// The ACL of the locks it creates (and of a missing lock directory);
    /// `None`: the client's default.
    acl: Option<Vec<Acl>>,
}

/// What [`RawQueue::try_take`] and [`RawQueue::take_timeout`] took.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RawTaken {
    /// The items taken (each deleted from the queue), in the order taken.
    pub items: Vec<RawItem>,
    /// Items that could not be decoded and were left in the queue, each
    /// reported once per call.
    pub undecodable: Vec<Undecodable>,
    /// Names of items left in the queue because a lock-safe consumer held
    /// them (only with a [lock path](RawQueue::lock_path)), each reported
    /// once per call.
    pub held: Vec<String>,
}

impl RawTaken {
    /// The records of every item taken, in order.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let taken = zk_queue::admin::RawQueue::new(&client, "/jobs")?.try_take(5)?;
    /// let records: Vec<&[u8]> = taken.records().collect();
    /// # Ok(())
    /// # }
    /// ```
    pub fn records(&self) -> impl Iterator<Item = &[u8]> {
        self.items
            .iter()
            .flat_map(|item| item.records.iter().map(Vec::as_slice))
    }
}

/// One item node taken by a [`RawQueue`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RawItem {
    /// The item's node name, parsed.
    pub name: ItemName,
    /// Its records: one for a classic item or a `put`, several for a
    /// `put_multi`.
    pub records: Vec<Vec<u8>>,
    /// Failed deliveries recorded in it (always 0 for classic items).
    pub attempts: u32,
    /// Why it was moved to a dead-letter path, for a dead letter.
    pub death: Option<Death>,
}

/// An item a [`RawQueue`] left in place because its data does not decode.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Undecodable {
    /// The item's node name.
    pub name: String,
    /// Why it does not decode.
    pub error: FrameError,
}

/// What [`RawQueue::purge`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Purged {
    /// Items deleted.
    pub deleted: usize,
    /// Items left because a lock-safe consumer held them (only with a
    /// [lock path](RawQueue::lock_path)).
    pub held: usize,
}

impl RawQueue {
    /// A handle on the queue node `path`, whose layout is detected from its
    /// children at each call. Nothing is sent.
    ///
    /// # Errors
    /// [`Error::InvalidPath`](crate::Error::InvalidPath) as for a queue's path.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let jobs = zk_queue::admin::RawQueue::new(&client, "/jobs")?;
    /// assert_eq!(jobs.path(), "/jobs");
    /// # Ok(())
    /// # }
    /// ```
    pub fn new(client: &ZkClient, path: &str) -> Result<RawQueue> {
        path::validate_queue_path(path)?;
        Ok(RawQueue {
            client: client.clone(),
            path: path.to_owned(),
            layout: None,
            locks: None,
            acl: None,
        })
    }

    /// Uses `layout` instead of detecting it: the other layout's children
    /// are then foreign. Default: detected.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// use zk_queue::{inspect::Layout, admin::RawQueue};
    /// let jobs = RawQueue::new(&client, "/jobs")?.layout(Layout::Classic);
    /// # Ok(())
    /// # }
    /// ```
    pub fn layout(mut self, layout: Layout) -> RawQueue {
        self.layout = Some(layout);
        self
    }

    /// Takes and purges under the lock path `lock_path` of the queue's
    /// lock-safe consumers: an item whose lock node `<lock_path>/<item
    /// name>` exists is held and skipped ([`RawTaken::held`]); any other item
    /// is locked with an ephemeral node there, as those consumers lock it,
    /// before it is deleted with its lock. Default: no lock path, locks are
    /// not looked at.
    ///
    /// # Errors
    /// [`Error::InvalidPath`](crate::Error::InvalidPath) as for a queue's lock path.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let jobs = zk_queue::admin::RawQueue::new(&client, "/jobs")?.lock_path("/jobs-locks")?;
    /// let taken = jobs.try_take(10)?;
    /// println!("{} taken, {} held by consumers", taken.items.len(), taken.held.len());
    /// # Ok(())
    /// # }
    /// ```
    pub fn lock_path(mut self, lock_path: &str) -> Result<RawQueue> {
        path::validate_queue_path(lock_path)?;
        self.locks = Some(lock_path.to_owned());
        Ok(self)
    }

    /// The lock path that the queue's lock-safe consumers (built by
    /// [`QueueBuilder`](crate::QueueBuilder) with
    /// [`lock_path`](crate::QueueBuilder::lock_path)) recorded on the queue
    /// node, for [`lock_path`](Self::lock_path); `None` if none is recorded:
    /// no such consumer was built, or the queue node holds data of its own.
    /// Each consumer records it when it is built; the latest one's stands.
    /// Curator's lock-safe consumers record nothing: give their lock path to
    /// [`lock_path`](Self::lock_path) yourself.
    ///
    /// # Errors
    /// [`Error::NoNode`](crate::Error::NoNode) if the queue node does not
    /// exist; other ZooKeeper errors.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let mut jobs = zk_queue::admin::RawQueue::new(&client, "/jobs")?;
    /// if let Some(locks) = jobs.recorded_lock_path()? {
    ///     jobs = jobs.lock_path(&locks)?;
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn recorded_lock_path(&self) -> Result<Option<String>> {
        Ok(self.recorded_paths()?.lock_path)
    }

    /// The paths the queue's consumers (built by
    /// [`QueueBuilder`](crate::QueueBuilder) with a consumer) recorded on
    /// the queue node: their [lock path](crate::QueueBuilder::lock_path) as
    /// [`recorded_lock_path`](Self::recorded_lock_path) reads it, and their
    /// [dead-letter path](crate::QueueBuilder::dead_letter_path), for
    /// [`DeadLetters`](crate::admin::DeadLetters). Nothing is recorded if no
    /// such consumer was built, or the queue node holds data of its own.
    ///
    /// # Errors
    /// [`Error::NoNode`](crate::Error::NoNode) if the queue node does not
    /// exist; other ZooKeeper errors.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let jobs = zk_queue::admin::RawQueue::new(&client, "/jobs")?;
    /// if let Some(dead) = jobs.recorded_paths()?.dead_letter_path {
    ///     let waiting = zk_queue::admin::DeadLetters::new(&client, &dead)?.names()?.len();
    ///     println!("{waiting} dead letters under {dead}");
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn recorded_paths(&self) -> Result<RecordedPaths> {
        let (data, _) = self.client.get_data(&self.path)?;
        Ok(RecordedPaths::parse(&data).unwrap_or_default())
    }

    /// The queue node's path.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// println!("{}", zk_queue::admin::RawQueue::new(&client, "/jobs")?.path());
    /// # Ok(())
    /// # }
    /// ```
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The queue node's children now, split into items in consumption order
    /// and foreign names.
    ///
    /// # Errors
    /// [`Error::NoNode`](crate::Error::NoNode) if the queue node does not exist; other ZooKeeper
    /// errors.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let listing = zk_queue::admin::RawQueue::new(&client, "/jobs")?.listing()?;
    /// println!("{} {} items", listing.kind, listing.items.len());
    /// # Ok(())
    /// # }
    /// ```
    pub fn listing(&self) -> Result<Listing> {
        let (names, _) = self.client.get_children(&self.path)?;
        Ok(Listing::of(names, self.layout))
    }

    /// Takes items now, without waiting: whole item nodes, in order, until
    /// at least `max` records are taken or no item is left that is due and
    /// decodes. An item of several records (a `put_multi`) is taken whole,
    /// so more than `max` records can come back.
    ///
    /// # Errors
    /// [`Error::NoNode`](crate::Error::NoNode) if the queue node does not exist; other ZooKeeper
    /// errors (items taken before one are deleted and lost to this call's
    /// caller, as with any at-most-once take).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let taken = zk_queue::admin::RawQueue::new(&client, "/jobs")?.try_take(1)?;
    /// if taken.items.is_empty() {
    ///     println!("nothing to take");
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn try_take(&self, max: usize) -> Result<RawTaken> {
        take::run(self, max, None)
    }

    /// Like [`try_take`](Self::try_take), but waits up to `timeout` for
    /// items (or, in a delay queue, for them to come due) while fewer than
    /// `max` records are taken, woken by a watch on the queue node's
    /// children rather than by polling. Returns by the deadline whatever the
    /// server does, or up to one second after it when a connected server is
    /// late answering a read; what was taken before an error is returned,
    /// not dropped.
    ///
    /// # Errors
    /// As [`try_take`](Self::try_take).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// use std::time::Duration;
    /// let jobs = zk_queue::admin::RawQueue::new(&client, "/jobs")?;
    /// let taken = jobs.take_timeout(1, Duration::from_secs(2))?;
    /// println!("{} records", taken.records().count());
    /// # Ok(())
    /// # }
    /// ```
    pub fn take_timeout(&self, max: usize, timeout: Duration) -> Result<RawTaken> {
        take::run(self, max, Instant::now().checked_add(timeout))
    }

    /// Deletes every item (foreign children stay) and says how many were
    /// deleted; items taken by another client meanwhile are not counted.
    /// With a [lock path](Self::lock_path), items a lock-safe consumer holds
    /// stay and are counted as held. Requests are pipelined, a thousand at a
    /// time.
    ///
    /// # Errors
    /// [`Error::NoNode`](crate::Error::NoNode) if the queue node does not exist; otherwise the
    /// first ZooKeeper error deleting an item, after every item was tried.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let purged = zk_queue::admin::RawQueue::new(&client, "/jobs")?.purge()?;
    /// println!("{} deleted, {} held", purged.deleted, purged.held);
    /// # Ok(())
    /// # }
    /// ```
    pub fn purge(&self) -> Result<Purged> {
        purge::run(self, |_| true)
    }

    /// Like [`purge`](Self::purge), of the items `wanted` picks only.
    pub(crate) fn purge_where(&self, wanted: impl Fn(&ItemName) -> bool) -> Result<Purged> {
        purge::run(self, wanted)
    }

    /// Creates locks (and a missing lock directory) with `acl`, a queue's,
    /// instead of the client's default ACL.
    pub(crate) fn lock_acl(mut self, acl: Vec<Acl>) -> RawQueue {
        self.acl = Some(acl);
        self
    }

    /// The client.
    pub(crate) fn client(&self) -> &ZkClient {
        &self.client
    }
}
