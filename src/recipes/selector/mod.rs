//! [`LeaderSelector`]: leader election by taking turns, compatible with
//! Apache Curator's `LeaderSelector` (5.x), so Rust and Java participants
//! can share one leader path.
//!
//! # The algorithm
//! The election is a [`Mutex`] on the leader path, as Curator's is an
//! `InterProcessMutex`: each participant waits in line with one protected
//! ephemeral sequential node, `_c_<UUID>-lock-<sequence>`, whose data is
//! its id; the participant whose node comes first leads. The selector's own
//! thread (never the ZooKeeper event thread) waits for the turn, then runs
//! the user's closure for one term; the term ends when the closure returns
//! (or panics), and the node is then deleted so the next in line leads.
//! With auto-requeue (the default here) the selector then joins the end of
//! the line again.
//!
//! # Guarantees
//! - Never two leaders, as far as the participants can know: a term's
//!   leadership is lost (its context's [`is_leader`](LeaderContext::is_leader)
//!   turns false and [`lost`](LeaderContext::lost) disconnects) at the first
//!   sign of doubt: the connection dropped (the client notices within two
//!   thirds of the session timeout, before the server can expire the
//!   session and let another lead) or the node changed or went. The
//!   closure must then return: Rust cannot interrupt it as Curator
//!   interrupts its leader. Until it does the selector reports it as
//!   [`Overrunning`](SelectorState::Overrunning), and warns in the log
//!   after the [grace](LeaderSelectorBuilder::overrun_grace). The term's
//!   [`token`](LeaderContext::token) (its node's creation zxid) grows from
//!   leader to leader, for stores that must refuse an overrunning leader.
//!   One case has no order: a node deleted by someone else tells its
//!   leader and the next participant at the same moment.
//! - No silent exit: a selector without auto-requeue reports
//!   [`Left`](SelectorState::Left) after its term, and a panicking closure
//!   is logged at error and counted ([`panics`](LeaderSelector::panics))
//!   while leadership is released. A connection drop while waiting never
//!   takes a selector out of the line (Curator 5.4's selector, leading or
//!   waiting, is interrupted at any `SUSPENDED`, and without auto-requeue
//!   leaves the election without a word; see also CURATOR-518).
//! - Fair: participants lead in the order they joined the line.
//!
//! The files:
//! - `builder.rs`: [`LeaderSelectorBuilder`], the settings and their
//!   defaults.
//! - `context.rs`: [`LeaderContext`], what the closure is given for a term.
//! - `state.rs`: [`SelectorState`] and [`TermEnd`], and what the handle
//!   shares with the selector's thread.
//! - `runner.rs`: the selector's thread and the watcher of a term.
//! - `participants.rs`: who is in line, read from the server.

mod builder;
mod context;
mod participants;
mod runner;
mod state;

use std::sync::Arc;
use std::time::{Duration, Instant};

pub use builder::LeaderSelectorBuilder;
pub use context::LeaderContext;
pub use state::{SelectorState, TermEnd};

use runner::Lead;
use state::Shared;

use crate::client::{Acl, ZkClient};
use crate::error::{Error, Result};
use crate::recipes::Mutex;
use crate::sync::{Joiner, Latch};

/// A participant in a leader election that runs a closure while it leads,
/// compatible with Curator's `LeaderSelector` on the same path.
///
/// Building the selector joins the election on a thread of its own, which
/// runs the closure each time this participant's turn comes; leadership
/// ends when the closure returns. The closure is given a [`LeaderContext`]
/// and must return soon once it says leadership is lost. Closing (or
/// dropping) the selector asks a running closure to stop, waits for it,
/// releases leadership and leaves the line.
///
/// ```no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// use std::time::Duration;
/// use zk_queue::{ZkClient, recipes::LeaderSelector};
/// let client = ZkClient::connect("127.0.0.1:2181")?;
/// let selector = LeaderSelector::builder(&client, "/services/billing/leader", |leader| {
///     while leader.is_leader() {
///         println!("billing as {} with token {}", leader.id(), leader.token());
///         # break;
///     }
/// })
/// .id("billing-1")
/// .build()?;
/// println!("{:?}", selector.state());
/// selector.close()?;
/// # Ok(())
/// # }
/// ```
pub struct LeaderSelector {
    shared: Arc<Shared>,
    worker: parking_lot::Mutex<Option<Joiner>>,
}

impl LeaderSelector {
    /// A builder of a selector at `path` for `client` that runs `lead` for
    /// each term of leadership, on the selector's own thread.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let selector = zk_queue::recipes::LeaderSelector::builder(&client, "/leader", |leader| {
    ///     println!("leading with token {}", leader.token());
    /// })
    /// .build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn builder(
        client: &ZkClient,
        path: &str,
        lead: impl FnMut(&LeaderContext<'_>) + Send + 'static,
    ) -> LeaderSelectorBuilder {
        LeaderSelectorBuilder::new(client, path, lead)
    }

    fn start(
        client: ZkClient,
        path: String,
        id: String,
        auto_requeue: bool,
        overrun_grace: Duration,
        acl: Option<Vec<Acl>>,
        lead: Lead,
    ) -> Result<LeaderSelector> {
        let stop = Latch::new();
        let mut mutex = Mutex::builder(&client, &path).data(id.as_bytes());
        if let Some(acl) = acl {
            mutex = mutex.acl(acl);
        }
        let mutex = mutex.build_cancellable(stop.clone())?;
        let shared = Arc::new(Shared::new(client, path, id, auto_requeue, overrun_grace, mutex, stop));
        let running = Arc::clone(&shared);
        let worker = Joiner::spawn("zkq-leader-selector", move || runner::run(&running, lead))
            .map_err(|e| Error::InvalidArgument(format!("cannot start the leader selector's thread: {e}")))?;
        Ok(LeaderSelector {
            shared,
            worker: parking_lot::Mutex::new(Some(worker)),
        })
    }

    /// Where the selector stands now: in line, leading, overrunning a lost
    /// leadership, out of the election, or closed.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let selector = zk_queue::recipes::LeaderSelector::builder(&client, "/leader", |_| {}).build()?;
    /// use zk_queue::recipes::SelectorState;
    /// if let SelectorState::Left(end) = selector.state() {
    ///     println!("out of the election after a term that ended {end:?}");
    ///     selector.requeue();
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn state(&self) -> SelectorState {
        self.shared.state()
    }

    /// Whether this participant leads now: its closure runs, with its
    /// leadership certain (as its context's
    /// [`is_leader`](LeaderContext::is_leader) says, on a connected client).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let selector = zk_queue::recipes::LeaderSelector::builder(&client, "/leader", |_| {}).build()?;
    /// println!("leading: {}", selector.has_leadership());
    /// # Ok(())
    /// # }
    /// ```
    pub fn has_leadership(&self) -> bool {
        self.shared.leads()
    }

    /// Joins the election again after the selector [left](SelectorState::Left)
    /// it (Curator's `requeue`); false if it is in it already or closed.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let selector = zk_queue::recipes::LeaderSelector::builder(&client, "/leader", |_| {})
    ///     .auto_requeue(false)
    ///     .build()?;
    /// // ... once it led and left:
    /// selector.requeue();
    /// # Ok(())
    /// # }
    /// ```
    pub fn requeue(&self) -> bool {
        self.shared.ask_requeue()
    }

    /// How many terms of leadership this selector has begun.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let selector = zk_queue::recipes::LeaderSelector::builder(&client, "/leader", |_| {}).build()?;
    /// println!("led {} times", selector.terms());
    /// # Ok(())
    /// # }
    /// ```
    pub fn terms(&self) -> u64 {
        self.shared.terms()
    }

    /// How many times the closure panicked (each panic ended its term and
    /// was logged at error).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let selector = zk_queue::recipes::LeaderSelector::builder(&client, "/leader", |_| {}).build()?;
    /// if selector.panics() > 0 {
    ///     eprintln!("the leader's work panicked: {:?}", selector.last_panic());
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn panics(&self) -> u64 {
        self.shared.panics()
    }

    /// The message of the closure's last panic, if it panicked.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let selector = zk_queue::recipes::LeaderSelector::builder(&client, "/leader", |_| {}).build()?;
    /// if let Some(message) = selector.last_panic() {
    ///     eprintln!("the leader's work panicked: {message}");
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn last_panic(&self) -> Option<String> {
        self.shared.last_panic()
    }

    /// This participant's id (its lock node's data).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let selector = zk_queue::recipes::LeaderSelector::builder(&client, "/leader", |_| {})
    ///     .id("billing-1")
    ///     .build()?;
    /// assert_eq!(selector.id(), "billing-1");
    /// # Ok(())
    /// # }
    /// ```
    pub fn id(&self) -> &str {
        &self.shared.id
    }

    /// The leader path.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let selector = zk_queue::recipes::LeaderSelector::builder(&client, "/leader", |_| {}).build()?;
    /// assert_eq!(selector.path(), "/leader");
    /// # Ok(())
    /// # }
    /// ```
    pub fn path(&self) -> &str {
        &self.shared.path
    }

    /// Leaves the election: a closure that runs is asked to stop (its
    /// context says leadership is lost), and this waits for it, as long as
    /// it takes; then leadership is released (so the next participant
    /// leads), the node in line is deleted, and the selector's thread is
    /// joined. Logs what it did; closing again does nothing. Called from
    /// the closure itself, it only asks: the selector ends once the closure
    /// returns.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let selector = zk_queue::recipes::LeaderSelector::builder(&client, "/leader", |_| {}).build()?;
    /// selector.close()?;
    /// assert!(!selector.has_leadership());
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// None yet; a `Result` as every close of the crate's.
    pub fn close(&self) -> Result<()> {
        self.close_until(None).map(|_| ())
    }

    /// As [`close`](Self::close), waiting for the closure at most `timeout`.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let selector = zk_queue::recipes::LeaderSelector::builder(&client, "/leader", |_| {}).build()?;
    /// use std::time::Duration;
    /// if selector.close_timeout(Duration::from_secs(5)).is_err() {
    ///     eprintln!("the leader's work did not stop in time");
    /// }
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// [`Error::Timeout`] if the selector's thread has not ended by the
    /// deadline: the closure still runs (the selector then releases
    /// leadership and ends when it returns), or its node is being deleted
    /// while the server does not answer (for a short bound, then in the
    /// background).
    pub fn close_timeout(&self, timeout: Duration) -> Result<()> {
        match Instant::now().checked_add(timeout) {
            Some(deadline) => self.close_until(Some(deadline)).map(|_| ()),
            None => self.close(),
        }
    }

    fn close_until(&self, deadline: Option<Instant>) -> Result<()> {
        let was = self.shared.state();
        self.shared.stop();
        let mut worker = self.worker.lock();
        if worker
            .as_ref()
            .is_some_and(|w| w.thread().id() == std::thread::current().id())
        {
            // Called by the closure itself: the thread ends once it returns.
            return Ok(());
        }
        let Some(thread) = worker.take() else {
            return Ok(());
        };
        let started = Instant::now();
        if !thread.join_until(deadline, "leader selector") {
            log::warn!(
                "leader selector {} ({}): closing: the leader's closure still runs after {:?}; \
                 leadership is released when it returns",
                self.shared.path,
                self.shared.id,
                started.elapsed()
            );
            return Err(Error::Timeout {
                operation: "close",
                after: started.elapsed(),
            });
        }
        self.shared.set_closed();
        let what = match was {
            SelectorState::Leading | SelectorState::Overrunning => {
                "stopped the leader's closure and released leadership"
            }
            SelectorState::Queued => "left the line",
            SelectorState::Left(_) | SelectorState::Closed => "was out of the election",
        };
        log::info!(
            "leader selector {} ({}): closed: {what} in {:?}",
            self.shared.path,
            self.shared.id,
            started.elapsed()
        );
        Ok(())
    }
}

impl Drop for LeaderSelector {
    /// Closes, waiting for a running closure at most the client's request
    /// timeout (the selector then ends when the closure returns).
    fn drop(&mut self) {
        if let Err(e) = self.close_timeout(self.shared.client.request_timeout()) {
            log::warn!("leader selector {}: {e}", self.shared.path);
        }
    }
}

impl std::fmt::Debug for LeaderSelector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderSelector")
            .field("path", &self.shared.path)
            .field("id", &self.shared.id)
            .field("auto_requeue", &self.shared.auto_requeue)
            .field("state", &self.state())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_selector_is_shared_between_threads_and_its_builder_sent() {
        fn shared<T: Send + Sync>() {}
        fn sent<T: Send>() {}
        shared::<LeaderSelector>();
        sent::<LeaderSelectorBuilder>();
    }
}
