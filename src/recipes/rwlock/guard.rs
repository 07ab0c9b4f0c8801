//! [`RwLockReadGuard`] and [`RwLockWriteGuard`]: one acquisition of either
//! half of a [`RwLock`](super::RwLock), sharing its thread's hold of that
//! half with the thread's other guards of it.

use crossbeam_channel::Receiver;

use crate::recipes::lock::Acquisition;

/// One acquisition of the read lock of a [`RwLock`](super::RwLock): the
/// thread reads (beside other readers, never beside a writer) while a guard
/// of it lives; the read lock is released when the thread's last read guard
/// drops.
///
/// A guard belongs to the thread that acquired it (it is not `Send`), as
/// Curator's locks belong to their thread. Dropping never waits longer than
/// a short bound (about a second); a node that cannot be deleted by then is
/// deleted in the background, or goes with its session.
///
/// ```no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
/// let lock = zk_queue::recipes::RwLock::builder(&client, "/locks/catalog").build()?;
/// {
///     let guard = lock.read()?;
///     println!("reading the catalog with token {}", guard.token());
/// } // released here
/// # Ok(())
/// # }
/// ```
#[must_use = "the read lock is released as soon as the guard is dropped"]
pub struct RwLockReadGuard<'a>(Acquisition<'a>);

/// One acquisition of the write lock of a [`RwLock`](super::RwLock): the
/// thread writes, with no other participant reading or writing, while a
/// guard of it lives; the write lock is released when the thread's last
/// write guard drops.
///
/// The thread may also take the read lock meanwhile (at once), and keep it
/// after releasing the write lock: a downgrade, during which writers that
/// were waiting still wait. Dropping never waits longer than about a
/// second, as a [`RwLockReadGuard`]'s.
///
/// ```no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
/// let lock = zk_queue::recipes::RwLock::builder(&client, "/locks/catalog").build()?;
/// {
///     let guard = lock.write()?;
///     println!("rewriting the catalog with token {}", guard.token());
/// } // released here
/// # Ok(())
/// # }
/// ```
#[must_use = "the write lock is released as soon as the guard is dropped"]
pub struct RwLockWriteGuard<'a>(Acquisition<'a>);

impl<'a> RwLockReadGuard<'a> {
    pub(super) fn new(acquisition: Acquisition<'a>) -> RwLockReadGuard<'a> {
        RwLockReadGuard(acquisition)
    }

    /// The fencing token of this read hold: the creation zxid of its node,
    /// or, for the read lock of a thread that held the write lock when it
    /// took it, that write hold's token (its node takes the write node's
    /// place in the line). It is at least the token of every writer that
    /// held before this reader, and smaller than every later writer's;
    /// guards of one thread's read hold share it. A store that refuses a
    /// token smaller than the largest writer's it has seen refuses a reader
    /// that lost its lock to a writer unawares.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let lock = zk_queue::recipes::RwLock::builder(&client, "/locks/catalog").build()?;
    /// let written = lock.write()?.token();
    /// let read = lock.read()?.token();
    /// assert!(read > written, "a later hold has a larger token");
    /// # Ok(())
    /// # }
    /// ```
    pub fn token(&self) -> u64 {
        self.0.hold().token()
    }

    /// Whether the read lock is certainly still held: its node exists and
    /// has not changed, in the session that created it, and the client has
    /// stayed connected since. False once the hold is in doubt (a writer
    /// may hold now), and for good unless [`recheck`](Self::recheck)
    /// confirms it after the client reconnected in the same session.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let lock = zk_queue::recipes::RwLock::builder(&client, "/locks/catalog").build()?;
    /// let guard = lock.read()?;
    /// if guard.is_held() {
    ///     println!("the catalog cannot change under us");
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn is_held(&self) -> bool {
        self.0.is_held()
    }

    /// Confirms a read hold in doubt after a disconnection the session
    /// survived, as [`MutexGuard::recheck`](crate::recipes::MutexGuard::recheck)
    /// does: `Ok(true)` and [`is_held`](Self::is_held) true again if its node
    /// still exists, the same node, in the session that created it.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let lock = zk_queue::recipes::RwLock::builder(&client, "/locks/catalog").build()?;
    /// let guard = lock.read()?;
    /// if !guard.is_held() && !guard.recheck()? {
    ///     return Ok(()); // lost for good
    /// }
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// As [`MutexGuard::recheck`](crate::recipes::MutexGuard::recheck).
    pub fn recheck(&self) -> crate::Result<bool> {
        self.0.recheck()
    }

    /// A channel that disconnects when the read hold is lost or in doubt (as
    /// [`is_held`](Self::is_held) turns false) or released; it never carries
    /// a message. Select on it beside the reading.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let lock = zk_queue::recipes::RwLock::builder(&client, "/locks/catalog").build()?;
    /// use std::time::Duration;
    /// let guard = lock.read()?;
    /// if guard.lost().recv_timeout(Duration::from_secs(1)).is_ok() {
    ///     unreachable!("the channel never carries a message");
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn lost(&self) -> Receiver<()> {
        self.0.hold().lost()
    }

    /// The path of the lock's node this guard holds by (a `__READ__` node).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let lock = zk_queue::recipes::RwLock::builder(&client, "/locks/catalog").build()?;
    /// let guard = lock.read()?;
    /// assert!(guard.node().contains("-__READ__"));
    /// # Ok(())
    /// # }
    /// ```
    pub fn node(&self) -> &str {
        self.0.hold().node()
    }
}

impl<'a> RwLockWriteGuard<'a> {
    pub(super) fn new(acquisition: Acquisition<'a>) -> RwLockWriteGuard<'a> {
        RwLockWriteGuard(acquisition)
    }

    /// The fencing token of this write hold: the creation zxid of its node.
    /// Every later holder's token, reader's or writer's, is larger, also
    /// across the lock path being deleted and created again; guards of one
    /// thread's write hold share it. Pass it with every write to a store the
    /// lock protects, and have the store refuse a token smaller than the
    /// largest it has seen.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let lock = zk_queue::recipes::RwLock::builder(&client, "/locks/catalog").build()?;
    /// let first = lock.write()?.token();
    /// let second = lock.write()?.token();
    /// assert!(second > first);
    /// # Ok(())
    /// # }
    /// ```
    pub fn token(&self) -> u64 {
        self.0.hold().token()
    }

    /// Whether the write lock is certainly still held: its node exists and
    /// has not changed, in the session that created it, and the client has
    /// stayed connected since. False once the hold is in doubt (another
    /// participant may hold now), as Curator advises to treat `SUSPENDED`,
    /// and for good unless [`recheck`](Self::recheck) confirms it after the
    /// client reconnected in the same session.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let lock = zk_queue::recipes::RwLock::builder(&client, "/locks/catalog").build()?;
    /// let guard = lock.write()?;
    /// for entry in 0..10 {
    ///     if !guard.is_held() {
    ///         break; // another participant may hold the lock now
    ///     }
    ///     println!("rewriting entry {entry}");
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn is_held(&self) -> bool {
        self.0.is_held()
    }

    /// Confirms a write hold in doubt after a disconnection the session
    /// survived, as [`MutexGuard::recheck`](crate::recipes::MutexGuard::recheck)
    /// does: `Ok(true)` and [`is_held`](Self::is_held) true again if its node
    /// still exists, the same node, in the session that created it.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let lock = zk_queue::recipes::RwLock::builder(&client, "/locks/catalog").build()?;
    /// let guard = lock.write()?;
    /// if !guard.is_held() && !guard.recheck()? {
    ///     return Ok(()); // lost for good
    /// }
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// As [`MutexGuard::recheck`](crate::recipes::MutexGuard::recheck).
    pub fn recheck(&self) -> crate::Result<bool> {
        self.0.recheck()
    }

    /// A channel that disconnects when the write hold is lost or in doubt
    /// (as [`is_held`](Self::is_held) turns false) or released; it never
    /// carries a message. It is told by the client's own threads, which only
    /// signal: no user code runs on them.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let lock = zk_queue::recipes::RwLock::builder(&client, "/locks/catalog").build()?;
    /// use std::time::Duration;
    /// let guard = lock.write()?;
    /// let lost = guard.lost();
    /// let ticks = zk_queue::channel::tick(Duration::from_millis(100));
    /// loop {
    ///     zk_queue::channel::select! {
    ///         recv(lost) -> _ => break, // stop: another may hold the lock
    ///         recv(ticks) -> _ => println!("writing"),
    ///     }
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn lost(&self) -> Receiver<()> {
        self.0.hold().lost()
    }

    /// The path of the lock's node this guard holds by (a `__WRIT__` node).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let lock = zk_queue::recipes::RwLock::builder(&client, "/locks/catalog").build()?;
    /// let guard = lock.write()?;
    /// assert!(guard.node().contains("-__WRIT__"));
    /// # Ok(())
    /// # }
    /// ```
    pub fn node(&self) -> &str {
        self.0.hold().node()
    }
}

impl std::fmt::Debug for RwLockReadGuard<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.debug("RwLockReadGuard", f)
    }
}

impl std::fmt::Debug for RwLockWriteGuard<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.debug("RwLockWriteGuard", f)
    }
}
