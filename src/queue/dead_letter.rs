//! [`DeadLetters`]: the items a queue set aside, and the ways back.

use crate::client::ZkClient;
use crate::codec::{Death, FrameError};
use crate::error::{Error, Result};
use crate::inspect::{decode_item, ItemName, Layout};
use crate::path;
use crate::queue::RawQueue;

mod requeue;

/// Reads of one pipelined batch.
const READ_BATCH: usize = 1_000;

/// A dead-letter path: where a lock-safe queue moves items that failed
/// [`max_attempts`](crate::QueueBuilder::max_attempts) times, and
/// undecodable items. Dead letters are Curator queue items named with their
/// original prefix (so they keep their priority, due time or id) and holding
/// the original item frame, so a Curator consumer of the dead-letter path
/// reads them as the original items. After the frame, invisible to Curator,
/// this crate records their story: the attempts, the consumer's last error,
/// when they died, and the queue and node they came from ([`Death`]); an
/// undecodable item is moved byte for byte. A handle lists them with their
/// story, moves them back to a queue, or deletes them.
///
/// ```no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// use zk_queue::{ZkClient, admin::DeadLetters};
/// let client = ZkClient::connect("127.0.0.1:2181")?;
/// let dead = DeadLetters::new(&client, "/jobs-dead")?;
/// for letter in dead.list()? {
///     let why = letter.death.as_ref().map_or("(not recorded)", |d| d.reason.as_str());
///     println!("{} after {} attempts: {why}", letter.name.name, letter.attempts);
/// }
/// let moved = dead.requeue_to("/jobs")?;
/// println!("{} back in /jobs, {} skipped", moved.requeued, moved.skipped);
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct DeadLetters {
    raw: RawQueue,
}

/// One dead letter and its story, as [`DeadLetters::list`] reads it.
///
/// ```no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
/// for letter in zk_queue::admin::DeadLetters::new(&client, "/jobs-dead")?.list()? {
///     match (&letter.death, &letter.undecodable) {
///         (Some(death), _) => println!("{}: {} (from {})", letter.name.name, death.reason, death.source),
///         (None, Some(error)) => println!("{}: undecodable: {error}", letter.name.name),
///         (None, None) => println!("{}: set aside by an older version", letter.name.name),
///     }
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeadLetter {
    /// Its node name in the dead-letter path, parsed: the original prefix,
    /// so the priority, due time or id of the item it was.
    pub name: ItemName,
    /// Its records: one for a `put`, several for a `put_multi` (the records
    /// not consumed before it died); none if undecodable.
    pub records: Vec<Vec<u8>>,
    /// Failed deliveries recorded in it.
    pub attempts: u32,
    /// Why, when and where it died, if recorded (dead letters written by
    /// older versions and undecodable ones have none).
    pub death: Option<Death>,
    /// Why its data does not decode, for an undecodable item.
    pub undecodable: Option<FrameError>,
}

/// What [`DeadLetters::requeue_to`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Requeued {
    /// Dead letters moved back to the queue.
    pub requeued: usize,
    /// Dead letters left where they are: undecodable, or changed or taken
    /// by another client while being moved.
    pub skipped: usize,
}

impl DeadLetters {
    /// A handle on the dead-letter path `path`. Nothing is sent.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] as for a queue's path.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let dead = zk_queue::admin::DeadLetters::new(&client, "/jobs-dead")?;
    /// assert_eq!(dead.path(), "/jobs-dead");
    /// # Ok(())
    /// # }
    /// ```
    pub fn new(client: &ZkClient, path: &str) -> Result<DeadLetters> {
        Ok(DeadLetters {
            raw: RawQueue::new(client, path)?.layout(Layout::Curator),
        })
    }

    /// The dead-letter path.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let dead = zk_queue::admin::DeadLetters::new(&client, "/jobs-dead")?;
    /// println!("{}", dead.path());
    /// # Ok(())
    /// # }
    /// ```
    pub fn path(&self) -> &str {
        self.raw.path()
    }

    /// The dead letters' names in the order they were set aside; empty if the
    /// path does not exist. Other children are left out. Reads no data.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let dead = zk_queue::admin::DeadLetters::new(&client, "/jobs-dead")?;
    /// println!("{} dead letters", dead.names()?.len());
    /// # Ok(())
    /// # }
    /// ```
    pub fn names(&self) -> Result<Vec<ItemName>> {
        match self.raw.listing() {
            Ok(listing) => Ok(listing.items),
            Err(Error::NoNode { .. }) => Ok(Vec::new()),
            Err(e) => Err(e),
        }
    }

    /// Every dead letter with its story, in the order of
    /// [`names`](Self::names), read with pipelined requests; dead letters
    /// deleted meanwhile are left out.
    ///
    /// # Errors
    /// ZooKeeper errors listing or reading.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let dead = zk_queue::admin::DeadLetters::new(&client, "/jobs-dead")?;
    /// for letter in dead.list()? {
    ///     if let Some(death) = &letter.death {
    ///         println!("{}: {}", death.original_name, death.reason);
    ///     }
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn list(&self) -> Result<Vec<DeadLetter>> {
        let names = self.names()?;
        let mut letters = Vec::with_capacity(names.len());
        for chunk in names.chunks(READ_BATCH) {
            let paths: Vec<String> = chunk.iter().map(|n| path::join(self.raw.path(), &n.name)).collect();
            for (name, read) in chunk.iter().zip(self.raw.client().get_data_many(&paths)?) {
                let data = match read {
                    Ok((data, _)) => data,
                    Err(Error::NoNode { .. }) => continue,
                    Err(e) => return Err(e),
                };
                let mut letter = DeadLetter {
                    name: name.clone(),
                    records: Vec::new(),
                    attempts: 0,
                    death: None,
                    undecodable: None,
                };
                match decode_item(Layout::Curator, &data) {
                    Ok(item) => {
                        letter.records = item.records;
                        letter.attempts = item.attempts;
                        letter.death = item.death;
                    }
                    Err(e) => letter.undecodable = Some(e),
                }
                letters.push(letter);
            }
        }
        Ok(letters)
    }

    /// Moves every dead letter to the end of the queue at `queue_path` under
    /// its own name prefix (so an item of a priority, delay or id queue keeps
    /// its priority, due time or id; a plain `queue-` dead letter, as older
    /// versions wrote every one, stays plain), as a fresh item: its frame
    /// alone, so its attempts start again from zero, its story is dropped,
    /// and its put time is the requeue. The dead letters are read with
    /// multi-reads, in the order of [`names`](Self::names), and moved in
    /// that order, so the items keep their relative order: up to 32 in one
    /// multi that creates each item (with the queue node's ACL, as the
    /// queue's own puts) and deletes each dead letter at the version read,
    /// one multi after the other. A dead letter is never lost nor moved
    /// twice: a multi is applied whole or not at all, and one whose reply was
    /// lost is settled by reading its dead letters before anything else is
    /// sent (if none is left at the version read, it was applied). An
    /// undecodable dead letter stays (and is logged); so does one another
    /// client changed or took meanwhile, and the others of its multi are
    /// sent again without it. The queue node is created if missing.
    ///
    /// One limit: if the reply of a multi is lost and, before it is settled,
    /// another client takes every dead letter of that multi, they are counted
    /// requeued.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for `queue_path`; ZooKeeper errors (a multi
    /// whose reply was lost three times in a row, or whose dead letters could
    /// not be read after), after the dead letters moved until then.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let dead = zk_queue::admin::DeadLetters::new(&client, "/jobs-dead")?;
    /// let before = dead.names()?.len();
    /// let moved = dead.requeue_to("/jobs")?;
    /// println!("{} back in /jobs, {} skipped", moved.requeued, moved.skipped);
    /// // Each dead letter listed is counted once at most: moved, or skipped
    /// // (undecodable, or changed or taken by another client while being
    /// // moved); one taken before it was read is not counted.
    /// assert!(moved.requeued + moved.skipped <= before);
    /// # Ok(())
    /// # }
    /// ```
    pub fn requeue_to(&self, queue_path: &str) -> Result<Requeued> {
        path::validate_queue_path(queue_path)?;
        let names = self.names()?;
        self.raw.client().ensure_path(queue_path)?;
        let (acl, _) = self.raw.client().get_acl(queue_path)?;
        requeue::requeue(self.raw.client(), self.raw.path(), &names, queue_path, &acl)
    }

    /// Deletes every dead letter (other children stay) and returns how many
    /// were deleted; ones deleted by another client meanwhile are not
    /// counted.
    ///
    /// # Errors
    /// The first ZooKeeper error deleting a dead letter, after the others
    /// were tried.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let dead = zk_queue::admin::DeadLetters::new(&client, "/jobs-dead")?;
    /// println!("{} deleted", dead.purge()?);
    /// # Ok(())
    /// # }
    /// ```
    pub fn purge(&self) -> Result<usize> {
        match self.raw.purge() {
            Ok(purged) => Ok(purged.deleted),
            Err(Error::NoNode { .. }) => Ok(0),
            Err(e) => Err(e),
        }
    }
}
