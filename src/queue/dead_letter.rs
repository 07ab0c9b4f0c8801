//! [`DeadLetters`]: the items a queue set aside, and the ways back.

use crate::client::{CreateMode, Op, ZkClient};
use crate::codec::{decode_frame, trailer};
use crate::error::{Error, Result};
use crate::inspect::{ItemName, Layout};
use crate::naming::QUEUE_PREFIX;
use crate::path;
use crate::queue::RawQueue;

/// A dead-letter path: where a lock-safe queue moves items that failed
/// [`max_attempts`](crate::QueueBuilder::max_attempts) times, and
/// undecodable items. Dead letters are Curator queue items (`queue-<seq>`
/// nodes holding an item frame, with the attempt count after it), so a
/// handle lists them, moves them back to a queue, or deletes them.
///
/// ```no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// use zk_queue::{DeadLetters, ZkClient};
/// let client = ZkClient::connect("127.0.0.1:2181")?;
/// let dead = DeadLetters::new(&client, "/jobs-dead")?;
/// println!("{} dead letters", dead.list()?.len());
/// let moved = dead.requeue_to("/jobs")?;
/// println!("{} back in /jobs, {} skipped", moved.requeued, moved.skipped);
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct DeadLetters {
    raw: RawQueue,
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
    /// let dead = zk_queue::DeadLetters::new(&client, "/jobs-dead")?;
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
    /// let dead = zk_queue::DeadLetters::new(&client, "/jobs-dead")?;
    /// println!("{}", dead.path());
    /// # Ok(())
    /// # }
    /// ```
    pub fn path(&self) -> &str {
        self.raw.path()
    }

    /// The dead letters' names in the order they were set aside; empty if the
    /// path does not exist. Other children are left out.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let dead = zk_queue::DeadLetters::new(&client, "/jobs-dead")?;
    /// for item in dead.list()? {
    ///     println!("{}", item.name);
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn list(&self) -> Result<Vec<ItemName>> {
        match self.raw.listing() {
            Ok(listing) => Ok(listing.items),
            Err(Error::NoNode { .. }) => Ok(Vec::new()),
            Err(e) => Err(e),
        }
    }

    /// Moves every dead letter to the end of the queue at `queue_path` as a
    /// plain item with its attempt count reset, each in one multi that
    /// creates the item (with the queue node's ACL, as the queue's own puts)
    /// and deletes the dead letter at the version read: a dead letter is
    /// never lost nor moved twice. An undecodable dead letter stays (and is
    /// logged); so does one another client changed or took meanwhile. The
    /// queue node is created if missing.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for `queue_path`; ZooKeeper errors, after the
    /// dead letters moved until then.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let dead = zk_queue::DeadLetters::new(&client, "/jobs-dead")?;
    /// let moved = dead.requeue_to("/jobs")?;
    /// assert_eq!(moved.requeued + moved.skipped, moved.requeued + moved.skipped);
    /// # Ok(())
    /// # }
    /// ```
    pub fn requeue_to(&self, queue_path: &str) -> Result<Requeued> {
        path::validate_queue_path(queue_path)?;
        let items = self.list()?;
        self.raw.client().ensure_path(queue_path)?;
        let (acl, _) = self.raw.client().get_acl(queue_path)?;
        let target = path::join(queue_path, QUEUE_PREFIX);
        let mut done = Requeued::default();
        for item in &items {
            let letter = path::join(self.raw.path(), &item.name);
            let (data, stat) = match self.raw.client().get_data(&letter) {
                Ok(read) => read,
                Err(Error::NoNode { .. }) => continue,
                Err(e) => return Err(e),
            };
            let frame = match decode_frame(&data) {
                // Without the trailer: the attempt count starts again.
                Ok(records) => data[..trailer::frame_len(&records)].to_vec(),
                Err(e) => {
                    log::warn!("dead letter {letter} is not a valid item and stays: {e}");
                    done.skipped += 1;
                    continue;
                }
            };
            let ops = [
                Op::create_with_acl(target.clone(), frame, CreateMode::PersistentSequential, acl.clone()),
                Op::delete(letter, Some(stat.version)),
            ];
            match self.raw.client().multi(&ops) {
                Ok(_) => done.requeued += 1,
                Err(Error::MultiFailed { index: 1, source })
                    if matches!(*source, Error::NoNode { .. } | Error::BadVersion { .. }) =>
                {
                    done.skipped += 1;
                }
                Err(e) => return Err(e),
            }
        }
        Ok(done)
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
    /// let dead = zk_queue::DeadLetters::new(&client, "/jobs-dead")?;
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
