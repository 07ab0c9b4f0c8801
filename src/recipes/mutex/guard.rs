//! [`MutexGuard`]: one acquisition of a [`Mutex`](super::Mutex), sharing its thread's
//! hold with the other guards of that thread.

use crossbeam_channel::Receiver;

use crate::recipes::lock::Acquisition;

/// One acquisition of a [`Mutex`](super::Mutex): the lock is held (by this thread) while a
/// guard of it lives, and released when the thread's last guard drops.
///
/// A guard belongs to the thread that acquired it (it is not `Send`), as
/// Curator's locks belong to their thread: the same thread acquiring again
/// gets another guard on the same node, and the node is deleted when the
/// last of them drops. Dropping never waits longer than a short bound
/// (about a second); a node that cannot be deleted by then is deleted in
/// the background, or goes with its session.
///
/// ```no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
/// let mutex = zk_queue::recipes::Mutex::builder(&client, "/locks/report").build()?;
/// {
///     let guard = mutex.lock()?;
///     println!("holding with token {}", guard.token());
/// } // released here
/// # Ok(())
/// # }
/// ```
#[must_use = "the lock is released as soon as the guard is dropped"]
pub struct MutexGuard<'a>(Acquisition<'a>);

impl<'a> MutexGuard<'a> {
    pub(super) fn new(acquisition: Acquisition<'a>) -> MutexGuard<'a> {
        MutexGuard(acquisition)
    }

    /// Drops the guard, waiting for the server until `deadline` at most if
    /// it releases the lock (a passed one: the node is deleted in the
    /// background), for callers with a deadline of their own.
    pub(crate) fn release_by(self, deadline: std::time::Instant) {
        self.0.release_by(deadline);
    }

    /// The fencing token of this hold: the creation zxid of its node. Every
    /// later holder's token is larger, also across the lock path being
    /// deleted and created again; guards of one thread's hold share it. Pass
    /// it with every write to a store the lock protects, and have the store
    /// refuse a token smaller than the largest it has seen: a holder that
    /// lost the lock unawares (a long pause, an expired session) can then do
    /// no harm.
    ///
    /// ```
    /// use zk_queue::recipes::Mutex;
    ///
    /// /// A store that refuses writes with a token older than one it has seen.
    /// struct Store {
    ///     highest: u64,
    ///     value: String,
    /// }
    ///
    /// impl Store {
    ///     fn write(&mut self, token: u64, value: &str) -> Result<(), String> {
    ///         if token < self.highest {
    ///             return Err(format!("stale token {token}: {} has written since", self.highest));
    ///         }
    ///         self.highest = token;
    ///         self.value = value.to_owned();
    ///         Ok(())
    ///     }
    /// }
    ///
    /// /// The work the lock guards: every write carries the hold's token.
    /// fn update(mutex: &Mutex, store: &mut Store, value: &str) -> Result<(), Box<dyn std::error::Error>> {
    ///     let guard = mutex.lock()?;
    ///     store.write(guard.token(), value)?;
    ///     Ok(())
    /// }
    ///
    /// let mut store = Store { highest: 0, value: String::new() };
    /// // A holder whose session expired during a long pause (token 0x100)
    /// // wakes up after the next holder (token 0x200) wrote: refused.
    /// store.write(0x200, "balance=10").unwrap();
    /// assert!(store.write(0x100, "balance=99").is_err());
    /// assert_eq!(store.value, "balance=10");
    /// ```
    pub fn token(&self) -> u64 {
        self.0.hold().token()
    }

    /// Whether the lock is certainly still held: its node exists and has not
    /// changed, in the session that created it, and the client has stayed
    /// connected since. False once the hold is in doubt (the connection
    /// dropped, so the server may be expiring the session and another
    /// participant may hold), as Curator advises to treat `SUSPENDED`, and
    /// for good unless [`recheck`](Self::recheck) confirms the hold after
    /// the client reconnected in the same session.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let mutex = zk_queue::recipes::Mutex::builder(&client, "/locks/report").build()?;
    /// let guard = mutex.lock()?;
    /// for step in 0..10 {
    ///     if !guard.is_held() {
    ///         break; // another participant may hold the lock now
    ///     }
    ///     println!("step {step}");
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn is_held(&self) -> bool {
        self.0.is_held()
    }

    /// Confirms a hold in doubt after a disconnection the session survived:
    /// asks the server whether the lock node still exists in the session
    /// that created it (the same node, created at the same zxid), unchanged,
    /// and, if it does and the client is connected in that session, watches
    /// it anew, so that [`is_held`](Self::is_held) is true again and a new
    /// [`lost`](Self::lost) channel tells of the next loss (channels taken
    /// before stay disconnected). `Ok(false)` if the node is gone or changed,
    /// or its session is gone: the hold is lost for good; or if the
    /// connection dropped again meanwhile: the hold stays in doubt, and a
    /// later `recheck` may confirm it. A certain hold is left as it is
    /// (`Ok(true)`, no request). While the hold was in doubt no other participant could
    /// take the lock: it waits for this node's deletion; but work the hold
    /// guards may have been refused meanwhile (by the fencing token), so
    /// check before going on. The token stays the same.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let mutex = zk_queue::recipes::Mutex::builder(&client, "/locks/report").build()?;
    /// let guard = mutex.lock()?;
    /// if !guard.is_held() && !guard.recheck()? {
    ///     return Ok(()); // lost for good: another participant may hold it
    /// }
    /// println!("still holding, with token {}", guard.token());
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// [`Error::Unreachable`](crate::Error::Unreachable) or
    /// [`Error::Timeout`](crate::Error::Timeout) if no server answered
    /// within the client's request timeout (the hold stays in doubt: try
    /// again later); [`Error::Closed`](crate::Error::Closed) if the client
    /// is closed.
    pub fn recheck(&self) -> crate::Result<bool> {
        self.0.recheck()
    }

    /// A channel that disconnects when the hold is lost or in doubt (as
    /// [`is_held`](Self::is_held) turns false) or released; it never carries
    /// a message. Select on it beside the work the lock guards. It is told
    /// by the client's own threads, which only signal: no user code runs on
    /// them.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let mutex = zk_queue::recipes::Mutex::builder(&client, "/locks/report").build()?;
    /// use std::time::Duration;
    /// let guard = mutex.lock()?;
    /// let lost = guard.lost();
    /// let ticks = zk_queue::channel::tick(Duration::from_millis(100));
    /// loop {
    ///     zk_queue::channel::select! {
    ///         recv(lost) -> _ => break, // stop: another may hold the lock
    ///         recv(ticks) -> _ => println!("working"),
    ///     }
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn lost(&self) -> Receiver<()> {
        self.0.hold().lost()
    }

    /// Opens `latch` when the hold is lost, in doubt or released (at once
    /// if it is).
    pub(crate) fn forward_loss_to(&self, latch: &crate::sync::Latch) {
        self.0.hold().forward_loss_to(latch);
    }

    /// The path of the lock's node this guard holds by.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let mutex = zk_queue::recipes::Mutex::builder(&client, "/locks/report").build()?;
    /// let guard = mutex.lock()?;
    /// assert!(guard.node().starts_with("/locks/report/_c_"));
    /// # Ok(())
    /// # }
    /// ```
    pub fn node(&self) -> &str {
        self.0.hold().node()
    }
}

impl std::fmt::Debug for MutexGuard<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.debug("MutexGuard", f)
    }
}
