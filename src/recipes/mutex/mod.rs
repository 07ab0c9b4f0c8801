//! [`Mutex`]: a distributed lock compatible with Apache Curator's
//! `InterProcessMutex` (5.x), so Rust and Java participants can share one
//! lock path.
//!
//! The files:
//! - `builder.rs`: [`MutexBuilder`], every setting validated in `build`.
//! - `guard.rs`: [`MutexGuard`], one acquisition of a thread's hold.
//!
//! The machinery is the one Curator's locks share (`recipes::lock`), with
//! Curator's standard driver: nodes named `_c_<UUID>-lock-<sequence>` under
//! the lock path (see `recipes::names`), ordered by the sequence; a
//! participant holds when fewer than `max_leases` come before it.

mod builder;
mod guard;

use std::time::{Duration, Instant};

pub use builder::MutexBuilder;
pub use guard::MutexGuard;

use crate::client::{ZkClient, TRY_WAIT};
use crate::error::Result;
use crate::recipes::lock::{Acquisition, Driver, Holds, Participant};

/// A distributed lock, compatible with Curator's `InterProcessMutex` on the
/// same path: a participant holds it while fewer than
/// [`max_leases`](MutexBuilder::max_leases) (1 by default) participants
/// that came before it still hold or wait; they hold in the order they
/// asked (fair, first in first out).
///
/// Each acquisition is a [`MutexGuard`], which releases the lock when
/// dropped and carries a [fencing token](MutexGuard::token) and the news of
/// the hold's [loss](MutexGuard::lost). The lock is reentrant within a
/// thread, as Curator's: a thread that holds it and acquires it again gets
/// another guard at once, and the lock is released when the thread's last
/// guard drops. Share one `Mutex` between threads by reference or in an
/// `Arc`; two `Mutex` values on one path are two participants, even in one
/// thread.
///
/// # How it works
/// Each waiting or holding participant has one ephemeral sequential node
/// under the lock path. A waiter watches only the node just before its turn
/// (the `max_leases`-th before its own), so a release wakes one waiter, not
/// every one. A participant that stops waiting (a deadline, an error, a
/// closed client) deletes its node, in the background if the ensemble is
/// out of reach, so it never blocks the line; nodes of a session the server
/// expired are gone with it.
///
/// On ZooKeeper 3.6 and later, each `Mutex` sets one persistent recursive
/// watch on the lock path (sent with its first create, in the same round
/// trip), which tells a holder of its node's loss without a request per
/// lock, and lets the waiter just behind the holder take the lock on the
/// event of its deletion, without listing the line again. It hears of every
/// node created or deleted under the lock path, so keep the path for the
/// lock's nodes. A client built [without persistent
/// watches](crate::ZkClientBuilder::without_persistent_watches) watches
/// each holder's node with a request instead.
///
/// # Notable errors
/// - [`Error::Unreachable`](crate::Error::Unreachable): no server answered
///   in time: by the deadline of a timed call, or within the client's request
///   timeout for [`lock`](Self::lock).
/// - [`Error::Timeout`](crate::Error::Timeout): a connected server did not
///   answer in time.
/// - [`Error::Closed`](crate::Error::Closed): the client is closed.
///
/// ```no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// use std::time::Duration;
/// use zk_queue::{ZkClient, recipes::Mutex};
/// let client = ZkClient::connect("127.0.0.1:2181")?;
/// let mutex = Mutex::builder(&client, "/locks/nightly-report").build()?;
/// if let Some(guard) = mutex.lock_timeout(Duration::from_secs(10))? {
///     // Only one process at a time gets here.
///     println!("writing the report with token {}", guard.token());
/// }
/// # Ok(())
/// # }
/// ```
pub struct Mutex {
    lock: Participant,
    /// Curator's standard driver with the lock's `max_leases`.
    driver: Driver,
    /// The hold of each thread that holds the lock.
    holds: Holds,
}

impl Mutex {
    /// A builder of a lock at `path` for `client`.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let mutex = zk_queue::recipes::Mutex::builder(&client, "/locks/report").build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn builder(client: &ZkClient, path: &str) -> MutexBuilder {
        MutexBuilder::new(client, path)
    }

    fn new(lock: Participant, max_leases: usize) -> Mutex {
        Mutex {
            lock,
            driver: Driver::Mutex { max_leases },
            holds: Holds::default(),
        }
    }

    /// Blocks until this thread holds the lock.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let mutex = zk_queue::recipes::Mutex::builder(&client, "/locks/report").build()?;
    /// let guard = mutex.lock()?;
    /// let again = mutex.lock()?; // reentrant: at once, on the same node
    /// assert_eq!(guard.token(), again.token());
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// See [Notable errors](Mutex#notable-errors): each request gives up
    /// within the client's request timeout; waiting for the turn does not.
    pub fn lock(&self) -> Result<MutexGuard<'_>> {
        loop {
            if let Some(guard) = self.lock_until(None, true)? {
                return Ok(guard);
            }
        }
    }

    /// Takes the lock if no one else holds it, without waiting for others;
    /// `None` if someone does. It waits for a server at most a second or so
    /// (a connected server's answer in flight may take another second).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let mutex = zk_queue::recipes::Mutex::builder(&client, "/locks/report").build()?;
    /// match mutex.try_lock()? {
    ///     Some(_guard) => println!("writing the report"),
    ///     None => println!("another process is writing it"),
    /// }
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// As [`lock`](Self::lock), [`Error::Unreachable`](crate::Error::Unreachable)
    /// once no server answered within that bound.
    pub fn try_lock(&self) -> Result<Option<MutexGuard<'_>>> {
        self.lock_until(Some(Instant::now() + TRY_WAIT), false)
    }

    /// Blocks until this thread holds the lock (`Some`) or `timeout` passes
    /// (`None`); its node is then deleted, so it never blocks the line.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let mutex = zk_queue::recipes::Mutex::builder(&client, "/locks/report").build()?;
    /// use std::time::Duration;
    /// if mutex.lock_timeout(Duration::from_secs(5))?.is_none() {
    ///     println!("still busy after 5 s");
    /// }
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// [`Error::Unreachable`](crate::Error::Unreachable) by the deadline if
    /// no server can be reached then, [`Error::Timeout`](crate::Error::Timeout)
    /// if a connected server did not answer in time; otherwise as
    /// [`lock`](Self::lock), each request given up by the deadline (plus a
    /// second for an answer in flight from a connected server).
    pub fn lock_timeout(&self, timeout: Duration) -> Result<Option<MutexGuard<'_>>> {
        match Instant::now().checked_add(timeout) {
            Some(deadline) => self.lock_until(Some(deadline), true),
            None => self.lock().map(Some),
        }
    }

    /// Blocks until this thread holds the lock (`Some`), or until the latch
    /// it was [built](MutexBuilder::build_cancellable) with opens (`None`;
    /// its node is then deleted).
    pub(crate) fn lock_cancellable(&self) -> Result<Option<MutexGuard<'_>>> {
        self.lock_until(None, true)
    }

    /// The one implementation: reentry, or an attempt until `deadline`
    /// (waiting for the turn only if `patient`).
    fn lock_until(&self, deadline: Option<Instant>, patient: bool) -> Result<Option<MutexGuard<'_>>> {
        let hold = self.lock.acquire(&self.holds, &self.driver, deadline, patient)?;
        Ok(hold.map(|hold| MutexGuard::new(Acquisition::new(&self.lock, &self.holds, hold))))
    }

    /// Whether the calling thread holds the lock (by a guard it has not
    /// dropped; the hold may be [lost](MutexGuard::is_held) since).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let mutex = zk_queue::recipes::Mutex::builder(&client, "/locks/report").build()?;
    /// let guard = mutex.lock()?;
    /// assert!(mutex.is_held_by_current_thread());
    /// drop(guard);
    /// assert!(!mutex.is_held_by_current_thread());
    /// # Ok(())
    /// # }
    /// ```
    pub fn is_held_by_current_thread(&self) -> bool {
        self.holds.held_by_current_thread()
    }

    /// The lock path.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let mutex = zk_queue::recipes::Mutex::builder(&client, "/locks/report").build()?;
    /// assert_eq!(mutex.path(), "/locks/report");
    /// # Ok(())
    /// # }
    /// ```
    pub fn path(&self) -> &str {
        &self.lock.path
    }

    /// The nodes under the lock path in the order they hold, the holders
    /// first, as the server lists them now (Curator's
    /// `getParticipantNodes`); empty if the path does not exist.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let mutex = zk_queue::recipes::Mutex::builder(&client, "/locks/report").build()?;
    /// println!("{} participants", mutex.participant_nodes()?.len());
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// A connection error once the client's retry policy gives up.
    pub fn participant_nodes(&self) -> Result<Vec<String>> {
        self.lock.nodes(&self.driver)
    }
}

impl std::fmt::Debug for Mutex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mutex")
            .field("path", &self.lock.path)
            .field("driver", &self.driver)
            .field("holders", &self.holds.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mutex_is_shared_between_threads() {
        fn shared<T: Send + Sync>() {}
        shared::<Mutex>();
        shared::<MutexBuilder>();
    }
}
