//! [`LeaderContext`]: what the leader's closure is given for one term.

use crossbeam_channel::Receiver;

use super::state::Shared;
use crate::recipes::MutexGuard;
use crate::sync::Latch;

/// What the closure of a [`LeaderSelector`](super::LeaderSelector) is
/// given for one term of leadership: whether it still leads, the news of
/// its loss, and the term's fencing token.
///
/// Rust cannot interrupt a thread, as Curator interrupts its leader: the
/// closure must watch its context, checking
/// [`is_leader`](Self::is_leader) between steps or selecting on
/// [`lost`](Self::lost), and return soon once leadership is lost. Until it
/// returns, the selector reports it as
/// [`Overrunning`](super::SelectorState::Overrunning) (and warns in the log
/// after the [grace](super::LeaderSelectorBuilder::overrun_grace)), and
/// another participant may lead beside it: pass the
/// [`token`](Self::token) with every write, so that the store can refuse a
/// former leader's.
///
/// ```no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// use std::time::Duration;
/// use zk_queue::{ZkClient, recipes::LeaderSelector};
/// let client = ZkClient::connect("127.0.0.1:2181")?;
/// let selector = LeaderSelector::builder(&client, "/services/billing/leader", |leader| {
///     let ticks = zk_queue::channel::tick(Duration::from_secs(1));
///     let lost = leader.lost();
///     loop {
///         zk_queue::channel::select! {
///             recv(lost) -> _ => return, // another may lead now: stop at once
///             recv(ticks) -> _ => println!("billing as leader {}", leader.token()),
///         }
///     }
/// })
/// .build()?;
/// # Ok(())
/// # }
/// ```
pub struct LeaderContext<'a> {
    guard: &'a MutexGuard<'a>,
    /// Opened when the hold is lost, in doubt or released, or `close` asks
    /// the closure to stop.
    term: &'a Latch,
    shared: &'a Shared,
}

impl<'a> LeaderContext<'a> {
    pub(super) fn new(guard: &'a MutexGuard<'a>, term: &'a Latch, shared: &'a Shared) -> LeaderContext<'a> {
        LeaderContext { guard, term, shared }
    }

    /// Closes the selector once this term ends: the closure goes on leading
    /// (this changes nothing of the term), and when it returns, leadership
    /// is released and the selector leaves the election for good, as
    /// [`close`](super::LeaderSelector::close) would have it, whatever its
    /// [`auto_requeue`](super::LeaderSelectorBuilder::auto_requeue). Its
    /// [state](super::LeaderSelector::state) turns
    /// [`Closed`](super::SelectorState::Closed); `close` on its handle then
    /// returns at once. For a leader whose work is done once (a migration,
    /// a one-off job).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let selector = zk_queue::recipes::LeaderSelector::builder(&client, "/jobs/migrate/leader", |leader| {
    ///     leader.close_after_term(); // one term is all it takes
    ///     println!("migrating as leader {}", leader.token());
    /// })
    /// .build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn close_after_term(&self) {
        self.shared.close_after_term();
    }

    /// Whether this participant certainly still leads: its lock node
    /// exists, in the session that created it, the client has stayed
    /// connected since, and the selector is not closing. False for good once
    /// it turns false: the connection may have dropped while the server
    /// expires the session, after which another participant leads (the
    /// client learns of a dropped connection before the server can expire
    /// the session, so the leader hears first).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let selector = zk_queue::recipes::LeaderSelector::builder(&client, "/leader", |leader| {
    ///     for step in 0..100 {
    ///         if !leader.is_leader() {
    ///             return;
    ///         }
    ///         println!("step {step}");
    ///     }
    /// })
    /// .build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn is_leader(&self) -> bool {
        !self.term.is_open() && self.guard.is_held()
    }

    /// A channel that disconnects when leadership is lost or in doubt (as
    /// [`is_leader`](Self::is_leader) turns false) or `close` asks the
    /// closure to stop; it never carries a message. It is told by the
    /// client's own threads, which only signal.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let selector = zk_queue::recipes::LeaderSelector::builder(&client, "/leader", |leader| {
    ///     // Lead until told otherwise.
    ///     let _ = leader.lost().recv();
    /// })
    /// .build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn lost(&self) -> Receiver<()> {
        self.term.receiver()
    }

    /// The fencing token of this term: the creation zxid of the lock node
    /// it leads by. Every later term's token, of any participant, is larger
    /// (see [`MutexGuard::token`]).
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
    pub fn token(&self) -> u64 {
        self.guard.token()
    }

    /// The path of the lock node this term leads by.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let selector = zk_queue::recipes::LeaderSelector::builder(&client, "/leader", |leader| {
    ///     assert!(leader.node().starts_with("/leader/_c_"));
    /// })
    /// .build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn node(&self) -> &str {
        self.guard.node()
    }

    /// This participant's id (its lock node's data).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let selector = zk_queue::recipes::LeaderSelector::builder(&client, "/leader", |leader| {
    ///     println!("{} leads", leader.id());
    /// })
    /// .id("billing-1")
    /// .build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn id(&self) -> &str {
        &self.shared.id
    }
}

impl std::fmt::Debug for LeaderContext<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderContext")
            .field("id", &self.id())
            .field("node", &self.node())
            .field("token", &self.token())
            .field("is_leader", &self.is_leader())
            .finish()
    }
}
