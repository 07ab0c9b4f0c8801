//! [`SemaphoreLease`]: one lease of a [`Semaphore`](super::Semaphore),
//! returned when dropped; [`Held`]: what a lease holds by.

use std::time::Instant;

use crossbeam_channel::Receiver;

use crate::client::{DataWatch, Session, WakerGuard, ZkClient, TRY_WAIT};
use crate::recipes::lock::{Leftover, Nodes};
use crate::sync::Latch;

/// A lease node whose turn came: what a [`SemaphoreLease`] holds by.
pub(super) struct Held {
    /// The lease node's path.
    pub(super) node: String,
    /// The session it was created in.
    pub(super) session: Session,
    /// Its creation zxid, the fencing token.
    pub(super) czxid: i64,
    /// Opened when the lease may be gone: its node changed or went, the
    /// connection changed, or the session ended.
    pub(super) lost: Latch,
    /// The watch on the node, which opens `lost`.
    pub(super) _watch: DataWatch,
    /// Opens `lost` on every connection change.
    pub(super) _states: WakerGuard,
}

impl Held {
    fn is_held(&self, client: &ZkClient) -> bool {
        !self.lost.is_open() && client.holds_session(self.session)
    }
}

/// One lease of a [`Semaphore`](super::Semaphore) (Curator's `Lease`): held
/// while it lives, returned (its node deleted) when dropped.
///
/// Dropping never waits longer than a short bound (about a second); a node
/// that cannot be deleted by then is deleted in the background, or goes
/// with its session. Unlike a [`MutexGuard`](crate::recipes::MutexGuard), a
/// lease may be moved to and dropped on another thread, as Curator's leases
/// may be closed by any thread.
///
/// ```no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
/// let semaphore = zk_queue::recipes::Semaphore::builder(&client, "/app/crawlers").max_leases(4).build()?;
/// {
///     let lease = semaphore.acquire()?;
///     println!("crawling with token {}", lease.token());
/// } // returned here
/// # Ok(())
/// # }
/// ```
#[must_use = "the lease is returned as soon as it is dropped"]
pub struct SemaphoreLease<'a> {
    client: &'a ZkClient,
    leases_path: &'a str,
    held: Held,
    /// How long its return may wait for the server, if not the usual.
    release_by: Option<Instant>,
}

impl<'a> SemaphoreLease<'a> {
    pub(super) fn new(client: &'a ZkClient, leases_path: &'a str, held: Held) -> SemaphoreLease<'a> {
        SemaphoreLease {
            client,
            leases_path,
            held,
            release_by: None,
        }
    }

    /// Returns the lease, waiting for the server until `deadline` at most
    /// (a passed one: not at all; the node is then deleted in the
    /// background), for callers with a deadline of their own.
    pub(super) fn release_by(mut self, deadline: Instant) {
        self.release_by = Some(deadline);
    }

    /// The fencing token of this lease: its node's creation zxid. With one
    /// lease (`max_leases` 1, or a [`SemaphoreMutex`](super::SemaphoreMutex))
    /// every holder's token is larger than every earlier holder's, also
    /// across the path being deleted and created again, so it fences as a
    /// [`MutexGuard`'s token](crate::recipes::MutexGuard::token) does: a
    /// lease holds only once no lease created before it is left. With more
    /// leases, the tokens of leases held at once tell them apart but need
    /// not follow the order they were granted in.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let semaphore = zk_queue::recipes::Semaphore::builder(&client, "/app/crawlers").build()?;
    /// let first = semaphore.acquire()?.token();
    /// let second = semaphore.acquire()?.token();
    /// assert!(second > first);
    /// # Ok(())
    /// # }
    /// ```
    pub fn token(&self) -> u64 {
        u64::try_from(self.held.czxid).unwrap_or(0)
    }

    /// Whether the lease is certainly still held: its node exists and has
    /// not changed, in the session that created it, and the client has
    /// stayed connected since. False for good once the lease is in doubt
    /// (the connection dropped, so the server may be expiring the session
    /// and another participant may take the lease). Unlike a
    /// [`MutexGuard`](crate::recipes::MutexGuard)'s hold, a lease in doubt
    /// cannot be re-checked yet: drop it and acquire a new one.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let semaphore = zk_queue::recipes::Semaphore::builder(&client, "/app/crawlers").build()?;
    /// let lease = semaphore.acquire()?;
    /// while lease.is_held() {
    ///     // crawl one more page
    /// #   break;
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn is_held(&self) -> bool {
        self.held.is_held(self.client)
    }

    /// A channel that disconnects when the lease is lost or in doubt (as
    /// [`is_held`](Self::is_held) turns false) or returned; it never
    /// carries a message. It is told by the client's own threads, which
    /// only signal.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let semaphore = zk_queue::recipes::Semaphore::builder(&client, "/app/crawlers").build()?;
    /// use std::time::Duration;
    /// let lease = semaphore.acquire()?;
    /// let lost = lease.lost();
    /// let ticks = zk_queue::channel::tick(Duration::from_millis(100));
    /// loop {
    ///     zk_queue::channel::select! {
    ///         recv(lost) -> _ => break,
    ///         recv(ticks) -> _ => println!("working"),
    ///     }
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn lost(&self) -> Receiver<()> {
        self.held.lost.receiver()
    }

    /// The path of the lease node (Curator's `Lease.getNodeName`).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let semaphore = zk_queue::recipes::Semaphore::builder(&client, "/app/crawlers").build()?;
    /// let lease = semaphore.acquire()?;
    /// assert!(lease.node().starts_with("/app/crawlers/leases/_c_"));
    /// # Ok(())
    /// # }
    /// ```
    pub fn node(&self) -> &str {
        &self.held.node
    }
}

impl Drop for SemaphoreLease<'_> {
    fn drop(&mut self) {
        self.held.lost.open();
        log::debug!("semaphore {}: returning {}", self.leases_path, self.held.node);
        Leftover {
            lock_path: self.leases_path.to_owned(),
            session: self.held.session,
            nodes: Nodes::Known(self.held.node.clone()),
        }
        .release(
            self.client,
            Some(self.release_by.unwrap_or_else(|| Instant::now() + TRY_WAIT)),
        );
    }
}

impl std::fmt::Debug for SemaphoreLease<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SemaphoreLease")
            .field("node", &self.held.node)
            .field("token", &self.token())
            .field("is_held", &self.is_held())
            .finish()
    }
}
