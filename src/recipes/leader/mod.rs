//! [`LeaderLatch`]: leader election compatible with Apache Curator's
//! `LeaderLatch`, so Rust and Java participants can share one latch path.
//!
//! Each participant keeps one ephemeral sequential node under the latch
//! path (Curator's names and order; see `recipes::names`); the participant whose node
//! comes first leads. A participant's thread watches the latch path's
//! children, so every participant looks again when one joins or leaves
//! (fine for the handful of participants a latch has).
//!
//! Leadership is never claimed when it could be someone else's: it ends as
//! soon as the client is disconnected (the server may be expiring the
//! session, after which another participant leads), and a node left from an
//! expired session never counts again, even while a server still holds it.

mod builder;
mod state;
mod worker;

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

pub use builder::LeaderLatchBuilder;
use state::Shared;

use crate::client::{Opts, ZkClient};
use crate::error::{Error, Result};
use crate::path;
use crate::recipes::names;
use crate::sync::Joiner;

/// A change of a participant's leadership, as its listener hears of it
/// ([`LeaderLatchBuilder::listener`]).
///
/// ```
/// use zk_queue::recipes::Leadership;
/// assert_ne!(Leadership::Gained, Leadership::Lost);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Leadership {
    /// This participant leads from now on.
    Gained,
    /// This participant no longer leads: its node is no longer the first,
    /// the client was disconnected or its session expired, or the latch
    /// was closed.
    Lost,
}

/// One participant of a latch, as [`LeaderLatch::participants`] lists it.
///
/// ```no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
/// # let latch = zk_queue::recipes::LeaderLatch::builder(&client, "/leader").build()?;
/// for participant in latch.participants()? {
///     println!("{} {}", participant.id, if participant.is_leader { "leads" } else { "waits" });
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Participant {
    /// The participant's id (its node's data, as UTF-8; lossy if not).
    pub id: String,
    /// Its node's name under the latch path.
    pub node: String,
    /// Whether its node comes first: it leads, or will once it sees so.
    pub is_leader: bool,
}

/// A participant in a leader election, compatible with Curator's
/// `LeaderLatch` on the same path.
///
/// Building the latch joins the election in the background; the latch
/// leads while [`has_leadership`](Self::has_leadership) says so, and
/// [`await_leadership`](Self::await_leadership) blocks until then. A
/// listener hears of every change on the latch's own thread. Closing (or
/// dropping) the latch gives leadership up and deletes its node.
///
/// ```no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// use std::time::Duration;
/// use zk_queue::{ZkClient, recipes::LeaderLatch};
/// let client = ZkClient::connect("127.0.0.1:2181")?;
/// let latch = LeaderLatch::builder(&client, "/services/billing/leader").id("billing-1").build()?;
/// if latch.await_leadership_timeout(Duration::from_secs(30))? {
///     // Check before each step of leader-only work: leadership can end.
///     while latch.has_leadership() {
///         # break;
///     }
/// }
/// latch.close()?;
/// # Ok(())
/// # }
/// ```
pub struct LeaderLatch {
    shared: Arc<Shared>,
    worker: Mutex<Option<Joiner>>,
}

impl LeaderLatch {
    /// A builder of a latch at `path` for `client`.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let latch = zk_queue::recipes::LeaderLatch::builder(&client, "/leader").id("worker-7").build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn builder(client: &ZkClient, path: &str) -> LeaderLatchBuilder {
        LeaderLatchBuilder::new(client, path)
    }

    fn start(shared: Shared) -> Result<LeaderLatch> {
        let shared = Arc::new(shared);
        let running = Arc::clone(&shared);
        let worker = Joiner::spawn("zk-leader-latch", move || worker::run(&running))
            .map_err(|e| Error::InvalidArgument(format!("cannot start the leader latch's thread: {e}")))?;
        Ok(LeaderLatch {
            shared,
            worker: Mutex::new(Some(worker)),
        })
    }

    /// Whether this participant leads now. False as soon as the client is
    /// disconnected or the latch closed.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let latch = zk_queue::recipes::LeaderLatch::builder(&client, "/leader").build()?;
    /// if latch.has_leadership() {
    ///     println!("leading");
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn has_leadership(&self) -> bool {
        self.shared.leads()
    }

    /// Blocks until this participant leads.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let latch = zk_queue::recipes::LeaderLatch::builder(&client, "/leader").build()?;
    /// latch.await_leadership()?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// [`Error::Closed`] if the latch is closed (before or while waiting).
    pub fn await_leadership(&self) -> Result<()> {
        self.await_until(None).map(|_| ())
    }

    /// Blocks until this participant leads (`true`) or `timeout` passes
    /// (`false`).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let latch = zk_queue::recipes::LeaderLatch::builder(&client, "/leader").build()?;
    /// use std::time::Duration;
    /// if !latch.await_leadership_timeout(Duration::from_secs(5))? {
    ///     println!("another participant leads");
    /// }
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// [`Error::Closed`] if the latch is closed (before or while waiting);
    /// [`Error::Unreachable`] if the timeout passed while no server could
    /// be reached (connected to a stalled server, it returns `false`).
    pub fn await_leadership_timeout(&self, timeout: Duration) -> Result<bool> {
        self.await_until(Instant::now().checked_add(timeout))
    }

    fn await_until(&self, deadline: Option<Instant>) -> Result<bool> {
        let started = Instant::now();
        let leads = self
            .shared
            .wait_to_lead(deadline)
            .map_err(|state::Closed| Error::Closed)?;
        if leads {
            return Ok(true);
        }
        // As every timed call: no server to ask is an error.
        crate::recipes::deadline::unreachable_or(&self.shared.client, started, false)
    }

    /// This participant's id, the data of its node.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let latch = zk_queue::recipes::LeaderLatch::builder(&client, "/leader").id("a").build()?;
    /// assert_eq!(latch.id(), "a");
    /// # Ok(())
    /// # }
    /// ```
    pub fn id(&self) -> &str {
        &self.shared.id
    }

    /// The path of this participant's node, once it has one.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let latch = zk_queue::recipes::LeaderLatch::builder(&client, "/leader").build()?;
    /// println!("{:?}", latch.our_path());
    /// # Ok(())
    /// # }
    /// ```
    pub fn our_path(&self) -> Option<String> {
        self.shared.node()
    }

    /// Every participant of the latch path, the leader first, as the server
    /// lists them now (a participant may not have seen its place yet).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let latch = zk_queue::recipes::LeaderLatch::builder(&client, "/leader").build()?;
    /// println!("{} participants", latch.participants()?.len());
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// A connection error once the client's retry policy gives up; an empty
    /// list if the latch path does not exist.
    pub fn participants(&self) -> Result<Vec<Participant>> {
        let client = &self.shared.client;
        let children = match client.get_children(&self.shared.path) {
            Ok((children, _)) => children,
            Err(Error::NoNode { .. }) => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let sorted = names::sorted(children, &[names::LATCH]);
        read_participants(client, &self.shared.path, sorted)
    }

    /// The participant that leads (its node comes first), if any.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let latch = zk_queue::recipes::LeaderLatch::builder(&client, "/leader").build()?;
    /// if let Some(leader) = latch.leader()? {
    ///     println!("{} leads", leader.id);
    /// }
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// As [`participants`](Self::participants).
    pub fn leader(&self) -> Result<Option<Participant>> {
        Ok(self.participants()?.into_iter().next())
    }

    /// Gives leadership up (the listener hears [`Leadership::Lost`] if it
    /// led), deletes this participant's node so the next one leads at once,
    /// and stops the latch's thread, within the client's request timeout.
    /// Closing again does nothing.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let latch = zk_queue::recipes::LeaderLatch::builder(&client, "/leader").build()?;
    /// latch.close()?;
    /// assert!(!latch.has_leadership());
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// [`Error::Timeout`] if the thread did not finish in time (its node
    /// then goes when it finishes, or with the session).
    pub fn close(&self) -> Result<()> {
        self.shared.stop();
        let Some(worker) = self.worker.lock().take() else {
            return Ok(());
        };
        let timeout = self.shared.client.request_timeout();
        if worker.join_until(Some(Instant::now() + timeout), "leader latch") {
            Ok(())
        } else {
            Err(Error::Timeout {
                operation: "close",
                after: timeout,
            })
        }
    }
}

impl Drop for LeaderLatch {
    fn drop(&mut self) {
        if let Err(e) = self.close() {
            log::warn!("leader latch {}: {e}", self.shared.path);
        }
    }
}

impl std::fmt::Debug for LeaderLatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderLatch")
            .field("path", &self.shared.path)
            .field("id", &self.shared.id)
            .field("has_leadership", &self.has_leadership())
            .finish()
    }
}

/// The participants whose nodes under `path` are `sorted` (in the order
/// they lead), each with its id (its node's data); nodes gone since the
/// listing are left out. Election recipes share it (the latch and the
/// selector).
pub(in crate::recipes) fn read_participants(
    client: &ZkClient,
    path: &str,
    sorted: Vec<String>,
) -> Result<Vec<Participant>> {
    let paths: Vec<String> = sorted.iter().map(|name| path::join(path, name)).collect();
    let reads = client.read_many_with(&paths, Opts::new())?;
    let mut participants = Vec::with_capacity(sorted.len());
    for (node, read) in sorted.into_iter().zip(reads) {
        let data = match read {
            Ok((data, _)) => data,
            // Left since the listing.
            Err(Error::NoNode { .. }) => continue,
            Err(e) => return Err(e),
        };
        participants.push(Participant {
            id: String::from_utf8_lossy(&data).into_owned(),
            node,
            is_leader: participants.is_empty(),
        });
    }
    Ok(participants)
}
