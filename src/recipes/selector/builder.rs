//! The consuming builder of [`LeaderSelector`].

use std::time::Duration;

use super::context::LeaderContext;
use super::runner::Lead;
use super::LeaderSelector;
use crate::client::{Acl, ZkClient};
use crate::error::Result;
use crate::recipes::lock::local_address;

/// Builds a [`LeaderSelector`]; made by [`LeaderSelector::builder`].
///
/// ```no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// use std::time::Duration;
/// use zk_queue::{ZkClient, recipes::LeaderSelector};
/// let client = ZkClient::connect("127.0.0.1:2181")?;
/// let selector = LeaderSelector::builder(&client, "/services/billing/leader", |leader| {
///     let _ = leader.lost().recv_timeout(Duration::from_secs(60));
/// })
/// .id("billing-1")
/// .auto_requeue(true)
/// .overrun_grace(Duration::from_secs(1))
/// .build()?;
/// # Ok(())
/// # }
/// ```
#[must_use = "a builder does nothing until `build` is called"]
pub struct LeaderSelectorBuilder {
    client: ZkClient,
    path: String,
    lead: Lead,
    id: Option<String>,
    auto_requeue: bool,
    overrun_grace: Duration,
    acl: Option<Vec<Acl>>,
}

impl LeaderSelectorBuilder {
    pub(super) fn new(
        client: &ZkClient,
        path: &str,
        lead: impl FnMut(&LeaderContext<'_>) + Send + 'static,
    ) -> LeaderSelectorBuilder {
        LeaderSelectorBuilder {
            client: client.clone(),
            path: path.to_owned(),
            lead: Box::new(lead),
            id: None,
            auto_requeue: true,
            overrun_grace: Duration::from_secs(1),
            acl: None,
        }
    }

    /// This participant's id: the data of its lock node, which
    /// [`participants`](LeaderSelector::participants) (and Curator's
    /// `getParticipants`) show. Defaults to what Curator writes without an
    /// id: this host's IP address as text, or nothing if it has none.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let selector = zk_queue::recipes::LeaderSelector::builder(&client, "/leader", |_| {})
    ///     .id("host-a:8080")
    ///     .build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// Whether the selector gets back in line after each term (Curator's
    /// `autoRequeue()`): it then stays in the election until closed. With
    /// `false`, it leads at most once: after the term ends (the closure
    /// returned or panicked, or leadership was lost) its state is
    /// [`Left`](super::SelectorState::Left) and it leads again only after
    /// [`requeue`](LeaderSelector::requeue). Either way a connection drop
    /// while it waits does not take it out of the line. Defaults to `true`
    /// (Curator's default is off, which makes a forgotten setting a
    /// service that silently stops leading).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// // Lead once, then stay out.
    /// let selector = zk_queue::recipes::LeaderSelector::builder(&client, "/leader", |_| {})
    ///     .auto_requeue(false)
    ///     .build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn auto_requeue(mut self, auto_requeue: bool) -> Self {
        self.auto_requeue = auto_requeue;
        self
    }

    /// How long the closure may run on after its leadership was lost (or
    /// `close` asked it to stop) before the selector warns in the log that
    /// it overruns. Its state is [`Overrunning`](super::SelectorState::Overrunning)
    /// from the loss until it returns either way. Defaults to 1 second.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// use std::time::Duration;
    /// let selector = zk_queue::recipes::LeaderSelector::builder(&client, "/leader", |_| {})
    ///     .overrun_grace(Duration::from_millis(200))
    ///     .build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn overrun_grace(mut self, grace: Duration) -> Self {
        self.overrun_grace = grace;
        self
    }

    /// The ACL of the leader path (if it is created) and of this
    /// participant's nodes. Defaults to the client's default ACL.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// use zk_queue::client::Acl;
    /// let selector = zk_queue::recipes::LeaderSelector::builder(&client, "/leader", |_| {})
    ///     .acl(vec![Acl::anyone_all()])
    ///     .build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn acl(mut self, acl: Vec<Acl>) -> Self {
        self.acl = Some(acl);
        self
    }

    /// Validates the settings and starts the selector: its thread joins the
    /// line at once (Curator's `start()`).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let selector = zk_queue::recipes::LeaderSelector::builder(&client, "/leader", |_| {}).build()?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidPath`](crate::Error::InvalidPath) for a path that is not valid, or is the root;
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for an empty ACL, or if its thread cannot
    /// be started; [`Error::Closed`](crate::Error::Closed) if the client is closed.
    pub fn build(self) -> Result<LeaderSelector> {
        let id = self
            .id
            .unwrap_or_else(|| String::from_utf8_lossy(&local_address()).into_owned());
        LeaderSelector::start(
            self.client,
            self.path,
            id,
            self.auto_requeue,
            self.overrun_grace,
            self.acl,
            self.lead,
        )
    }
}

impl std::fmt::Debug for LeaderSelectorBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderSelectorBuilder")
            .field("path", &self.path)
            .field("id", &self.id)
            .field("auto_requeue", &self.auto_requeue)
            .field("overrun_grace", &self.overrun_grace)
            .field("acl", &self.acl)
            .finish()
    }
}
