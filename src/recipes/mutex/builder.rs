//! The consuming builder of [`Mutex`].

use super::Mutex;
use crate::client::{Acl, ZkClient};
use crate::error::{Error, Result};
use crate::recipes::lock::Participant;

/// Builds a [`Mutex`]; made by [`Mutex::builder`] or [`MutexBuilder::new`].
///
/// ```no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// use zk_queue::{ZkClient, recipes::Mutex};
/// let client = ZkClient::connect("127.0.0.1:2181")?;
/// let mutex = Mutex::builder(&client, "/locks/report")
///     .data("report-writer-1")
///     .max_leases(1)
///     .build()?;
/// # Ok(())
/// # }
/// ```
#[must_use = "a builder does nothing until `build` is called"]
pub struct MutexBuilder {
    client: ZkClient,
    path: String,
    data: Option<Vec<u8>>,
    max_leases: usize,
    acl: Option<Vec<Acl>>,
}

impl MutexBuilder {
    /// A builder of a lock at `path` for `client`, with the defaults below.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let mutex = zk_queue::recipes::MutexBuilder::new(&client, "/locks/report").build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn new(client: &ZkClient, path: &str) -> MutexBuilder {
        MutexBuilder {
            client: client.clone(),
            path: path.to_owned(),
            data: None,
            max_leases: 1,
            acl: None,
        }
    }

    /// The data of this participant's nodes, which every participant (and
    /// Curator's `getParticipantNodes` readers) can read. Defaults to what
    /// Curator writes: this host's IP address as text (the first address
    /// its name resolves to, IPv4 first), or nothing if it has none.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let mutex = zk_queue::recipes::Mutex::builder(&client, "/locks/report").data("host-a:8080").build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn data(mut self, data: impl Into<Vec<u8>>) -> Self {
        self.data = Some(data.into());
        self
    }

    /// How many participants may hold the lock at once: a participant holds
    /// when fewer than this many nodes come before its own (Curator's
    /// `maxLeases`, which its semaphores set). Every participant of a path
    /// must use the same number. Defaults to 1, a mutex.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// // At most three report writers at a time.
    /// let mutex = zk_queue::recipes::Mutex::builder(&client, "/locks/report").max_leases(3).build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn max_leases(mut self, max_leases: usize) -> Self {
        self.max_leases = max_leases;
        self
    }

    /// The ACL of the lock path (if it is created) and of this participant's
    /// nodes. Defaults to the client's default ACL.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// use zk_queue::client::Acl;
    /// let mutex = zk_queue::recipes::Mutex::builder(&client, "/locks/report").acl(vec![Acl::anyone_all()]).build()?;
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
    /// let mutex = zk_queue::recipes::Mutex::builder(&client, "/locks/report").build()?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a path that is not valid, or is the root;
    /// [`Error::InvalidArgument`] for `max_leases` 0 or an empty ACL;
    /// [`Error::Closed`] if the client is closed.
    pub fn build(self) -> Result<Mutex> {
        if self.max_leases == 0 {
            return Err(Error::InvalidArgument("max_leases must be at least 1".into()));
        }
        let lock = Participant::new(self.client, self.path, self.data, self.acl)?;
        Ok(Mutex::new(lock, self.max_leases))
    }
}

impl MutexBuilder {
    /// As [`build`](Self::build), for a lock whose
    /// [`lock_cancellable`](Mutex::lock_cancellable) gives up once `cancel`
    /// opens.
    pub(crate) fn build_cancellable(self, cancel: crate::sync::Latch) -> Result<Mutex> {
        if self.max_leases == 0 {
            return Err(Error::InvalidArgument("max_leases must be at least 1".into()));
        }
        let lock = Participant::new(self.client, self.path, self.data, self.acl)?.cancelled_by(cancel);
        Ok(Mutex::new(lock, self.max_leases))
    }
}

impl std::fmt::Debug for MutexBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MutexBuilder")
            .field("path", &self.path)
            .field("data", &self.data.as_deref().map(String::from_utf8_lossy))
            .field("max_leases", &self.max_leases)
            .field("acl", &self.acl)
            .finish()
    }
}
