//! [`KazooLockingQueue`]: kazoo's `LockingQueue`, entries locked while held.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use super::{entry_count, put_all_entries, put_entry, taking, wait_for_change, KazooEntry, Wait};
use crate::client::{ChildWatch, CreateMode, Opts, ZkClient};
use crate::error::{Error, Result};
use crate::naming::{entries_in_order, ENTRIES_DIR, TAKEN_DIR};
use crate::path;
use crate::recipes::deadline::call_error;
use crate::sync::Latch;

/// A priority queue of byte items in the layout of kazoo's `LockingQueue`:
/// entries `<path>/entries/entry-<ppp>-<seq>`, each locked while a consumer
/// holds it by the ephemeral node `<path>/taken/<entry name>` (see the
/// [module](super) for the mapping).
///
/// A take locks the first entry (lower priority number first, then put
/// order) whose lock does not exist, kazoo's or this crate's, and returns it
/// as a [`KazooEntry`]: [`consume`](KazooEntry::consume) deletes the entry
/// and its lock together, [`release`](KazooEntry::release) (or dropping
/// it) deletes the lock so that the entry is taken again.
///
/// # Delivery guarantee
/// **At least once**: an entry is deleted only when its holder consumes it.
/// A holder whose session ends (a crash, an expiry) loses its locks with it,
/// and the entries are taken again.
///
/// ```no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// use zk_queue::recipes::KazooLockingQueue;
/// let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
/// let queue = KazooLockingQueue::new(&client, "/py/work")?;
/// queue.put(b"render", 100)?;
/// let entry = queue.take()?;
/// assert_eq!(entry.data(), b"render");
/// entry.consume()?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct KazooLockingQueue {
    client: ZkClient,
    path: String,
    entries: String,
    taken: String,
}

impl KazooLockingQueue {
    /// A queue at `path` (kazoo's `LockingQueue(client, path)`). Nothing is
    /// sent to the server; its nodes are created by the first call that
    /// needs them.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] if `path` is not a valid node path, is the root
    /// or lies in the reserved `/zookeeper` tree.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = zk_queue::recipes::KazooLockingQueue::new(&client, "/py/work")?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn new(client: &ZkClient, path: &str) -> Result<KazooLockingQueue> {
        path::validate_queue_path(path)?;
        Ok(KazooLockingQueue {
            client: client.clone(),
            path: path.to_owned(),
            entries: path::join(path, ENTRIES_DIR),
            taken: path::join(path, TAKEN_DIR),
        })
    }

    /// The queue node's path (its entries are under `<path>/entries`).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = zk_queue::recipes::KazooLockingQueue::new(&client, "/py/work")?;
    /// assert_eq!(queue.path(), "/py/work");
    /// # Ok(())
    /// # }
    /// ```
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Puts an item with `priority` (0 to 999, lower first; kazoo's default
    /// is [`DEFAULT_PRIORITY`](super::DEFAULT_PRIORITY)) and returns its
    /// entry's path. Creates the entries' node if it is missing.
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
    /// let queue = zk_queue::recipes::KazooLockingQueue::new(&client, "/py/work")?;
    /// let node = queue.put(b"job", 100)?;
    /// assert!(node.starts_with("/py/work/entries/entry-100-"));
    /// # Ok(())
    /// # }
    /// ```
    pub fn put(&self, data: &[u8], priority: u16) -> Result<String> {
        put_entry(&self.client, &self.entries, data, priority, None)
    }

    /// Puts `items`, all with `priority`, in one transaction (kazoo's
    /// `put_all`): all are stored, in order, or none. Returns their entries'
    /// paths.
    ///
    /// # Errors
    /// As [`put`](Self::put); [`Error::InvalidArgument`] for no items;
    /// [`Error::ItemTooLarge`] for a batch past the server's packet limit,
    /// before sending.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = zk_queue::recipes::KazooLockingQueue::new(&client, "/py/work")?;
    /// let nodes = queue.put_all(&[b"a", b"b"], 100)?;
    /// assert_eq!(nodes.len(), 2);
    /// # Ok(())
    /// # }
    /// ```
    pub fn put_all<D: AsRef<[u8]>>(&self, items: &[D], priority: u16) -> Result<Vec<String>> {
        let started = Instant::now();
        put_all_entries(&self.client, &self.entries, items, priority)
            .map_err(|e| call_error(&self.client, e, started, "put"))
    }

    /// Locks and returns the first entry no one holds, waiting as long as it
    /// takes for one.
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
    /// let queue = zk_queue::recipes::KazooLockingQueue::new(&client, "/py/work")?;
    /// let entry = queue.take()?;
    /// entry.release()?; // someone else's turn
    /// # Ok(())
    /// # }
    /// ```
    pub fn take(&self) -> Result<KazooEntry> {
        taking(&self.client, &self.path, Wait::Until(None), || {
            self.take_with(Wait::Until(None))
        })?
        .ok_or(Error::Closed)
    }

    /// Locks and returns the first entry no one holds, `None` if there is
    /// none. Waits for a server at most one second. Creates the queue's
    /// nodes if they are missing, as kazoo's `get` does.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = zk_queue::recipes::KazooLockingQueue::new(&client, "/py/work")?;
    /// if let Some(entry) = queue.try_take()? {
    ///     entry.consume()?;
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn try_take(&self) -> Result<Option<KazooEntry>> {
        taking(&self.client, &self.path, Wait::No, || self.take_with(Wait::No))
    }

    /// Locks and returns the first entry no one holds, waiting up to
    /// `timeout` for one (kazoo's `get(timeout)`); `None` if none came.
    ///
    /// Waits through outages until the deadline: [`Error::Unreachable`] if
    /// no server can be asked then, `None` if a connected server answered
    /// too late.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// use std::time::Duration;
    /// let queue = zk_queue::recipes::KazooLockingQueue::new(&client, "/py/work")?;
    /// let entry = queue.take_timeout(Duration::from_secs(1))?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn take_timeout(&self, timeout: Duration) -> Result<Option<KazooEntry>> {
        let wait = Wait::Until(Instant::now().checked_add(timeout));
        taking(&self.client, &self.path, wait, || self.take_with(wait))
    }

    /// The number of entries, held ones included (as kazoo's `len`).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = zk_queue::recipes::KazooLockingQueue::new(&client, "/py/work")?;
    /// println!("{} entries", queue.len()?);
    /// # Ok(())
    /// # }
    /// ```
    pub fn len(&self) -> Result<usize> {
        entry_count(&self.client, &self.entries)
    }

    /// Whether the queue has no entries, held ones included.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = zk_queue::recipes::KazooLockingQueue::new(&client, "/py/work")?;
    /// assert!(queue.is_empty()? || queue.len()? > 0);
    /// # Ok(())
    /// # }
    /// ```
    pub fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }

    /// The one implementation of the take family: lists entries and locks
    /// (watching both when waiting), locks the first free entry, else waits
    /// for a change.
    fn take_with(&self, wait: Wait) -> Result<Option<KazooEntry>> {
        let opts = wait.opts();
        loop {
            let latch = Latch::new();
            let listed = self.list(&self.entries, &latch, wait, opts).and_then(|entries| {
                let taken = self.list(&self.taken, &latch, wait, opts)?;
                Ok((entries, taken))
            });
            let ((entries, _entries_watch), (taken, _taken_watch)) = match listed {
                Ok(listed) => listed,
                Err(Error::NoNode { .. }) => {
                    // As kazoo's `get`, which creates both first.
                    self.ensure_dirs(opts)?;
                    continue;
                }
                Err(e) => return Err(e),
            };
            let taken: HashSet<String> = taken.into_iter().collect();
            for name in entries_in_order(entries).into_iter().filter(|n| !taken.contains(n)) {
                if let Some(entry) = self.lock(&name, opts)? {
                    return Ok(Some(entry));
                }
            }
            let Wait::Until(deadline) = wait else { return Ok(None) };
            if !wait_for_change(&self.client, &latch, deadline)? {
                return Ok(None);
            }
        }
    }

    /// The children of `dir`, with a watch opening `latch` if the call waits.
    fn list(&self, dir: &str, latch: &Latch, wait: Wait, opts: Opts<'_>) -> Result<(Vec<String>, Option<ChildWatch>)> {
        match wait {
            Wait::No => self.client.get_children_with(dir, opts).map(|(names, _)| (names, None)),
            Wait::Until(_) => (self.client.watch_children(dir, latch, opts)).map(|(names, _, w)| (names, Some(w))),
        }
    }

    /// Locks the entry `name` as kazoo does (the lock first, then the read);
    /// `None` if someone holds it or it was consumed meanwhile.
    fn lock(&self, name: &str, opts: Opts<'_>) -> Result<Option<KazooEntry>> {
        let lock = path::join(&self.taken, name);
        let token = crate::naming::random_uuid().replace('-', "");
        let session = self.client.session();
        let created = self.client.create_with(
            &lock,
            token.as_bytes(),
            opts.mode(CreateMode::Ephemeral).fenced(session),
        );
        match created {
            Ok(_) => {}
            // A retried create whose first attempt was applied finds its own lock.
            Err(Error::NodeExists { .. }) if self.holds(&lock, &token, opts)? => {}
            Err(Error::NodeExists { .. }) => return Ok(None),
            Err(Error::NoNode { .. }) => {
                // The locks' node was deleted since the listing.
                self.ensure_dirs(opts)?;
                return Ok(None);
            }
            Err(e) => return Err(e),
        }
        let entry = path::join(&self.entries, name);
        match self.client.get_data_with(&entry, opts) {
            Ok((data, _)) => Ok(Some(KazooEntry::new(&self.client, entry, lock, token, session, data))),
            Err(e) => {
                self.client.delete_ephemeral_in_background(&lock, session);
                match e {
                    Error::NoNode { .. } => Ok(None),
                    e => Err(e),
                }
            }
        }
    }

    /// Creates the entries' and the locks' nodes where missing.
    fn ensure_dirs(&self, opts: Opts<'_>) -> Result<()> {
        self.client.ensure_path_with(&self.entries, opts)?;
        self.client.ensure_path_with(&self.taken, opts)
    }

    /// Whether the lock at `lock` holds `token`.
    fn holds(&self, lock: &str, token: &str, opts: Opts<'_>) -> Result<bool> {
        match self.client.get_data_with(lock, opts) {
            Ok((data, _)) => Ok(data == token.as_bytes()),
            Err(Error::NoNode { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }
}
