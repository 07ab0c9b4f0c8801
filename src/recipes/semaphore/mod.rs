//! [`Semaphore`]: a counting semaphore compatible with Apache Curator's
//! `InterProcessSemaphoreV2` (5.x), and [`SemaphoreMutex`], its one-lease
//! lock (Curator's `InterProcessSemaphoreMutex`): Rust and Java
//! participants share one path.
//!
//! The files:
//! - `acquire.rs`: the one implementation of the acquire family.
//! - `builder.rs`: [`SemaphoreBuilder`], every setting validated in `build`.
//! - `lease.rs`: [`SemaphoreLease`], one lease, returned when dropped.
//! - `fast.rs`: a free lease without the lock: one create with two listings.
//! - `slow.rs`: Curator's own way, for when the fast one finds others.
//! - `count.rs`: the lease count recorded at the path.
//! - `mutex.rs`: [`SemaphoreMutex`], its builder and its guard.
//!
//! How it works, and why it is safe beside Curator's participants, is on
//! [`Semaphore`]; each file's doc has its part.

mod acquire;
mod builder;
mod count;
mod fast;
mod lease;
mod mutex;
mod slow;

use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

pub use builder::SemaphoreBuilder;
pub use lease::SemaphoreLease;
pub use mutex::{SemaphoreMutex, SemaphoreMutexBuilder, SemaphoreMutexGuard};

use crate::client::{Acl, ZkClient, TRY_WAIT};
use crate::error::{Error, Result};
use crate::path;
use crate::recipes::lock::local_address;
use crate::recipes::Mutex;

/// A counting semaphore shared with Curator's `InterProcessSemaphoreV2`:
/// at most [`max_leases`](SemaphoreBuilder::max_leases) leases are held at
/// once, across every participant of the path. Those that wait are served
/// in the order they came, as Curator's; a free lease goes to whoever asks
/// first while nobody waits.
///
/// Each lease is a [`SemaphoreLease`], returned when dropped, with a
/// [fencing token](SemaphoreLease::token) and the news of its
/// [loss](SemaphoreLease::lost). A participant may hold several leases (by
/// calling again, or with [`acquire_many`](Self::acquire_many)). Share one
/// `Semaphore` between threads by reference or in an `Arc`.
///
/// # How it works
/// ## The layout (Curator's)
/// - `<path>/locks`: an [`InterProcessMutex`](crate::recipes::Mutex) (its
///   `_c_<UUID>-lock-<sequence>` nodes) that lets one participant at a
///   time create a lease and count;
/// - `<path>/leases`: one ephemeral sequential `_c_<UUID>-lease-<sequence>`
///   node per lease held, and at most one more: the lease of the
///   participant that holds the lock and waits.
///
/// ## The algorithm and its invariants
/// A participant holds the lock, creates its lease node, and lists the
/// leases: at most `max_leases` listed, it holds; more, it keeps the lock
/// and lists again whenever the leases change. Then it lets go of the lock.
/// A lease is returned by deleting its node.
/// - At most `max_leases` hold: of the holders, the one whose lease was
///   created last listed every other holder's lease (created before its
///   own, and not yet deleted), and counted at most `max_leases`. A lease
///   node that holds nothing (a waiter's, a stray one) only makes others
///   count more, so wait longer, never hold beyond the count.
/// - No deadlock: only the lock's holder has a lease node that waits, so
///   the first lease returned lets it hold.
/// - Waiters are served in the order they join the lock's line.
///
/// This semaphore takes Curator's steps when others are taking or holding
/// leases. Otherwise it skips the lock: the lease's create and the
/// listings of the leases and of the lock's line, written together; it
/// holds if nobody is in the line and at most `max_leases` leases are
/// listed, and takes its lease back and goes Curator's way otherwise. The
/// first invariant needs no lock, as its argument shows; a fast
/// participant never waits with a lease, and does not keep one while
/// anyone is in the line, so the other two hold as well (a lease taken
/// back only makes a waiter list the leases once more). An uncontended
/// lease costs one round trip and one write (Curator's: five round trips
/// and three writes), its return one write.
///
/// # Lease count
/// Curator's semaphore stores no lease count: each participant trusts its
/// own `maxLeases`, and participants that disagree let as many hold as the
/// largest number says. This one records its count at the path (the data
/// of the path node, `max_leases=<n>`, which Curator ignores) on its first
/// acquisition, and refuses to acquire with
/// [`Error::InvalidArgument`](crate::Error::InvalidArgument) when another
/// count is recorded there. The record goes with the path node once the
/// semaphore is idle (a container, as Curator makes it), so to change the
/// count, stop every participant of the old one first. Curator participants
/// are not checked: give them the same number.
///
/// # Notable errors
/// - [`Error::Unreachable`](crate::Error::Unreachable): no server answered
///   in time: by the deadline of a timed call, or within the client's
///   request timeout for [`acquire`](Self::acquire).
/// - [`Error::Timeout`](crate::Error::Timeout): a connected server did not
///   answer in time.
/// - [`Error::InvalidArgument`](crate::Error::InvalidArgument): another
///   lease count is recorded at the path, or more leases are asked for at
///   once than there are.
/// - [`Error::Closed`](crate::Error::Closed): the client is closed.
///
/// ```no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// use std::time::Duration;
/// use zk_queue::{ZkClient, recipes::Semaphore};
/// let client = ZkClient::connect("127.0.0.1:2181")?;
/// let crawlers = Semaphore::builder(&client, "/app/crawlers").max_leases(4).build()?;
/// if let Some(lease) = crawlers.acquire_timeout(Duration::from_secs(10))? {
///     // At most four processes at a time get here.
///     println!("crawling with token {}", lease.token());
/// }
/// # Ok(())
/// # }
/// ```
pub struct Semaphore {
    client: ZkClient,
    path: String,
    locks_path: String,
    leases_path: String,
    /// The lock at `<path>/locks`.
    locks: Mutex,
    max_leases: usize,
    data: Vec<u8>,
    acl: Vec<Acl>,
    /// Whether the lease count was checked against the path's record.
    checked: AtomicBool,
}

impl Semaphore {
    /// A builder of a semaphore at `path` for `client`.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let semaphore = zk_queue::recipes::Semaphore::builder(&client, "/app/crawlers").max_leases(4).build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn builder(client: &ZkClient, path: &str) -> SemaphoreBuilder {
        SemaphoreBuilder::new(client, path)
    }

    fn new(
        client: ZkClient,
        path: String,
        max_leases: usize,
        data: Option<Vec<u8>>,
        acl: Option<Vec<Acl>>,
    ) -> Result<Semaphore> {
        path::validate(&path)?;
        if path == "/" {
            return Err(Error::InvalidPath {
                path,
                reason: "a semaphore needs a path of its own, not the root",
            });
        }
        if acl.as_ref().is_some_and(Vec::is_empty) {
            return Err(Error::InvalidArgument(
                "the acl of a semaphore must not be empty".into(),
            ));
        }
        if client.is_closed() {
            return Err(Error::Closed);
        }
        let acl = acl.unwrap_or_else(|| client.default_acl().to_vec());
        let data = data.unwrap_or_else(local_address);
        let locks_path = path::join(&path, "locks");
        let locks = Mutex::builder(&client, &locks_path)
            .data(data.clone())
            .acl(acl.clone())
            .build()?;
        Ok(Semaphore {
            leases_path: path::join(&path, "leases"),
            locks_path,
            locks,
            client,
            path,
            max_leases,
            data,
            acl,
            checked: AtomicBool::new(false),
        })
    }

    /// Blocks until this participant holds a lease.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let semaphore = zk_queue::recipes::Semaphore::builder(&client, "/app/crawlers").build()?;
    /// let lease = semaphore.acquire()?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// See [Notable errors](Semaphore#notable-errors): each request gives
    /// up within the client's request timeout; waiting for a lease does not.
    pub fn acquire(&self) -> Result<SemaphoreLease<'_>> {
        self.acquire_many(1).map(|mut leases| leases.remove(0))
    }

    /// Takes a lease if one is free and no other participant is taking
    /// one, without waiting for others (Curator's `acquire(0, unit)`);
    /// `None` otherwise. It waits for a server at most a second or so (a
    /// connected server's answer in flight may take another second).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let semaphore = zk_queue::recipes::Semaphore::builder(&client, "/app/crawlers").build()?;
    /// match semaphore.try_acquire()? {
    ///     Some(_lease) => println!("crawling"),
    ///     None => println!("enough crawlers already"),
    /// }
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire), [`Error::Unreachable`](crate::Error::Unreachable)
    /// once no server answered within that bound.
    pub fn try_acquire(&self) -> Result<Option<SemaphoreLease<'_>>> {
        self.try_acquire_many(1).map(|leases| leases.map(|mut l| l.remove(0)))
    }

    /// Blocks until this participant holds a lease (`Some`) or `timeout`
    /// passes (`None`); what it created is then deleted.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let semaphore = zk_queue::recipes::Semaphore::builder(&client, "/app/crawlers").build()?;
    /// use std::time::Duration;
    /// if semaphore.acquire_timeout(Duration::from_secs(5))?.is_none() {
    ///     println!("no lease free after 5 s");
    /// }
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// [`Error::Unreachable`](crate::Error::Unreachable) by the deadline if
    /// no server can be reached then; otherwise as [`acquire`](Self::acquire),
    /// each request given up by the deadline (plus a second for an answer in
    /// flight from a connected server).
    pub fn acquire_timeout(&self, timeout: Duration) -> Result<Option<SemaphoreLease<'_>>> {
        self.acquire_many_timeout(1, timeout)
            .map(|leases| leases.map(|mut l| l.remove(0)))
    }

    /// Blocks until this participant holds `n` leases (Curator's
    /// `acquire(qty)`): one after another, each as
    /// [`acquire`](Self::acquire) takes one. As with Curator's, two
    /// participants that each hold some leases and wait for more than are
    /// left wait for each other for ever: give such callers a timeout
    /// ([`acquire_many_timeout`](Self::acquire_many_timeout) returns what it
    /// took when it gives up).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let semaphore = zk_queue::recipes::Semaphore::builder(&client, "/app/crawlers").max_leases(4).build()?;
    /// let leases = semaphore.acquire_many(2)?;
    /// assert_eq!(leases.len(), 2);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for `n` 0
    /// or more than `max_leases` (which could never all be held); otherwise
    /// as [`acquire`](Self::acquire). The leases taken before an error are
    /// returned.
    pub fn acquire_many(&self, n: usize) -> Result<Vec<SemaphoreLease<'_>>> {
        loop {
            if let Some(leases) = self.acquire_until(n, None, true)? {
                return Ok(leases);
            }
        }
    }

    /// [`try_acquire`](Self::try_acquire) for `n` leases: `None` (and none
    /// kept) unless all `n` can be taken at once.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let semaphore = zk_queue::recipes::Semaphore::builder(&client, "/app/crawlers").max_leases(4).build()?;
    /// if let Some(leases) = semaphore.try_acquire_many(2)? {
    ///     println!("{} leases", leases.len());
    /// }
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// As [`acquire_many`](Self::acquire_many) and [`try_acquire`](Self::try_acquire).
    pub fn try_acquire_many(&self, n: usize) -> Result<Option<Vec<SemaphoreLease<'_>>>> {
        self.acquire_until(n, Some(Instant::now() + TRY_WAIT), false)
    }

    /// [`acquire_timeout`](Self::acquire_timeout) for `n` leases: `None`
    /// (and none kept) unless all `n` are held by the deadline (Curator's
    /// `acquire(qty, time, unit)`).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let semaphore = zk_queue::recipes::Semaphore::builder(&client, "/app/crawlers").max_leases(4).build()?;
    /// use std::time::Duration;
    /// let leases = semaphore.acquire_many_timeout(2, Duration::from_secs(5))?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// As [`acquire_many`](Self::acquire_many) and [`acquire_timeout`](Self::acquire_timeout).
    pub fn acquire_many_timeout(&self, n: usize, timeout: Duration) -> Result<Option<Vec<SemaphoreLease<'_>>>> {
        match Instant::now().checked_add(timeout) {
            Some(deadline) => self.acquire_until(n, Some(deadline), true),
            None => self.acquire_many(n).map(Some),
        }
    }

    /// The semaphore's path.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let semaphore = zk_queue::recipes::Semaphore::builder(&client, "/app/crawlers").build()?;
    /// assert_eq!(semaphore.path(), "/app/crawlers");
    /// # Ok(())
    /// # }
    /// ```
    pub fn path(&self) -> &str {
        &self.path
    }

    /// How many leases may be held at once.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let semaphore = zk_queue::recipes::Semaphore::builder(&client, "/app/crawlers").max_leases(4).build()?;
    /// assert_eq!(semaphore.max_leases(), 4);
    /// # Ok(())
    /// # }
    /// ```
    pub fn max_leases(&self) -> usize {
        self.max_leases
    }

    /// The lease nodes under `<path>/leases` as the server lists them now
    /// (Curator's `getParticipantNodes`): the leases held, at most one
    /// waiting, and any being taken back by a participant that found
    /// others taking leases;
    /// empty if there are none.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let semaphore = zk_queue::recipes::Semaphore::builder(&client, "/app/crawlers").build()?;
    /// println!("{} leases", semaphore.participant_nodes()?.len());
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// A connection error once the client's retry policy gives up.
    pub fn participant_nodes(&self) -> Result<Vec<String>> {
        match self.client.get_children(&self.leases_path) {
            Ok((children, _)) => Ok(children),
            Err(Error::NoNode { .. }) => Ok(Vec::new()),
            Err(e) => Err(e),
        }
    }
}

impl std::fmt::Debug for Semaphore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Semaphore")
            .field("path", &self.path)
            .field("max_leases", &self.max_leases)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_semaphore_and_its_leases_are_shared_between_threads() {
        fn shared<T: Send + Sync>() {}
        fn sent<T: Send>() {}
        shared::<Semaphore>();
        shared::<SemaphoreBuilder>();
        sent::<SemaphoreLease<'static>>();
    }
}
