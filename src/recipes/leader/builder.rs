//! The consuming builder of [`LeaderLatch`].

use super::state::{Listener, Shared};
use super::{LeaderLatch, Leadership};
use crate::client::{Acl, ZkClient};
use crate::error::Result;
use crate::path;

/// Builds a [`LeaderLatch`]; made by [`LeaderLatch::builder`].
///
/// ```no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// use zk_queue::{ZkClient, recipes::{LeaderLatch, Leadership}};
/// let client = ZkClient::connect("127.0.0.1:2181")?;
/// let latch = LeaderLatch::builder(&client, "/leader")
///     .id("worker-1")
///     .listener(|change| println!("leadership {change:?}"))
///     .build()?;
/// # Ok(())
/// # }
/// ```
#[must_use = "a builder does nothing until `build` is called"]
pub struct LeaderLatchBuilder {
    client: ZkClient,
    path: String,
    id: String,
    acl: Option<Vec<Acl>>,
    listener: Option<Listener>,
}

impl LeaderLatchBuilder {
    pub(super) fn new(client: &ZkClient, path: &str) -> Self {
        LeaderLatchBuilder {
            client: client.clone(),
            path: path.to_owned(),
            id: String::new(),
            acl: None,
            listener: None,
        }
    }

    /// This participant's id: its node's data, which every participant's
    /// [`participants`](LeaderLatch::participants) (and Curator's
    /// `getParticipants`) shows. Defaults to the empty string, as Curator's.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let latch = zk_queue::recipes::LeaderLatch::builder(&client, "/leader").id("host-a:8080").build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.id = id.into();
        self
    }

    /// The ACL of the latch path (if it is created) and of this
    /// participant's nodes. Defaults to the client's default ACL.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// use zk_queue::client::Acl;
    /// let latch = zk_queue::recipes::LeaderLatch::builder(&client, "/leader").acl(vec![Acl::anyone_all()]).build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn acl(mut self, acl: Vec<Acl>) -> Self {
        self.acl = Some(acl);
        self
    }

    /// Called with every change of this participant's leadership, in order,
    /// on the latch's own thread (never on the client's event thread); the
    /// latch looks at the election again only once it returns. A panic in
    /// it is logged. Defaults to none.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// use zk_queue::recipes::Leadership;
    /// let latch = zk_queue::recipes::LeaderLatch::builder(&client, "/leader")
    ///     .listener(|change| {
    ///         if change == Leadership::Lost {
    ///             eprintln!("stopping leader-only work");
    ///         }
    ///     })
    ///     .build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn listener(mut self, listener: impl Fn(Leadership) + Send + Sync + 'static) -> Self {
        self.listener = Some(Box::new(listener));
        self
    }

    /// Validates the settings and joins the election in the background: the
    /// latch's thread creates the latch path if it is missing (a container
    /// node, as Curator does) and this participant's node, retrying while
    /// the ensemble is out of reach.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let latch = zk_queue::recipes::LeaderLatch::builder(&client, "/leader").build()?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidPath`](crate::Error::InvalidPath) for a path that is
    /// not valid, or is the root; [`Error::Closed`](crate::Error::Closed)
    /// if the client is closed.
    pub fn build(self) -> Result<LeaderLatch> {
        path::validate(&self.path)?;
        if self.path == "/" {
            return Err(crate::Error::InvalidPath {
                path: self.path,
                reason: "a latch needs a path of its own, not the root",
            });
        }
        if self.client.is_closed() {
            return Err(crate::Error::Closed);
        }
        let acl = self.acl.unwrap_or_else(|| self.client.default_acl().to_vec());
        LeaderLatch::start(Shared::new(self.client, self.path, self.id, acl, self.listener))
    }
}

impl std::fmt::Debug for LeaderLatchBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderLatchBuilder")
            .field("path", &self.path)
            .field("id", &self.id)
            .field("acl", &self.acl)
            .field("listener", &self.listener.is_some())
            .finish()
    }
}
