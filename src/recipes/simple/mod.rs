//! [`SimpleQueue`]: the classic ZooKeeper queue recipe, done right.

mod ahead;
mod builder;
mod claim;
mod local;
mod put_all;

use std::time::{Duration, Instant};

pub use builder::SimpleQueueBuilder;

use self::ahead::Ahead;
use self::local::LocalList;
use crate::client::{Acl, CreateMode, Opts, ZkClient, TRY_WAIT};
use crate::error::{Error, Result};
use crate::path;
use crate::sync::{earliest, Backoff, Latch};

/// Prefix of item nodes, shared with the Java recipe and Curator's
/// `SimpleDistributedQueue`.
pub(crate) const ITEM_PREFIX: &str = "qn-";

/// How often a `put` recreates a queue node that keeps vanishing (a
/// container reaped between the recreate and the create) before giving up.
const MAX_RECREATES: usize = 5;

/// The first and the longest pause between attempts of a waiting call while
/// errors persist.
const FIRST_WAIT_BACKOFF: Duration = Duration::from_millis(50);
const MAX_WAIT_BACKOFF: Duration = Duration::from_secs(1);

/// A FIFO queue of byte items in the classic ZooKeeper recipe's format.
///
/// Items are `PERSISTENT_SEQUENTIAL` children named `qn-<sequence>` holding
/// the raw bytes, so a Java process using
/// `org.apache.zookeeper.recipes.queue.DistributedQueue` or Curator's
/// `SimpleDistributedQueue` shares the queue with this one.
///
/// # Delivery guarantee
/// **At most once.** An item is deleted from ZooKeeper before the caller sees
/// it, so a consumer that crashes after `take` returns loses that item. One
/// exception: if the reply to the claiming delete is lost and the retried
/// delete finds the item gone, the item is still returned (logged as a
/// possible duplicate) rather than dropped, because the lost delete may have
/// been ours. Use a lock-safe consumer for at-least-once delivery.
///
/// With a [`prefetch`](SimpleQueueBuilder::prefetch), a take claims a
/// window of up to that many items at once (deleting them all) and hands
/// them out one by one: a process that crashes then loses the items it had
/// claimed and not yet taken, up to the prefetch. Dropping the handle, or
/// [`release_prefetched`](Self::release_prefetched), puts them back.
///
/// # Ordering
/// Items come out in creation order (the server-assigned sequence, read as
/// unsigned so order survives the counter's sign wrap after 2³¹ creations).
/// Children whose names are not `qn-<number>` are skipped with a warning and
/// never touched.
///
/// # Cost
/// A handle keeps a sorted local list of the items it last listed and works
/// through it, listing the children again only when the list is used up.
/// Draining N items therefore costs O(N) listing work instead of the
/// anchors' O(N²). A blocking call leaves at most one child watch at a time.
/// A take costs two round trips (a read, then the claiming delete); with a
/// prefetch, a window of items costs the same two (multi-reads, then
/// pipelined deletes). Puts from several threads sharing a handle are in
/// flight together, and [`put_all`](Self::put_all) sends a whole batch at
/// once.
///
/// # Threads and blocking
/// `&self` methods may be called from many threads at once; threads sharing a
/// handle share its local list and claim different items.
///
/// # Names
/// The crate's verbs are `put`, and `take` / `try_take` / `take_timeout`
/// (waits, never waits, waits up to a bound), as on every queue here. The
/// Java recipe's names are kept for those who know them, each defined by the
/// crate's verbs: [`offer`](Self::offer) is `put`, [`poll`](Self::poll) is
/// `try_take`, [`remove`](Self::remove) is `try_take` that fails on an empty
/// queue, and [`element`](Self::element) is [`peek`](Self::peek) that fails
/// on an empty queue.
///
/// # Examples
/// ```no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// use std::time::Duration;
/// use zk_queue::{SimpleQueue, ZkClient};
/// let client = ZkClient::connect("127.0.0.1:2181")?;
/// let queue = SimpleQueue::new(&client, "/jobs")?;
/// queue.put(b"first")?;
/// assert_eq!(queue.take()?, b"first");
/// assert_eq!(queue.take_timeout(Duration::from_millis(100))?, None);
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct SimpleQueue {
    client: ZkClient,
    dir: String,
    acl: Vec<Acl>,
    dir_mode: CreateMode,
    local: LocalList,
    rescan_interval: Duration,
    /// Items claimed per window; 0: one at a time, nothing ahead.
    prefetch: usize,
    ahead: Ahead,
}

/// How long a call waits for an item.
#[derive(Clone, Copy)]
enum Wait {
    No,
    Until(Option<Instant>),
}

impl SimpleQueue {
    /// A queue at `path` with the client's default ACL. Nothing is sent to the
    /// server; the queue node is created by the first call that needs it.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] if `path` is not a valid node path, is the root
    /// or lies in the reserved `/zookeeper` tree.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = zk_queue::SimpleQueue::new(&client, "/jobs")?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn new(client: &ZkClient, path: &str) -> Result<SimpleQueue> {
        SimpleQueue::builder(client, path).build()
    }

    /// A builder for a queue at `path`, to set its ACL or node kind.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// use zk_queue::{SimpleQueue, ZkClient, client::Acl};
    /// let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = SimpleQueue::builder(&client, "/jobs").acl(vec![Acl::anyone_all()]).build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn builder(client: &ZkClient, path: &str) -> SimpleQueueBuilder {
        SimpleQueueBuilder::new(client, path)
    }

    /// The queue node's path.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = zk_queue::SimpleQueue::new(&client, "/jobs")?;
    /// assert_eq!(queue.path(), "/jobs");
    /// # Ok(())
    /// # }
    /// ```
    pub fn path(&self) -> &str {
        &self.dir
    }

    /// Appends an item and returns the path of its node (where
    /// [`Queue::put`](crate::Queue) returns `()`: this recipe's items are raw
    /// bytes that only their node names, so the path is how a caller finds
    /// one again). Creates the queue
    /// node (and its ancestors) if missing, also when another client creates
    /// it at the same moment or the server reaped it as an empty container.
    ///
    /// # Errors
    /// [`Error::ItemTooLarge`] before sending if the item exceeds the server's
    /// packet limit; [`Error::NotAuthorized`]; connection errors once the
    /// retry policy gives up.
    ///
    /// # Unknown outcomes
    /// When the connection drops while a create is in flight, or an attempt
    /// passes its deadline while the client still holds it for sending after a
    /// reconnection, the attempt's outcome is unknown. The recipe's nodes hold
    /// raw bytes and name no owner, so the attempt's node cannot be told from
    /// an equal item another producer put: the attempt is retried (as the
    /// client's retry policy allows), and if it was applied the item is stored
    /// again. Each such attempt adds one copy: one lost reply stores the item
    /// twice, a retry that loses its reply too stores it three times, and a
    /// `put` stores its item at most once per attempt. A `put` that returns a
    /// connection error may still have stored it.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = zk_queue::SimpleQueue::new(&client, "/jobs")?;
    /// let node = queue.put(b"payload")?;
    /// assert!(node.starts_with("/jobs/qn-"));
    /// # Ok(())
    /// # }
    /// ```
    pub fn put(&self, data: &[u8]) -> Result<String> {
        self.put_until(data, None)
    }

    /// [`put`](Self::put), waiting for a server at most one second: while none can be reached it fails with
    /// [`Error::Unreachable`] then, storing nothing. The queue is unbounded,
    /// so it never waits for room.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = zk_queue::SimpleQueue::new(&client, "/jobs")?;
    /// match queue.try_put(b"payload") {
    ///     Ok(node) => println!("stored as {node}"),
    ///     Err(zk_queue::Error::Unreachable { .. }) => println!("no server now; try later"),
    ///     Err(e) => return Err(e),
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn try_put(&self, data: &[u8]) -> Result<String> {
        self.put_until(data, Instant::now().checked_add(TRY_WAIT))
    }

    /// [`put`](Self::put), giving up at `timeout` (retries included) with
    /// [`Error::Unreachable`] while no server can be reached, or with the
    /// last error; an attempt a connected server is still answering may
    /// finish up to a second later. As with `put`, an attempt whose reply
    /// was lost may have stored the item.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// use std::time::Duration;
    /// let queue = zk_queue::SimpleQueue::new(&client, "/jobs")?;
    /// let node = queue.put_timeout(b"payload", Duration::from_secs(2))?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn put_timeout(&self, data: &[u8], timeout: Duration) -> Result<String> {
        self.put_until(data, Instant::now().checked_add(timeout))
    }

    /// The one implementation of the put family: each request gives up at
    /// `deadline` (`None`: the client's request timeout).
    fn put_until(&self, data: &[u8], deadline: Option<Instant>) -> Result<String> {
        let prefix = path::join(&self.dir, ITEM_PREFIX);
        let opts = Opts::new()
            .mode(CreateMode::PersistentSequential)
            .acl(&self.acl)
            .until(deadline);
        for _ in 0..MAX_RECREATES {
            match self.client.create_with(&prefix, data, opts) {
                Ok((created, _)) => return Ok(created),
                Err(Error::NoNode { .. }) => self.ensure_dir(Opts::new().until(deadline))?,
                Err(e) => return Err(e),
            }
        }
        Err(Error::NoNode { path: self.dir.clone() })
    }

    /// The Java recipe's `element`: [`peek`](Self::peek), but an empty
    /// queue is an error.
    ///
    /// # Errors
    /// [`Error::NoSuchElement`] if the queue is empty or does not exist.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = zk_queue::SimpleQueue::new(&client, "/jobs")?;
    /// match queue.element() {
    ///     Ok(head) => println!("next: {head:?}"),
    ///     Err(zk_queue::Error::NoSuchElement) => println!("empty"),
    ///     Err(e) => return Err(e),
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn element(&self) -> Result<Vec<u8>> {
        self.peek()?.ok_or(Error::NoSuchElement)
    }

    /// The Java recipe's `remove`: [`try_take`](Self::try_take), but an
    /// empty queue is an error.
    ///
    /// # Errors
    /// [`Error::NoSuchElement`] if the queue is empty or does not exist.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = zk_queue::SimpleQueue::new(&client, "/jobs")?;
    /// queue.put(b"a")?;
    /// assert_eq!(queue.remove()?, b"a");
    /// # Ok(())
    /// # }
    /// ```
    pub fn remove(&self) -> Result<Vec<u8>> {
        self.try_take()?.ok_or(Error::NoSuchElement)
    }

    /// Removes and returns the head item, waiting as long as it takes for one.
    /// Creates the queue node if it is missing.
    ///
    /// The wait rides out connection loss, a stalled ensemble and session
    /// expiry (it goes on in the new session); use
    /// [`take_timeout`](Self::take_timeout) to bound it.
    ///
    /// # Errors
    /// [`Error::Closed`] when the client is closed while waiting; errors that
    /// retrying cannot cure, such as [`Error::NotAuthorized`].
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = zk_queue::SimpleQueue::new(&client, "/jobs")?;
    /// let item = queue.take()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn take(&self) -> Result<Vec<u8>> {
        let item = self.next(true, Wait::Until(None))?;
        item.ok_or(Error::Closed)
    }

    /// Like [`take`](Self::take), but returns `None` once `timeout` has passed
    /// without an item, or the last connection error if the client is
    /// disconnected from the ensemble at the deadline. Returns by the
    /// deadline whatever the server does, or up to one second after it when
    /// a connected server is late answering a read (an item whose claim was
    /// already sent is claimed to the end, within the request timeout, rather
    /// than lost).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// use std::time::Duration;
    /// let queue = zk_queue::SimpleQueue::new(&client, "/jobs")?;
    /// if let Some(item) = queue.take_timeout(Duration::from_secs(5))? {
    ///     println!("{item:?}");
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn take_timeout(&self, timeout: Duration) -> Result<Option<Vec<u8>>> {
        match Instant::now().checked_add(timeout) {
            Some(deadline) => self.next(true, Wait::Until(Some(deadline))),
            None => self.take().map(Some),
        }
    }

    /// The head item without removing it, or `None` if the queue is empty.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = zk_queue::SimpleQueue::new(&client, "/jobs")?;
    /// let head: Option<Vec<u8>> = queue.peek()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn peek(&self) -> Result<Option<Vec<u8>>> {
        self.next(false, Wait::No)
    }

    /// Removes and returns the head item, or `None` if the queue is empty;
    /// never waits for an item. Losing a race for the head to another
    /// consumer moves on to the next item; `None` means the queue really was
    /// empty.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = zk_queue::SimpleQueue::new(&client, "/jobs")?;
    /// while let Some(item) = queue.try_take()? {
    ///     println!("{item:?}");
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn try_take(&self) -> Result<Option<Vec<u8>>> {
        self.next(true, Wait::No)
    }

    /// The Java recipe's `offer`: the same as [`put`](Self::put).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = zk_queue::SimpleQueue::new(&client, "/jobs")?;
    /// queue.offer(b"payload")?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn offer(&self, data: &[u8]) -> Result<String> {
        self.put(data)
    }

    /// The Java recipe's `poll`: the same as [`try_take`](Self::try_take).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = zk_queue::SimpleQueue::new(&client, "/jobs")?;
    /// while let Some(item) = queue.poll()? {
    ///     println!("{item:?}");
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn poll(&self) -> Result<Option<Vec<u8>>> {
        self.try_take()
    }

    /// The number of items: the children named `qn-<number>`, listed
    /// afresh, and the items this handle claimed ahead and still holds
    /// ([`prefetched`](Self::prefetched)), which are no longer in ZooKeeper.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = zk_queue::SimpleQueue::new(&client, "/jobs")?;
    /// println!("{} items waiting", queue.len()?);
    /// # Ok(())
    /// # }
    /// ```
    pub fn len(&self) -> Result<usize> {
        match self.client.get_children(&self.dir) {
            Ok((names, _)) => Ok(names.iter().filter(|n| local::item_key(n).is_some()).count() + self.ahead.len()),
            Err(Error::NoNode { .. }) => Ok(self.ahead.len()),
            Err(e) => Err(e),
        }
    }

    /// Whether [`len`](Self::len) is zero.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = zk_queue::SimpleQueue::new(&client, "/jobs")?;
    /// if queue.is_empty()? { println!("idle"); }
    /// # Ok(())
    /// # }
    /// ```
    pub fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }

    fn ensure_dir(&self, opts: Opts<'_>) -> Result<()> {
        self.client
            .ensure_path_with(&self.dir, opts.mode(self.dir_mode).acl(&self.acl))
    }

    /// The one implementation behind every read. A waiting call rides out
    /// retryable errors (the ensemble away, a session expiry) until its
    /// deadline, then reports the last one.
    fn next(&self, remove: bool, wait: Wait) -> Result<Option<Vec<u8>>> {
        let Wait::Until(deadline) = wait else {
            return self.next_once(remove, wait);
        };
        let mut backoff = Backoff::new(FIRST_WAIT_BACKOFF, MAX_WAIT_BACKOFF);
        loop {
            match self.next_once(remove, wait) {
                Err(e) if e.is_retryable() && !self.client.is_closed() => {
                    let now = Instant::now();
                    if deadline.is_some_and(|d| now >= d) {
                        // Connected to a server that answered too late: no
                        // item within the timeout. Otherwise the ensemble is
                        // out of reach, and that is the answer.
                        if self.client.answered_too_late(&e) {
                            return Ok(None);
                        }
                        return Err(e);
                    }
                    let pause = backoff.pause();
                    let pause = deadline.map_or(pause, |d| pause.min(d - now));
                    // The connection's state changes are logged once each.
                    log::debug!("{}: {e}; still waiting for an item", self.dir);
                    std::thread::sleep(pause);
                }
                other => return other,
            }
        }
    }

    /// Works through the local list, lists again when it is used up, and waits
    /// for a change if asked to.
    fn next_once(&self, remove: bool, wait: Wait) -> Result<Option<Vec<u8>>> {
        // Each request gives up at the call's deadline, if it has one; a call
        // that never waits for an item waits for a server at most `TRY_WAIT`.
        let deadline = match wait {
            Wait::Until(deadline) => deadline,
            Wait::No => None,
        };
        let opts = match wait {
            Wait::Until(deadline) => Opts::new().until(deadline),
            Wait::No => Opts::new().until(Instant::now().checked_add(TRY_WAIT)),
        };
        loop {
            if let Some(data) = self.next_known(remove, opts, deadline)? {
                return Ok(Some(data));
            }
            let (listing, watch) = match wait {
                Wait::No => (
                    self.client.get_children_with(&self.dir, opts).map(|(names, _)| names),
                    None,
                ),
                Wait::Until(_) => match self.client.watch_children(&self.dir, &Latch::new(), opts) {
                    Ok((names, _, watch)) => (Ok(names), Some(watch)),
                    Err(e) => (Err(e), None),
                },
            };
            match listing {
                Ok(names) => {
                    if self.local.refill(&self.dir, names) > 0 {
                        continue;
                    }
                }
                Err(Error::NoNode { .. }) => match wait {
                    Wait::No => return Ok(None),
                    Wait::Until(_) => {
                        // Missing, or reaped as an empty container: recreate and watch again.
                        self.ensure_dir(opts)?;
                        continue;
                    }
                },
                Err(e) => return Err(e),
            }
            let (Wait::Until(deadline), Some(watch)) = (wait, watch) else {
                return Ok(None);
            };
            // Also wake on a connection change or close, which may leave the watch silent.
            let _guard = self.client.wake_on_state_change(watch.latch());
            if self.client.is_closed() {
                return Err(Error::Closed);
            }
            // Listed again at the rescan interval even if the watch stays
            // silent: the server drops events the client may not read.
            let rescan_at = Instant::now().checked_add(self.rescan_interval);
            if !watch.latch().wait_until(earliest(deadline, rescan_at)) && deadline.is_some_and(|d| Instant::now() >= d)
            {
                return Ok(None);
            }
            if self.client.is_closed() {
                return Err(Error::Closed);
            }
        }
    }
}
