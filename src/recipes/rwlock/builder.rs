//! The consuming builder of [`RwLock`].

use super::RwLock;
use crate::client::{Acl, ZkClient};
use crate::error::Result;
use crate::recipes::lock::Participant;

/// Builds a [`RwLock`]; made by [`RwLock::builder`] or [`RwLockBuilder::new`].
///
/// ```no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// use zk_queue::{ZkClient, recipes::RwLock};
/// let client = ZkClient::connect("127.0.0.1:2181")?;
/// let lock = RwLock::builder(&client, "/locks/catalog").data("catalog-service-1").build()?;
/// # Ok(())
/// # }
/// ```
#[must_use = "a builder does nothing until `build` is called"]
pub struct RwLockBuilder {
    client: ZkClient,
    path: String,
    data: Option<Vec<u8>>,
    acl: Option<Vec<Acl>>,
}

impl RwLockBuilder {
    /// A builder of a read-write lock at `path` for `client`, with the
    /// defaults below.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let lock = zk_queue::recipes::RwLockBuilder::new(&client, "/locks/catalog").build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn new(client: &ZkClient, path: &str) -> RwLockBuilder {
        RwLockBuilder {
            client: client.clone(),
            path: path.to_owned(),
            data: None,
            acl: None,
        }
    }

    /// The data of this participant's nodes, readers' and writers' alike,
    /// which every participant can read. Defaults to what Curator writes:
    /// this host's IP address as text (the first address its name resolves
    /// to, IPv4 first), or nothing if it has none.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let lock = zk_queue::recipes::RwLock::builder(&client, "/locks/catalog").data("host-a:8080").build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn data(mut self, data: impl Into<Vec<u8>>) -> Self {
        self.data = Some(data.into());
        self
    }

    /// The ACL of the lock path (if it is created) and of this participant's
    /// nodes. Defaults to the client's default ACL.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// use zk_queue::client::Acl;
    /// let lock = zk_queue::recipes::RwLock::builder(&client, "/locks/catalog").acl(vec![Acl::anyone_all()]).build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn acl(mut self, acl: Vec<Acl>) -> Self {
        self.acl = Some(acl);
        self
    }

    /// Validates the settings and makes the lock; nothing is sent to the
    /// server until it is first acquired (which creates the lock path if it
    /// is missing, as a container node, as Curator does).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let lock = zk_queue::recipes::RwLock::builder(&client, "/locks/catalog").build()?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidPath`](crate::Error::InvalidPath) for a path that is
    /// not valid, or is the root;
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for an
    /// empty ACL; [`Error::Closed`](crate::Error::Closed) if the client is
    /// closed.
    pub fn build(self) -> Result<RwLock> {
        Participant::new(self.client, self.path, self.data, self.acl).map(RwLock::new)
    }
}

impl std::fmt::Debug for RwLockBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RwLockBuilder")
            .field("path", &self.path)
            .field("data", &self.data.as_deref().map(String::from_utf8_lossy))
            .field("acl", &self.acl)
            .finish()
    }
}
