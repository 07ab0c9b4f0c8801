//! The consuming builder of [`Semaphore`].

use super::Semaphore;
use crate::client::{Acl, ZkClient};
use crate::error::{Error, Result};

/// Builds a [`Semaphore`]; made by [`Semaphore::builder`] or [`SemaphoreBuilder::new`].
///
/// ```no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// use zk_queue::{ZkClient, recipes::Semaphore};
/// let client = ZkClient::connect("127.0.0.1:2181")?;
/// let semaphore = Semaphore::builder(&client, "/app/crawlers").max_leases(4).data("crawler-1").build()?;
/// # Ok(())
/// # }
/// ```
#[must_use = "a builder does nothing until `build` is called"]
pub struct SemaphoreBuilder {
    client: ZkClient,
    path: String,
    max_leases: usize,
    data: Option<Vec<u8>>,
    acl: Option<Vec<Acl>>,
}

impl SemaphoreBuilder {
    /// A builder of a semaphore at `path` for `client`, with the defaults below.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let semaphore = zk_queue::recipes::SemaphoreBuilder::new(&client, "/app/crawlers").build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn new(client: &ZkClient, path: &str) -> SemaphoreBuilder {
        SemaphoreBuilder {
            client: client.clone(),
            path: path.to_owned(),
            max_leases: 1,
            data: None,
            acl: None,
        }
    }

    /// How many leases may be held at once (Curator's `maxLeases`). Every
    /// participant of a path must use the same number: the first
    /// acquisition checks it against the one recorded at the path (see
    /// [Lease count](Semaphore#lease-count)). Defaults to 1.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let semaphore = zk_queue::recipes::Semaphore::builder(&client, "/app/crawlers").max_leases(4).build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn max_leases(mut self, max_leases: usize) -> Self {
        self.max_leases = max_leases;
        self
    }

    /// The data of this participant's lease nodes (Curator's
    /// `setNodeData`), which Curator's `Lease.getData` reads. Defaults to
    /// what Curator writes: this host's IP address as text, or nothing.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let semaphore = zk_queue::recipes::Semaphore::builder(&client, "/app/crawlers").data("host-a").build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn data(mut self, data: impl Into<Vec<u8>>) -> Self {
        self.data = Some(data.into());
        self
    }

    /// The ACL of the nodes this participant creates. Defaults to the
    /// client's default ACL.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// use zk_queue::client::Acl;
    /// let semaphore = zk_queue::recipes::Semaphore::builder(&client, "/app/crawlers").acl(vec![Acl::anyone_all()]).build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn acl(mut self, acl: Vec<Acl>) -> Self {
        self.acl = Some(acl);
        self
    }

    /// Validates the settings and makes the semaphore; nothing is sent to
    /// the server until it is first acquired.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let semaphore = zk_queue::recipes::Semaphore::builder(&client, "/app/crawlers").build()?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a path that is not valid, or is the root;
    /// [`Error::InvalidArgument`] for `max_leases` 0 or an empty ACL;
    /// [`Error::Closed`] if the client is closed.
    pub fn build(self) -> Result<Semaphore> {
        if self.max_leases == 0 {
            return Err(Error::InvalidArgument("max_leases must be at least 1".into()));
        }
        Semaphore::new(self.client, self.path, self.max_leases, self.data, self.acl)
    }
}

impl std::fmt::Debug for SemaphoreBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SemaphoreBuilder")
            .field("path", &self.path)
            .field("max_leases", &self.max_leases)
            .field("data", &self.data.as_deref().map(String::from_utf8_lossy))
            .field("acl", &self.acl)
            .finish()
    }
}
