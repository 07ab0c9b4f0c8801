//! The consuming builder of [`DoubleBarrier`].

use super::double::{DoubleBarrier, READY};
use super::validated;
use crate::client::{Acl, ZkClient};
use crate::error::{Error, Result};
use crate::naming::random_uuid;
use crate::recipes::lock::local_address;

/// Builds a [`DoubleBarrier`]; made by [`DoubleBarrier::builder`] or
/// [`DoubleBarrierBuilder::new`].
///
/// ```no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// use zk_queue::{ZkClient, recipes::DoubleBarrier};
/// let client = ZkClient::connect("127.0.0.1:2181")?;
/// let barrier = DoubleBarrier::builder(&client, "/jobs/round", 3)
///     .id("worker-1")
///     .build()?;
/// # Ok(())
/// # }
/// ```
#[must_use = "a builder does nothing until `build` is called"]
pub struct DoubleBarrierBuilder {
    client: ZkClient,
    path: String,
    member_count: usize,
    id: Option<String>,
    data: Option<Vec<u8>>,
    acl: Option<Vec<Acl>>,
}

impl DoubleBarrierBuilder {
    /// A builder of a member of a barrier of `member_count` members at
    /// `path` for `client`, with the defaults below.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let barrier = zk_queue::recipes::DoubleBarrierBuilder::new(&client, "/jobs/round", 3).build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn new(client: &ZkClient, path: &str, member_count: usize) -> DoubleBarrierBuilder {
        DoubleBarrierBuilder {
            client: client.clone(),
            path: path.to_owned(),
            member_count,
            id: None,
            data: None,
            acl: None,
        }
    }

    /// This member's id, the name of its node under the barrier path; no two
    /// members of a round may share one. Defaults to a random UUID, as
    /// Curator's.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let barrier = zk_queue::recipes::DoubleBarrier::builder(&client, "/jobs/round", 3).id("worker-1").build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// The data of the nodes this member creates (its member node, and
    /// `ready` if it creates it). Defaults to what Curator writes: this
    /// host's IP address as text, or nothing if it has none.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let barrier = zk_queue::recipes::DoubleBarrier::builder(&client, "/jobs/round", 3).data("host-a").build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn data(mut self, data: impl Into<Vec<u8>>) -> Self {
        self.data = Some(data.into());
        self
    }

    /// The ACL of the nodes this member creates (the barrier path if it is
    /// missing, its member node and `ready`). Defaults to the client's
    /// default ACL.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// use zk_queue::client::Acl;
    /// let barrier = zk_queue::recipes::DoubleBarrier::builder(&client, "/jobs/round", 3)
    ///     .acl(vec![Acl::anyone_all()])
    ///     .build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn acl(mut self, acl: Vec<Acl>) -> Self {
        self.acl = Some(acl);
        self
    }

    /// Validates the settings and makes the member; nothing is sent to the
    /// server until it enters.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let barrier = zk_queue::recipes::DoubleBarrier::builder(&client, "/jobs/round", 3).build()?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a path that is not valid, or is the root;
    /// [`Error::InvalidArgument`] for `member_count` 0, an id that is not a
    /// node name (empty, `.`, `..`, with a `/`) or is `ready`, or an empty
    /// ACL; [`Error::Closed`] if the client is closed.
    pub fn build(self) -> Result<DoubleBarrier> {
        validated(&self.client, &self.path)?;
        if self.member_count == 0 {
            return Err(Error::InvalidArgument("member_count must be at least 1".into()));
        }
        let id = self.id.unwrap_or_else(random_uuid);
        if id.is_empty() || id == "." || id == ".." || id.contains('/') || id.contains('\0') || id == READY {
            return Err(Error::InvalidArgument(format!(
                "a member id must be a node name other than {READY:?}: {id:?}"
            )));
        }
        if self.acl.as_ref().is_some_and(Vec::is_empty) {
            return Err(Error::InvalidArgument("the acl of a barrier must not be empty".into()));
        }
        let acl = self.acl.unwrap_or_else(|| self.client.default_acl().to_vec());
        let data = self.data.unwrap_or_else(local_address);
        Ok(DoubleBarrier::new(
            self.client,
            self.path,
            self.member_count,
            id,
            data,
            acl,
        ))
    }
}

// The builder's entry point on the type it builds, kept beside the builder.
impl DoubleBarrier {
    /// A builder of member `member_count` of a barrier at `path` for
    /// `client` (every member of a path must give the same count).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let barrier = zk_queue::recipes::DoubleBarrier::builder(&client, "/jobs/round", 3).build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn builder(client: &ZkClient, path: &str, member_count: usize) -> DoubleBarrierBuilder {
        DoubleBarrierBuilder::new(client, path, member_count)
    }
}

impl std::fmt::Debug for DoubleBarrierBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DoubleBarrierBuilder")
            .field("path", &self.path)
            .field("member_count", &self.member_count)
            .field("id", &self.id)
            .field("data", &self.data.as_deref().map(String::from_utf8_lossy))
            .field("acl", &self.acl)
            .finish()
    }
}
