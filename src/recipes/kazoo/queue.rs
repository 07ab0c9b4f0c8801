//! [`KazooQueue`]: kazoo's `Queue`, entries deleted when taken.

use std::time::{Duration, Instant};

use super::{entry_count, put_entry, taking, wait_for_change, Wait};
use crate::client::{Deleted, ZkClient};
use crate::error::{Error, Result};
use crate::naming::entries_in_order;
use crate::path;
use crate::sync::Latch;

/// A priority queue of byte items in the layout of kazoo's `Queue`
/// (`kazoo.recipe.queue.Queue`): `entry-<ppp>-<seq>` children of its node,
/// taken lower priority number first, then in put order (see the
/// [module](super) for the mapping).
///
/// # Delivery guarantee
/// **At most once**, as kazoo's: an entry is deleted before the caller sees
/// it. If the reply to the claiming delete is lost and the retried delete
/// finds the entry gone, the entry is still returned (it may then have been
/// taken twice) rather than dropped.
///
/// ```no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// use zk_queue::recipes::KazooQueue;
/// let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
/// let queue = KazooQueue::new(&client, "/py/jobs")?;
/// queue.put(b"later", 200)?;
/// queue.put(b"first", 1)?;
/// assert_eq!(queue.take()?, b"first");
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct KazooQueue {
    client: ZkClient,
    dir: String,
}

impl KazooQueue {
    /// A queue at `path` (kazoo's `Queue(client, path)`). Nothing is sent to
    /// the server; the node is created by the first call that needs it.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] if `path` is not a valid node path, is the root
    /// or lies in the reserved `/zookeeper` tree.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = zk_queue::recipes::KazooQueue::new(&client, "/py/jobs")?;
    /// assert_eq!(queue.path(), "/py/jobs");
    /// # Ok(())
    /// # }
    /// ```
    pub fn new(client: &ZkClient, path: &str) -> Result<KazooQueue> {
        path::validate_queue_path(path)?;
        Ok(KazooQueue {
            client: client.clone(),
            dir: path.to_owned(),
        })
    }

    /// The queue node's path.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = zk_queue::recipes::KazooQueue::new(&client, "/py/jobs")?;
    /// assert_eq!(queue.path(), "/py/jobs");
    /// # Ok(())
    /// # }
    /// ```
    pub fn path(&self) -> &str {
        &self.dir
    }

    /// Puts an item with `priority` (0 to 999, lower first; kazoo's default
    /// is [`DEFAULT_PRIORITY`](super::DEFAULT_PRIORITY)) and returns its
    /// node's path. Creates the queue node if it is missing.
    ///
    /// Entries carry no token (kazoo's hold raw bytes), so a create whose
    /// reply a dropped connection lost is retried and may store the item
    /// twice, as [`SimpleQueue::put`](crate::SimpleQueue::put) explains.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a priority above 999, before sending;
    /// ZooKeeper errors once the retry policy gives up.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = zk_queue::recipes::KazooQueue::new(&client, "/py/jobs")?;
    /// let node = queue.put(b"job", 100)?;
    /// assert!(node.starts_with("/py/jobs/entry-100-"));
    /// # Ok(())
    /// # }
    /// ```
    pub fn put(&self, data: &[u8], priority: u16) -> Result<String> {
        put_entry(&self.client, &self.dir, data, priority, None)
    }

    /// [`put`](Self::put), each request giving up after `timeout`.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// use std::time::Duration;
    /// let queue = zk_queue::recipes::KazooQueue::new(&client, "/py/jobs")?;
    /// queue.put_timeout(b"job", 100, Duration::from_secs(2))?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn put_timeout(&self, data: &[u8], priority: u16, timeout: Duration) -> Result<String> {
        put_entry(
            &self.client,
            &self.dir,
            data,
            priority,
            Instant::now().checked_add(timeout),
        )
    }

    /// Removes and returns the first entry, waiting as long as it takes for
    /// one.
    ///
    /// Waits through outages and session expiries (retrying with back-off).
    ///
    /// # Errors
    /// ZooKeeper errors that retrying cannot mend ([`Error::NotAuthorized`],
    /// say); [`Error::Closed`] if the client is closed while waiting.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = zk_queue::recipes::KazooQueue::new(&client, "/py/jobs")?;
    /// let item: Vec<u8> = queue.take()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn take(&self) -> Result<Vec<u8>> {
        taking(&self.client, &self.dir, Wait::Until(None), || {
            self.take_with(Wait::Until(None))
        })?
        .ok_or(Error::Closed)
    }

    /// Removes and returns the first entry, `None` if there is none (kazoo's
    /// `get()`). Waits for a server at most one second.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = zk_queue::recipes::KazooQueue::new(&client, "/py/jobs")?;
    /// if let Some(item) = queue.try_take()? {
    ///     println!("{item:?}");
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn try_take(&self) -> Result<Option<Vec<u8>>> {
        taking(&self.client, &self.dir, Wait::No, || self.take_with(Wait::No))
    }

    /// Removes and returns the first entry, waiting up to `timeout` for one;
    /// `None` if none came.
    ///
    /// Waits through outages until the deadline: [`Error::Unreachable`] if
    /// no server can be asked then, `None` if a connected server answered
    /// too late.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// use std::time::Duration;
    /// let queue = zk_queue::recipes::KazooQueue::new(&client, "/py/jobs")?;
    /// let item = queue.take_timeout(Duration::from_secs(1))?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn take_timeout(&self, timeout: Duration) -> Result<Option<Vec<u8>>> {
        let wait = Wait::Until(Instant::now().checked_add(timeout));
        taking(&self.client, &self.dir, wait, || self.take_with(wait))
    }

    /// The number of entries (kazoo's `len(queue)` counts every child).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = zk_queue::recipes::KazooQueue::new(&client, "/py/jobs")?;
    /// println!("{} waiting", queue.len()?);
    /// # Ok(())
    /// # }
    /// ```
    pub fn len(&self) -> Result<usize> {
        entry_count(&self.client, &self.dir)
    }

    /// Whether the queue has no entries.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = zk_queue::recipes::KazooQueue::new(&client, "/py/jobs")?;
    /// assert!(queue.is_empty()? || queue.len()? > 0);
    /// # Ok(())
    /// # }
    /// ```
    pub fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }

    /// The one implementation of the take family.
    fn take_with(&self, wait: Wait) -> Result<Option<Vec<u8>>> {
        let opts = wait.opts();
        loop {
            let latch = Latch::new();
            let listed = match wait {
                Wait::No => self.client.get_children_with(&self.dir, opts).map(|(n, _)| (n, None)),
                Wait::Until(_) => (self.client.watch_children(&self.dir, &latch, opts)).map(|(n, _, w)| (n, Some(w))),
            };
            let (names, watch) = match listed {
                Ok(listed) => listed,
                Err(Error::NoNode { .. }) if matches!(wait, Wait::No) => return Ok(None),
                Err(Error::NoNode { .. }) => {
                    self.client.ensure_path_with(&self.dir, opts)?;
                    continue;
                }
                Err(e) => return Err(e),
            };
            for name in entries_in_order(names) {
                if let Some(data) = self.claim(&name, opts)? {
                    return Ok(Some(data));
                }
            }
            let Wait::Until(deadline) = wait else { return Ok(None) };
            let _watch = watch;
            if !wait_for_change(&self.client, &latch, deadline)? {
                return Ok(None);
            }
        }
    }

    /// Reads and deletes the entry `name`, as kazoo does; `None` if another
    /// consumer took it first.
    fn claim(&self, name: &str, opts: crate::client::Opts<'_>) -> Result<Option<Vec<u8>>> {
        let node = path::join(&self.dir, name);
        let data = match self.client.get_data_with(&node, opts) {
            Ok((data, _)) => data,
            Err(Error::NoNode { .. }) => return Ok(None),
            Err(e) => return Err(e),
        };
        match self.client.delete_with(&node, None, opts) {
            Ok(Deleted::Yes) => Ok(Some(data)),
            Ok(Deleted::Unknown) => {
                log::warn!("{node}: the reply to its delete was lost and it is gone; delivered, possibly twice");
                Ok(Some(data))
            }
            Err(Error::NoNode { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }
}
