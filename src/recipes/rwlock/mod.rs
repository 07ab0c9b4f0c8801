//! [`RwLock`]: a distributed read-write lock compatible with Apache
//! Curator's `InterProcessReadWriteLock` (5.x), so Rust and Java readers
//! and writers can share one lock path.
//!
//! The files:
//! - `builder.rs`: [`RwLockBuilder`], every setting validated in `build`.
//! - `guard.rs`: [`RwLockReadGuard`] and [`RwLockWriteGuard`], one
//!   acquisition of a thread's hold of either half.
//!
//! The machinery is the one Curator's locks share (`recipes::lock`), with
//! Curator's drivers for this lock: readers' nodes named
//! `_c_<UUID>-__READ__<sequence>` and writers' `_c_<UUID>-__WRIT__<sequence>`
//! under the lock path (see `recipes::names`), all in one line ordered by
//! the sequence. A writer holds when its node is first; a reader when no
//! writer's node comes before its own.

mod builder;
mod guard;

use std::time::{Duration, Instant};

pub use builder::RwLockBuilder;
pub use guard::{RwLockReadGuard, RwLockWriteGuard};

use crate::client::{ZkClient, TRY_WAIT};
use crate::error::{Error, Result};
use crate::path;
use crate::recipes::lock::{Acquisition, Driver, Holds, Participant};

/// A distributed read-write lock, compatible with Curator's
/// `InterProcessReadWriteLock` on the same path: any number of
/// participants read at once, a writer writes alone, and they hold in the
/// order they asked (fair: a waiting writer keeps out the readers that ask
/// after it).
///
/// Each acquisition is a guard, [`RwLockReadGuard`] or [`RwLockWriteGuard`],
/// which releases its half of the lock when dropped and carries a [fencing
/// token](RwLockWriteGuard::token) and the news of the hold's
/// [loss](RwLockWriteGuard::lost).
///
/// # Reentrancy, and downgrading
/// As Curator's, each half is reentrant within a thread: a thread that
/// holds it and acquires it again gets another guard at once, and the half
/// is released when the thread's last guard of it drops. A thread that
/// holds the write lock may take the read lock too, at once; releasing the
/// write lock then leaves it reading, and writers that were waiting still
/// wait until it stops (a downgrade: the read node takes the write node's
/// place in the line, as in Curator 5.5, which fixed CURATOR-621 so). A
/// thread that holds only the read lock cannot take the write lock (it would
/// wait for itself, as it waits forever in Curator): that is an error.
///
/// Share one `RwLock` between threads by reference or in an `Arc`; two
/// `RwLock` values on one path are two participants, even in one thread.
///
/// # How it works
/// Each waiting or holding reader and writer has one ephemeral sequential
/// node under the lock path, all in one line. A waiting writer watches
/// only the node just before its own, a waiting reader only the first
/// writer's before its own, so a release wakes only those it lets in (or
/// that must look again). A participant that stops waiting (a deadline, an
/// error, a closed client) deletes its node, in the background if the
/// ensemble is out of reach, so it never blocks the line; nodes of a session
/// the server expired are gone with it.
///
/// # Notable errors
/// - [`Error::Unreachable`]: no server answered in time: by the deadline of
///   a timed call, or within the client's request timeout for
///   [`read`](Self::read) and [`write`](Self::write).
/// - [`Error::Timeout`]: a connected server did not answer in time.
/// - [`Error::Closed`]: the client is closed.
/// - [`Error::InvalidState`]: a thread that holds only the read lock asked
///   for the write lock.
///
/// ```no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// use zk_queue::{ZkClient, recipes::RwLock};
/// let client = ZkClient::connect("127.0.0.1:2181")?;
/// let lock = RwLock::builder(&client, "/locks/catalog").build()?;
/// {
///     let _reading = lock.read()?; // beside other readers
///     println!("looking up an entry");
/// }
/// let writing = lock.write()?; // alone
/// println!("rewriting the catalog with token {}", writing.token());
/// // Downgrade: keep reading what was written; waiting writers still wait.
/// let reading = lock.read()?;
/// drop(writing);
/// println!("publishing the catalog read with token {}", reading.token());
/// # Ok(())
/// # }
/// ```
pub struct RwLock {
    lock: Participant,
    /// The read hold of each thread that reads.
    reads: Holds,
    /// The write hold of each thread that writes.
    writes: Holds,
}

impl RwLock {
    /// A builder of a read-write lock at `path` for `client`.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let lock = zk_queue::recipes::RwLock::builder(&client, "/locks/catalog").build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn builder(client: &ZkClient, path: &str) -> RwLockBuilder {
        RwLockBuilder::new(client, path)
    }

    fn new(lock: Participant) -> RwLock {
        RwLock {
            lock,
            reads: Holds::default(),
            writes: Holds::default(),
        }
    }

    /// Blocks until this thread holds the read lock: at once if it holds
    /// the read lock or the write lock already.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let lock = zk_queue::recipes::RwLock::builder(&client, "/locks/catalog").build()?;
    /// let guard = lock.read()?;
    /// let again = lock.read()?; // reentrant: at once, on the same node
    /// assert_eq!(guard.token(), again.token());
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// See [Notable errors](RwLock#notable-errors): each request gives up
    /// within the client's request timeout; waiting for the turn does not.
    pub fn read(&self) -> Result<RwLockReadGuard<'_>> {
        loop {
            if let Some(guard) = self.read_until(None, true)? {
                return Ok(guard);
            }
        }
    }

    /// Takes the read lock if no writer holds it or waits for it, without
    /// waiting; `None` if one does. It waits for a server at most a second
    /// or so (a connected server's answer in flight may take another
    /// second).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let lock = zk_queue::recipes::RwLock::builder(&client, "/locks/catalog").build()?;
    /// match lock.try_read()? {
    ///     Some(_guard) => println!("looking up an entry"),
    ///     None => println!("the catalog is being rewritten"),
    /// }
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// As [`read`](Self::read), [`Error::Unreachable`] once no server
    /// answered within that bound.
    pub fn try_read(&self) -> Result<Option<RwLockReadGuard<'_>>> {
        self.read_until(Some(Instant::now() + TRY_WAIT), false)
    }

    /// Blocks until this thread holds the read lock (`Some`) or `timeout`
    /// passes (`None`); its node is then deleted, so it never blocks the
    /// line.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let lock = zk_queue::recipes::RwLock::builder(&client, "/locks/catalog").build()?;
    /// use std::time::Duration;
    /// if lock.read_timeout(Duration::from_secs(5))?.is_none() {
    ///     println!("still being rewritten after 5 s");
    /// }
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// [`Error::Unreachable`] by the deadline if no server can be reached
    /// then; otherwise as [`read`](Self::read), each request given up by the
    /// deadline (plus a second for an answer in flight from a connected
    /// server).
    pub fn read_timeout(&self, timeout: Duration) -> Result<Option<RwLockReadGuard<'_>>> {
        match Instant::now().checked_add(timeout) {
            Some(deadline) => self.read_until(Some(deadline), true),
            None => self.read().map(Some),
        }
    }

    /// Blocks until this thread holds the write lock: at once if it holds
    /// it already.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let lock = zk_queue::recipes::RwLock::builder(&client, "/locks/catalog").build()?;
    /// let guard = lock.write()?;
    /// let again = lock.write()?; // reentrant: at once, on the same node
    /// assert_eq!(guard.token(), again.token());
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidState`] at once if this thread holds the read lock
    /// but not the write lock; otherwise see [Notable
    /// errors](RwLock#notable-errors): each request gives up within the
    /// client's request timeout; waiting for the turn does not.
    pub fn write(&self) -> Result<RwLockWriteGuard<'_>> {
        loop {
            if let Some(guard) = self.write_until(None, true)? {
                return Ok(guard);
            }
        }
    }

    /// Takes the write lock if no one else holds either half or waits,
    /// without waiting; `None` if someone does. It waits for a server at
    /// most a second or so (a connected server's answer in flight may take
    /// another second).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let lock = zk_queue::recipes::RwLock::builder(&client, "/locks/catalog").build()?;
    /// match lock.try_write()? {
    ///     Some(_guard) => println!("rewriting the catalog"),
    ///     None => println!("someone reads or writes it"),
    /// }
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// As [`write`](Self::write), [`Error::Unreachable`] once no server
    /// answered within that bound.
    pub fn try_write(&self) -> Result<Option<RwLockWriteGuard<'_>>> {
        self.write_until(Some(Instant::now() + TRY_WAIT), false)
    }

    /// Blocks until this thread holds the write lock (`Some`) or `timeout`
    /// passes (`None`); its node is then deleted, so it never blocks the
    /// line.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let lock = zk_queue::recipes::RwLock::builder(&client, "/locks/catalog").build()?;
    /// use std::time::Duration;
    /// if lock.write_timeout(Duration::from_secs(5))?.is_none() {
    ///     println!("still in use after 5 s");
    /// }
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// As [`write`](Self::write); [`Error::Unreachable`] by the deadline if
    /// no server can be reached then, and each request given up by the
    /// deadline (plus a second for an answer in flight from a connected
    /// server).
    pub fn write_timeout(&self, timeout: Duration) -> Result<Option<RwLockWriteGuard<'_>>> {
        match Instant::now().checked_add(timeout) {
            Some(deadline) => self.write_until(Some(deadline), true),
            None => self.write().map(Some),
        }
    }

    /// The one implementation of the read calls: reentry; the read node
    /// beside this thread's write node; or a place at the end of the line.
    fn read_until(&self, deadline: Option<Instant>, patient: bool) -> Result<Option<RwLockReadGuard<'_>>> {
        let client = &self.lock.client;
        let beside = self
            .writes
            .of_current_thread()
            .filter(|write| write.is_in_live_session(client))
            .map(|write| Driver::read_beside(path::name(write.node()), write.session(), write.czxid()));
        let hold = match beside {
            Some(driver) => match self.lock.acquire(&self.reads, &driver, deadline, patient) {
                // The write hold went with its session meanwhile: this thread
                // reads as anyone does.
                Err(Error::SessionExpired) => self.lock.acquire(&self.reads, &Driver::Read, deadline, patient)?,
                read => read?,
            },
            None => self.lock.acquire(&self.reads, &Driver::Read, deadline, patient)?,
        };
        Ok(hold.map(|hold| RwLockReadGuard::new(Acquisition::new(&self.lock, &self.reads, hold))))
    }

    /// The one implementation of the write calls.
    fn write_until(&self, deadline: Option<Instant>, patient: bool) -> Result<Option<RwLockWriteGuard<'_>>> {
        if self.reads.held_by_current_thread() && !self.writes.held_by_current_thread() {
            return Err(Error::InvalidState(
                "a thread that holds only the read lock cannot take the write lock: it would wait for itself",
            ));
        }
        let hold = self.lock.acquire(&self.writes, &Driver::Write, deadline, patient)?;
        Ok(hold.map(|hold| RwLockWriteGuard::new(Acquisition::new(&self.lock, &self.writes, hold))))
    }

    /// Whether the calling thread holds the read lock (by a guard it has not
    /// dropped; the hold may be [lost](RwLockReadGuard::is_held) since).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let lock = zk_queue::recipes::RwLock::builder(&client, "/locks/catalog").build()?;
    /// let guard = lock.read()?;
    /// assert!(lock.is_read_by_current_thread());
    /// drop(guard);
    /// assert!(!lock.is_read_by_current_thread());
    /// # Ok(())
    /// # }
    /// ```
    pub fn is_read_by_current_thread(&self) -> bool {
        self.reads.held_by_current_thread()
    }

    /// Whether the calling thread holds the write lock (by a guard it has
    /// not dropped; the hold may be [lost](RwLockWriteGuard::is_held)
    /// since).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let lock = zk_queue::recipes::RwLock::builder(&client, "/locks/catalog").build()?;
    /// let guard = lock.write()?;
    /// assert!(lock.is_written_by_current_thread());
    /// # Ok(())
    /// # }
    /// ```
    pub fn is_written_by_current_thread(&self) -> bool {
        self.writes.held_by_current_thread()
    }

    /// The lock path.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let lock = zk_queue::recipes::RwLock::builder(&client, "/locks/catalog").build()?;
    /// assert_eq!(lock.path(), "/locks/catalog");
    /// # Ok(())
    /// # }
    /// ```
    pub fn path(&self) -> &str {
        &self.lock.path
    }

    /// The readers' and writers' nodes under the lock path in the order they
    /// hold, as the server lists them now (Curator lists each half's with
    /// its `getParticipantNodes`); empty if the path does not exist.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let lock = zk_queue::recipes::RwLock::builder(&client, "/locks/catalog").build()?;
    /// let writers = lock.participant_nodes()?.iter().filter(|n| n.contains("__WRIT__")).count();
    /// println!("{writers} writers hold or wait");
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// A connection error once the client's retry policy gives up.
    pub fn participant_nodes(&self) -> Result<Vec<String>> {
        self.lock.nodes(&Driver::Read)
    }
}

impl std::fmt::Debug for RwLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RwLock")
            .field("path", &self.lock.path)
            .field("readers", &self.reads.len())
            .field("writers", &self.writes.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rwlock_is_shared_between_threads() {
        fn shared<T: Send + Sync>() {}
        shared::<RwLock>();
        shared::<RwLockBuilder>();
    }
}
