//! The consuming builder of [`SimpleQueue`].

use std::time::Duration;

use super::ahead::Ahead;
use super::local::LocalList;
use super::SimpleQueue;
use crate::client::{Acl, CreateMode, ZkClient};
use crate::error::{Error, Result};
use crate::path;

/// Builds a [`SimpleQueue`]; made by [`SimpleQueue::builder`].
///
/// ```no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// use zk_queue::{SimpleQueue, ZkClient, client::Acl};
/// let client = ZkClient::connect("127.0.0.1:2181")?;
/// let queue = SimpleQueue::builder(&client, "/jobs")
///     .acl(vec![Acl::anyone_all()])
///     .container(true)
///     .build()?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct SimpleQueueBuilder {
    client: ZkClient,
    path: String,
    acl: Option<Vec<Acl>>,
    container: bool,
    rescan_interval: Duration,
    prefetch: usize,
}

impl SimpleQueueBuilder {
    pub(super) fn new(client: &ZkClient, path: &str) -> Self {
        SimpleQueueBuilder {
            client: client.clone(),
            path: path.to_owned(),
            acl: None,
            container: false,
            rescan_interval: Duration::from_secs(30),
            prefetch: 0,
        }
    }

    /// The ACL of the queue node (and any missing ancestors) and of every
    /// item node this handle creates. Defaults to the client's default ACL.
    /// A node that already exists keeps the ACL it has. Calls of a client
    /// the ACL does not allow fail with
    /// [`Error::NotAuthorized`](crate::Error::NotAuthorized); nothing is
    /// removed then.
    ///
    /// ``` no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{SimpleQueue, ZkClient, client::Acl};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = SimpleQueue::builder(&client, "/jobs").acl(vec![Acl::creator_all()]).build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn acl(mut self, acl: Vec<Acl>) -> Self {
        self.acl = Some(acl);
        self
    }

    /// Whether a missing queue node is created as a container node (as
    /// Curator's `SimpleDistributedQueue` does), which the server deletes some
    /// time after it empties; the queue recreates it when needed. Defaults to
    /// `false`: a persistent node, as the classic Java recipe creates.
    ///
    /// ``` no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{SimpleQueue, ZkClient, client::Acl};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = SimpleQueue::builder(&client, "/jobs").container(true).build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn container(mut self, container: bool) -> Self {
        self.container = container;
        self
    }

    /// How long a blocking `take` waits on its watch before it lists the
    /// queue again anyway. ZooKeeper drops the event of a watch on a node
    /// whose ACL no longer lets this client read it, so without a rescan a
    /// take could wait past the moment access was given back. Each rescan is
    /// one listing. Defaults to 30 seconds; must not be zero.
    ///
    /// ``` no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{SimpleQueue, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// use std::time::Duration;
    /// let queue = SimpleQueue::builder(&client, "/jobs").rescan_interval(Duration::from_secs(5)).build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn rescan_interval(mut self, interval: Duration) -> Self {
        self.rescan_interval = interval;
        self
    }

    /// How many items a take claims at once. With 0 (the default) a take
    /// claims one item: a read, then the claiming delete. With `n` above 0, a
    /// take that finds nothing claimed claims the next `n` items of its
    /// listing together (their data in multi-reads of up to 64 items on
    /// ZooKeeper 3.6 and later, then their deletes pipelined) and later
    /// takes hand them out in order, so a window costs the round trips of one
    /// item. The items claimed ahead are already deleted from ZooKeeper:
    /// other consumers cannot take them, [`len`](SimpleQueue::len) still
    /// counts them, and a process that crashes loses them (at most `n`
    /// besides the item in hand, still at most once). Dropping the handle
    /// puts them back at the queue's tail
    /// ([`release_prefetched`](SimpleQueue::release_prefetched)). `peek`
    /// shows the first item claimed ahead, if any. Threads sharing the
    /// handle share its claimed items.
    ///
    /// ``` no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{SimpleQueue, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = SimpleQueue::builder(&client, "/jobs").prefetch(64).build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn prefetch(mut self, items: usize) -> Self {
        self.prefetch = items;
        self
    }

    /// Checks the path and ACL and makes the queue. Sends nothing.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for an invalid or reserved path;
    /// [`Error::InvalidArgument`] for an empty ACL or a zero rescan interval.
    ///
    /// ``` no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{SimpleQueue, ZkClient, client::Acl};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = SimpleQueue::builder(&client, "/jobs").build()?;
    /// assert!(SimpleQueue::builder(&client, "jobs").build().is_err()); // not absolute
    /// # Ok(())
    /// # }
    /// ```
    pub fn build(self) -> Result<SimpleQueue> {
        path::validate_queue_path(&self.path)?;
        let acl = match self.acl {
            Some(acl) if acl.is_empty() => return Err(Error::InvalidArgument("ACL must not be empty".into())),
            Some(acl) => acl,
            None => self.client.default_acl().to_vec(),
        };
        if self.rescan_interval.is_zero() {
            return Err(Error::InvalidArgument("the rescan interval must not be zero".into()));
        }
        Ok(SimpleQueue {
            client: self.client,
            dir: self.path,
            acl,
            dir_mode: if self.container {
                CreateMode::Container
            } else {
                CreateMode::Persistent
            },
            local: LocalList::default(),
            rescan_interval: self.rescan_interval,
            prefetch: self.prefetch,
            ahead: Ahead::default(),
        })
    }
}
