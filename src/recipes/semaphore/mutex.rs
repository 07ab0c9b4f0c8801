//! [`SemaphoreMutex`]: Curator's `InterProcessSemaphoreMutex`, a lock that
//! is a [`Semaphore`] of one lease, not reentrant; [`SemaphoreMutexGuard`];
//! [`SemaphoreMutexBuilder`], its settings validated in `build`.

use std::marker::PhantomData;
use std::thread::ThreadId;
use std::time::Duration;

use crossbeam_channel::Receiver;

use super::{Semaphore, SemaphoreBuilder, SemaphoreLease};
use crate::client::{Acl, ZkClient};
use crate::error::{Error, Result};

/// A lock shared with Curator's `InterProcessSemaphoreMutex` on the same
/// path: a [`Semaphore`] of one lease (same nodes), so at most one
/// participant holds it.
///
/// It is not reentrant, as Curator's is not: where Curator's second
/// `acquire` from the holding thread blocks forever, this one's
/// [`lock`](Self::lock) (and its `try_` and `_timeout` forms) from a thread
/// that holds it returns [`Error::InvalidState`] at once. Other threads
/// wait for the guard to drop, as other participants do. Use a
/// [`Mutex`](crate::recipes::Mutex) for a reentrant lock (Curator's
/// `InterProcessMutex`, other nodes).
///
/// ```no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// use zk_queue::{ZkClient, recipes::SemaphoreMutex};
/// let client = ZkClient::connect("127.0.0.1:2181")?;
/// let mutex = SemaphoreMutex::new(&client, "/app/compaction")?;
/// let guard = mutex.lock()?;
/// assert!(mutex.lock().is_err(), "not reentrant");
/// # Ok(())
/// # }
/// ```
pub struct SemaphoreMutex {
    semaphore: Semaphore,
    /// The threads with a guard of it through this value: one, unless a
    /// guard's lease was lost and another thread took the lock since.
    holders: parking_lot::Mutex<Vec<ThreadId>>,
}

impl SemaphoreMutex {
    /// A builder of a lock at `path` for `client`, to set its node data or
    /// ACL.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let mutex = zk_queue::recipes::SemaphoreMutex::builder(&client, "/app/compaction").data("host-a").build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn builder(client: &ZkClient, path: &str) -> SemaphoreMutexBuilder {
        SemaphoreMutexBuilder::new(client, path)
    }

    /// A lock at `path` for `client`, with the host's address as its node
    /// data and the client's default ACL, as Curator's: the shortcut of
    /// [`builder`](Self::builder)`(client, path).build()`.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let mutex = zk_queue::recipes::SemaphoreMutex::new(&client, "/app/compaction")?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// As [`SemaphoreBuilder::build`](super::SemaphoreBuilder::build).
    pub fn new(client: &ZkClient, path: &str) -> Result<SemaphoreMutex> {
        SemaphoreMutex::builder(client, path).build()
    }

    /// A lock at `path` for `client` whose nodes have `acl`: the shortcut of
    /// [`builder`](Self::builder)`(client, path).acl(acl).build()`.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// use zk_queue::client::Acl;
    /// let mutex = zk_queue::recipes::SemaphoreMutex::with_acl(&client, "/app/compaction", vec![Acl::anyone_all()])?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// As [`SemaphoreBuilder::build`](super::SemaphoreBuilder::build).
    pub fn with_acl(client: &ZkClient, path: &str, acl: Vec<Acl>) -> Result<SemaphoreMutex> {
        SemaphoreMutex::builder(client, path).acl(acl).build()
    }

    fn of(semaphore: Semaphore) -> SemaphoreMutex {
        SemaphoreMutex {
            semaphore,
            holders: parking_lot::Mutex::new(Vec::new()),
        }
    }

    /// Blocks until this thread holds the lock.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let mutex = zk_queue::recipes::SemaphoreMutex::new(&client, "/app/compaction")?;
    /// let guard = mutex.lock()?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidState`] at once if this thread holds it already;
    /// otherwise as [`Semaphore::acquire`].
    pub fn lock(&self) -> Result<SemaphoreMutexGuard<'_>> {
        self.refuse_reentry()?;
        self.guard(self.semaphore.acquire()?)
    }

    /// Takes the lock if it is free, as [`Semaphore::try_acquire`].
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let mutex = zk_queue::recipes::SemaphoreMutex::new(&client, "/app/compaction")?;
    /// if let Some(_guard) = mutex.try_lock()? {
    ///     println!("compacting");
    /// }
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// As [`lock`](Self::lock) and [`Semaphore::try_acquire`].
    pub fn try_lock(&self) -> Result<Option<SemaphoreMutexGuard<'_>>> {
        self.refuse_reentry()?;
        self.semaphore.try_acquire()?.map(|lease| self.guard(lease)).transpose()
    }

    /// Blocks until this thread holds the lock (`Some`) or `timeout`
    /// passes (`None`), as [`Semaphore::acquire_timeout`].
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let mutex = zk_queue::recipes::SemaphoreMutex::new(&client, "/app/compaction")?;
    /// use std::time::Duration;
    /// let guard = mutex.lock_timeout(Duration::from_secs(5))?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// As [`lock`](Self::lock) and [`Semaphore::acquire_timeout`].
    pub fn lock_timeout(&self, timeout: Duration) -> Result<Option<SemaphoreMutexGuard<'_>>> {
        self.refuse_reentry()?;
        self.semaphore
            .acquire_timeout(timeout)?
            .map(|lease| self.guard(lease))
            .transpose()
    }

    /// Whether the calling thread holds the lock through this value
    /// (Curator's `isAcquiredInThisProcess`, per thread).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let mutex = zk_queue::recipes::SemaphoreMutex::new(&client, "/app/compaction")?;
    /// let guard = mutex.lock()?;
    /// assert!(mutex.is_held_by_current_thread());
    /// # Ok(())
    /// # }
    /// ```
    pub fn is_held_by_current_thread(&self) -> bool {
        self.holders.lock().contains(&std::thread::current().id())
    }

    /// The lock's path.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let mutex = zk_queue::recipes::SemaphoreMutex::new(&client, "/app/compaction")?;
    /// assert_eq!(mutex.path(), "/app/compaction");
    /// # Ok(())
    /// # }
    /// ```
    pub fn path(&self) -> &str {
        self.semaphore.path()
    }

    fn refuse_reentry(&self) -> Result<()> {
        if self.is_held_by_current_thread() {
            return Err(Error::InvalidState(
                "this thread holds the semaphore mutex already, and it is not reentrant",
            ));
        }
        Ok(())
    }

    fn guard<'a>(&'a self, lease: SemaphoreLease<'a>) -> Result<SemaphoreMutexGuard<'a>> {
        self.holders.lock().push(std::thread::current().id());
        Ok(SemaphoreMutexGuard {
            mutex: self,
            lease,
            _thread: PhantomData,
        })
    }
}

impl std::fmt::Debug for SemaphoreMutex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SemaphoreMutex").field("path", &self.path()).finish()
    }
}

/// A hold of a [`SemaphoreMutex`]: released when dropped. It belongs to the
/// thread that locked (it is not `Send`).
///
/// ```no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
/// # let mutex = zk_queue::recipes::SemaphoreMutex::new(&client, "/app/compaction")?;
/// let guard = mutex.lock()?;
/// println!("compacting with token {}", guard.token());
/// # Ok(())
/// # }
/// ```
#[must_use = "the lock is released as soon as the guard is dropped"]
pub struct SemaphoreMutexGuard<'a> {
    mutex: &'a SemaphoreMutex,
    lease: SemaphoreLease<'a>,
    /// Not `Send`: the hold belongs to the thread that locked.
    _thread: PhantomData<std::sync::MutexGuard<'static, ()>>,
}

impl SemaphoreMutexGuard<'_> {
    /// The fencing token: see [`SemaphoreLease::token`].
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let mutex = zk_queue::recipes::SemaphoreMutex::new(&client, "/app/compaction")?;
    /// let token = mutex.lock()?.token();
    /// # Ok(())
    /// # }
    /// ```
    pub fn token(&self) -> u64 {
        self.lease.token()
    }

    /// Whether the lock is certainly still held: see [`SemaphoreLease::is_held`].
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let mutex = zk_queue::recipes::SemaphoreMutex::new(&client, "/app/compaction")?;
    /// let guard = mutex.lock()?;
    /// assert!(guard.is_held());
    /// # Ok(())
    /// # }
    /// ```
    pub fn is_held(&self) -> bool {
        self.lease.is_held()
    }

    /// A channel that disconnects when the hold is lost or in doubt: see
    /// [`SemaphoreLease::lost`].
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let mutex = zk_queue::recipes::SemaphoreMutex::new(&client, "/app/compaction")?;
    /// let guard = mutex.lock()?;
    /// let lost = guard.lost();
    /// # Ok(())
    /// # }
    /// ```
    pub fn lost(&self) -> Receiver<()> {
        self.lease.lost()
    }

    /// The path of the lease node the lock is held by.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let mutex = zk_queue::recipes::SemaphoreMutex::new(&client, "/app/compaction")?;
    /// let guard = mutex.lock()?;
    /// assert!(guard.node().starts_with("/app/compaction/leases/"));
    /// # Ok(())
    /// # }
    /// ```
    pub fn node(&self) -> &str {
        self.lease.node()
    }
}

impl Drop for SemaphoreMutexGuard<'_> {
    fn drop(&mut self) {
        let mut holders = self.mutex.holders.lock();
        if let Some(at) = holders.iter().position(|id| *id == std::thread::current().id()) {
            holders.swap_remove(at);
        }
    }
}

impl std::fmt::Debug for SemaphoreMutexGuard<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SemaphoreMutexGuard")
            .field("lease", &self.lease)
            .finish()
    }
}

/// Builds a [`SemaphoreMutex`]; made by [`SemaphoreMutex::builder`] or
/// [`SemaphoreMutexBuilder::new`].
///
/// ```no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// use zk_queue::{ZkClient, recipes::SemaphoreMutex};
/// let client = ZkClient::connect("127.0.0.1:2181")?;
/// let mutex = SemaphoreMutex::builder(&client, "/app/compaction")
///     .data("compactor-1")
///     .build()?;
/// # Ok(())
/// # }
/// ```
#[must_use = "a builder does nothing until `build` is called"]
#[derive(Debug)]
pub struct SemaphoreMutexBuilder {
    semaphore: SemaphoreBuilder,
}

impl SemaphoreMutexBuilder {
    /// A builder of a lock at `path` for `client`, with the defaults below.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let mutex = zk_queue::recipes::SemaphoreMutexBuilder::new(&client, "/app/compaction").build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn new(client: &ZkClient, path: &str) -> SemaphoreMutexBuilder {
        SemaphoreMutexBuilder {
            semaphore: SemaphoreBuilder::new(client, path).max_leases(1),
        }
    }

    /// The data of this participant's nodes (its lease and lock nodes),
    /// which every participant can read. Defaults to what Curator writes:
    /// this host's IP address as text, or nothing if it has none.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let mutex = zk_queue::recipes::SemaphoreMutex::builder(&client, "/app/compaction").data("host-a").build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn data(mut self, data: impl Into<Vec<u8>>) -> Self {
        self.semaphore = self.semaphore.data(data);
        self
    }

    /// The ACL of the lock's nodes (and of its paths, if they are created).
    /// Defaults to the client's default ACL.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// use zk_queue::client::Acl;
    /// let mutex = zk_queue::recipes::SemaphoreMutex::builder(&client, "/app/compaction")
    ///     .acl(vec![Acl::anyone_all()])
    ///     .build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn acl(mut self, acl: Vec<Acl>) -> Self {
        self.semaphore = self.semaphore.acl(acl);
        self
    }

    /// Validates the settings and makes the lock; nothing is sent to the
    /// server until it is first taken.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let mutex = zk_queue::recipes::SemaphoreMutex::builder(&client, "/app/compaction").build()?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidPath`](crate::Error::InvalidPath) for a path that is
    /// not valid, or is the root;
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for an empty
    /// ACL; [`Error::Closed`](crate::Error::Closed) if the client is closed.
    pub fn build(self) -> Result<SemaphoreMutex> {
        self.semaphore.build().map(SemaphoreMutex::of)
    }
}
