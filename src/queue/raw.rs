//! [`RawQueue`]: a queue node of either layout, its items taken and deleted
//! as stored bytes, without a serializer.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use crate::client::ZkClient;
use crate::codec::FrameError;
use crate::error::{Error, Result};
use crate::inspect::{decode_item, ItemName, Kind, Layout, Listing};
use crate::path;
use crate::DeliverAt;

/// Deletes per pipelined batch when purging.
const PURGE_CHUNK: usize = 1_000;

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
/// ```no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// use std::time::Duration;
/// use zk_queue::{RawQueue, ZkClient};
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
}

impl RawTaken {
    /// The records of every item taken, in order.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let taken = zk_queue::RawQueue::new(&client, "/jobs")?.try_take(5)?;
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

impl RawQueue {
    /// A handle on the queue node `path`, whose layout is detected from its
    /// children at each call. Nothing is sent.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] as for a queue's path.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let jobs = zk_queue::RawQueue::new(&client, "/jobs")?;
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
        })
    }

    /// Uses `layout` instead of detecting it: the other layout's children
    /// are then foreign. Default: detected.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// use zk_queue::{inspect::Layout, RawQueue};
    /// let jobs = RawQueue::new(&client, "/jobs")?.layout(Layout::Classic);
    /// # Ok(())
    /// # }
    /// ```
    pub fn layout(mut self, layout: Layout) -> RawQueue {
        self.layout = Some(layout);
        self
    }

    /// The queue node's path.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// println!("{}", zk_queue::RawQueue::new(&client, "/jobs")?.path());
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
    /// [`Error::NoNode`] if the queue node does not exist; other ZooKeeper
    /// errors.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let listing = zk_queue::RawQueue::new(&client, "/jobs")?.listing()?;
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
    /// [`Error::NoNode`] if the queue node does not exist; other ZooKeeper
    /// errors (items taken before one are deleted and lost to this call's
    /// caller, as with any at-most-once take).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let taken = zk_queue::RawQueue::new(&client, "/jobs")?.try_take(1)?;
    /// if taken.items.is_empty() {
    ///     println!("nothing to take");
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn try_take(&self, max: usize) -> Result<RawTaken> {
        self.take_until(max, None)
    }

    /// Like [`try_take`](Self::try_take), but waits up to `timeout` for
    /// items (or, in a delay queue, for them to come due) while fewer than
    /// `max` records are taken, woken by a watch on the queue node's
    /// children rather than by polling.
    ///
    /// # Errors
    /// As [`try_take`](Self::try_take).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// use std::time::Duration;
    /// let jobs = zk_queue::RawQueue::new(&client, "/jobs")?;
    /// let taken = jobs.take_timeout(1, Duration::from_secs(2))?;
    /// println!("{} records", taken.records().count());
    /// # Ok(())
    /// # }
    /// ```
    pub fn take_timeout(&self, max: usize, timeout: Duration) -> Result<RawTaken> {
        self.take_until(max, Some(Instant::now() + timeout))
    }

    /// Deletes every item (foreign children stay) and returns how many were
    /// deleted; items taken by another client meanwhile are not counted.
    /// Deletes are pipelined, a thousand at a time.
    ///
    /// # Errors
    /// [`Error::NoNode`] if the queue node does not exist; otherwise the
    /// first ZooKeeper error deleting an item, after every item was tried.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// println!("{} deleted", zk_queue::RawQueue::new(&client, "/jobs")?.purge()?);
    /// # Ok(())
    /// # }
    /// ```
    pub fn purge(&self) -> Result<usize> {
        let nodes: Vec<(String, Option<i32>)> = self
            .listing()?
            .items
            .iter()
            .map(|item| (path::join(&self.path, &item.name), None))
            .collect();
        let mut deleted = 0;
        let mut failure = None;
        for chunk in nodes.chunks(PURGE_CHUNK) {
            for result in self.client.delete_many(chunk)? {
                match result {
                    Ok(()) => deleted += 1,
                    Err(Error::NoNode { .. }) => {}
                    Err(e) => {
                        failure.get_or_insert(e);
                    }
                }
            }
        }
        match failure {
            Some(e) => Err(e),
            None => Ok(deleted),
        }
    }

    /// Takes items until `max` records, or until nothing is left to take
    /// now (`deadline` `None`) or at `deadline`.
    fn take_until(&self, max: usize, deadline: Option<Instant>) -> Result<RawTaken> {
        let mut taken = RawTaken::default();
        let mut undecodable = HashSet::new();
        let mut records = 0;
        while records < max {
            let (names, watch) = match deadline {
                Some(_) => {
                    let (names, _, watch) = self.client.get_children_watch(&self.path)?;
                    (names, Some(watch))
                }
                None => (self.client.get_children(&self.path)?.0, None),
            };
            let listing = Listing::of(names, self.layout);
            let now = DeliverAt::now().epoch_millis();
            let mut next_due = None;
            let mut progressed = false;
            for name in listing.items {
                if records >= max {
                    return Ok(taken);
                }
                if let Some(due) = name.due.filter(|due| name.kind == Kind::Delay && *due > now) {
                    // Ordered by due time: no later item is due either.
                    next_due = Some(due);
                    break;
                }
                if undecodable.contains(&name.name) {
                    continue;
                }
                match self.take_one(listing.layout, name)? {
                    Took::Item(item) => {
                        records += item.records.len();
                        progressed = true;
                        taken.items.push(item);
                    }
                    Took::Undecodable(bad) => {
                        undecodable.insert(bad.name.clone());
                        taken.undecodable.push(bad);
                    }
                    Took::Gone => {}
                }
            }
            if records >= max {
                return Ok(taken);
            }
            if progressed {
                continue;
            }
            let (Some(deadline), Some(watch)) = (deadline, watch) else {
                return Ok(taken);
            };
            let mut until = deadline;
            if let Some(due) = next_due {
                let wait = Duration::from_millis(u64::try_from(due - now).unwrap_or(0));
                until = until.min(Instant::now() + wait);
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(taken);
            }
            watch.wait_timeout(until.saturating_duration_since(now));
        }
        Ok(taken)
    }

    /// Reads one item, then deletes it at the version read.
    fn take_one(&self, layout: Layout, name: ItemName) -> Result<Took> {
        let node = path::join(&self.path, &name.name);
        let (data, stat) = match self.client.get_data(&node) {
            Ok(read) => read,
            Err(Error::NoNode { .. }) => return Ok(Took::Gone),
            Err(e) => return Err(e),
        };
        let decoded = match decode_item(layout, &data) {
            Ok(decoded) => decoded,
            Err(error) => return Ok(Took::Undecodable(Undecodable { name: name.name, error })),
        };
        match self.client.delete(&node, Some(stat.version)) {
            Ok(()) => Ok(Took::Item(RawItem {
                name,
                records: decoded.records,
                attempts: decoded.attempts,
            })),
            // RawTaken, or changed, by another client meanwhile.
            Err(Error::NoNode { .. } | Error::BadVersion { .. }) => Ok(Took::Gone),
            Err(e) => Err(e),
        }
    }
}

/// What became of one item a [`RawQueue`] tried to take.
enum Took {
    Item(RawItem),
    Undecodable(Undecodable),
    Gone,
}
