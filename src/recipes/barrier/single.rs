//! [`Barrier`]: Curator's `DistributedBarrier`, one node that holds every
//! waiter back while it exists; [`BarrierBuilder`], its settings validated
//! in `build`.

use std::time::{Duration, Instant};

use super::{ensure_container, parent, validated};
use crate::client::{Acl, Opts, ZkClient};
use crate::error::{Error, Result};
use crate::recipes::deadline::{self, unreachable_or};
use crate::recipes::lock::local_address;
use crate::sync::Latch;

/// A barrier that holds back every participant calling [`wait`](Self::wait)
/// while its node exists, compatible with Curator's `DistributedBarrier`
/// on the same path: the node is a persistent node at the barrier path (its
/// parents created as container nodes if missing), holding the host's
/// address as Curator's default data.
///
/// Any participant may [set](Self::set_barrier) or
/// [remove](Self::remove_barrier) it; waiters are released when the node is
/// gone, whoever deleted it (a Curator participant, or an operator).
///
/// # Notable errors
/// - [`Error::Unreachable`]: no server answered in time: by the deadline of
///   [`wait_timeout`](Self::wait_timeout), or within the client's request
///   timeout for the other calls.
/// - [`Error::Timeout`]: a connected server did not answer in time.
/// - [`Error::Closed`]: the client is closed.
///
/// ```no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// use zk_queue::{ZkClient, recipes::Barrier};
/// let client = ZkClient::connect("127.0.0.1:2181")?;
/// let barrier = Barrier::new(&client, "/app/maintenance")?;
/// barrier.set_barrier()?;
/// // ... elsewhere, workers call `barrier.wait()` and are held back ...
/// barrier.remove_barrier()?; // releases them all
/// # Ok(())
/// # }
/// ```
pub struct Barrier {
    client: ZkClient,
    path: String,
    data: Vec<u8>,
    acl: Vec<Acl>,
}

impl Barrier {
    /// A builder of a barrier at `path` for `client`, to set its node's
    /// data or ACL.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let barrier = zk_queue::recipes::Barrier::builder(&client, "/app/maintenance").data("deploy 42").build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn builder(client: &ZkClient, path: &str) -> BarrierBuilder {
        BarrierBuilder::new(client, path)
    }

    /// A barrier at `path` for `client`, with the host's address as its
    /// node's data and the client's default ACL, as Curator's: the shortcut
    /// of [`builder`](Self::builder)`(client, path).build()`. Nothing is
    /// sent to the server.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let barrier = zk_queue::recipes::Barrier::new(&client, "/app/maintenance")?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a path that is not valid, or is the root;
    /// [`Error::Closed`] if the client is closed.
    pub fn new(client: &ZkClient, path: &str) -> Result<Barrier> {
        Barrier::builder(client, path).build()
    }

    /// The barrier of settings [`BarrierBuilder`] has validated.
    fn of(client: ZkClient, path: String, data: Vec<u8>, acl: Vec<Acl>) -> Barrier {
        Barrier {
            client,
            path,
            data,
            acl,
        }
    }

    /// Sets the barrier: creates its node (and missing parents, as container
    /// nodes); a node already there is kept.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let barrier = zk_queue::recipes::Barrier::new(&client, "/app/maintenance")?;
    /// barrier.set_barrier()?;
    /// barrier.set_barrier()?; // already set: nothing changes
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// See [Notable errors](Barrier#notable-errors).
    pub fn set_barrier(&self) -> Result<()> {
        let opts = Opts::new().acl(&self.acl);
        loop {
            match self.client.create_with(&self.path, &self.data, opts) {
                Ok(_) | Err(Error::NodeExists { .. }) => return Ok(()),
                // Curator's `creatingParentContainersIfNeeded`.
                Err(Error::NoNode { .. }) => ensure_container(&self.client, parent(&self.path), &self.acl, None)?,
                Err(e) => return Err(e),
            }
        }
    }

    /// Removes the barrier, releasing every waiter; a barrier not set is
    /// left as it is.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let barrier = zk_queue::recipes::Barrier::new(&client, "/app/maintenance")?;
    /// barrier.remove_barrier()?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// See [Notable errors](Barrier#notable-errors).
    pub fn remove_barrier(&self) -> Result<()> {
        match self.client.delete_with(&self.path, None, Opts::new()) {
            Ok(_) | Err(Error::NoNode { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Blocks until the barrier is not set (at once if it is not).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let barrier = zk_queue::recipes::Barrier::new(&client, "/app/maintenance")?;
    /// barrier.wait()?;
    /// println!("maintenance is over");
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// See [Notable errors](Barrier#notable-errors): each request gives up
    /// within the client's request timeout; waiting for the removal does not.
    pub fn wait(&self) -> Result<()> {
        self.wait_until(None).map(|_| ())
    }

    /// Blocks until the barrier is not set (`true`) or `timeout` passes
    /// (`false`).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let barrier = zk_queue::recipes::Barrier::new(&client, "/app/maintenance")?;
    /// use std::time::Duration;
    /// if !barrier.wait_timeout(Duration::from_secs(5))? {
    ///     println!("still under maintenance after 5 s");
    /// }
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// [`Error::Unreachable`] by the deadline if no server can be reached
    /// then; otherwise as [`wait`](Self::wait), each request given up by the
    /// deadline (plus a second for an answer in flight from a connected
    /// server).
    pub fn wait_timeout(&self, timeout: Duration) -> Result<bool> {
        match Instant::now().checked_add(timeout) {
            Some(deadline) => self.wait_until(Some(deadline)),
            None => self.wait().map(|()| true),
        }
    }

    /// The one implementation: whether the node was gone by `deadline`.
    fn wait_until(&self, deadline: Option<Instant>) -> Result<bool> {
        let started = Instant::now();
        loop {
            let woken = Latch::new();
            let _states = self.client.wake_on_state_change(&woken);
            let opts = Opts::new().until(deadline);
            let (stat, _watch) = match self.client.watch_exists(&self.path, &woken, opts) {
                Ok(read) => read,
                Err(e) => return Err(deadline::call_error(&self.client, e, started, "barrier")),
            };
            if stat.is_none() {
                return Ok(true);
            }
            if !woken.wait_until(deadline) {
                return unreachable_or(&self.client, started, false);
            }
        }
    }

    /// The barrier path.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let barrier = zk_queue::recipes::Barrier::new(&client, "/app/maintenance")?;
    /// assert_eq!(barrier.path(), "/app/maintenance");
    /// # Ok(())
    /// # }
    /// ```
    pub fn path(&self) -> &str {
        &self.path
    }
}

impl std::fmt::Debug for Barrier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Barrier").field("path", &self.path).finish()
    }
}

/// Builds a [`Barrier`]; made by [`Barrier::builder`] or
/// [`BarrierBuilder::new`].
///
/// ```no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// use zk_queue::{ZkClient, recipes::Barrier};
/// let client = ZkClient::connect("127.0.0.1:2181")?;
/// let barrier = Barrier::builder(&client, "/app/maintenance")
///     .data("set by the deploy job")
///     .build()?;
/// # Ok(())
/// # }
/// ```
#[must_use = "a builder does nothing until `build` is called"]
pub struct BarrierBuilder {
    client: ZkClient,
    path: String,
    data: Option<Vec<u8>>,
    acl: Option<Vec<Acl>>,
}

impl BarrierBuilder {
    /// A builder of a barrier at `path` for `client`, with the defaults
    /// below.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let barrier = zk_queue::recipes::BarrierBuilder::new(&client, "/app/maintenance").build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn new(client: &ZkClient, path: &str) -> BarrierBuilder {
        BarrierBuilder {
            client: client.clone(),
            path: path.to_owned(),
            data: None,
            acl: None,
        }
    }

    /// The data of the barrier node when this participant sets it.
    /// Defaults to what Curator writes: this host's IP address as text, or
    /// nothing if it has none.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let barrier = zk_queue::recipes::Barrier::builder(&client, "/app/maintenance").data("deploy 42").build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn data(mut self, data: impl Into<Vec<u8>>) -> Self {
        self.data = Some(data.into());
        self
    }

    /// The ACL of the barrier node (and of its parents, if they are
    /// created). Defaults to the client's default ACL.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// use zk_queue::client::Acl;
    /// let barrier = zk_queue::recipes::Barrier::builder(&client, "/app/maintenance")
    ///     .acl(vec![Acl::anyone_all()])
    ///     .build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn acl(mut self, acl: Vec<Acl>) -> Self {
        self.acl = Some(acl);
        self
    }

    /// Validates the settings and makes the barrier; nothing is sent to the
    /// server.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let barrier = zk_queue::recipes::Barrier::builder(&client, "/app/maintenance").build()?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a path that is not valid, or is the root;
    /// [`Error::InvalidArgument`] for an empty ACL; [`Error::Closed`] if the
    /// client is closed.
    pub fn build(self) -> Result<Barrier> {
        validated(&self.client, &self.path)?;
        if self.acl.as_ref().is_some_and(Vec::is_empty) {
            return Err(Error::InvalidArgument("the acl of a barrier must not be empty".into()));
        }
        let acl = self.acl.unwrap_or_else(|| self.client.default_acl().to_vec());
        let data = self.data.unwrap_or_else(local_address);
        Ok(Barrier::of(self.client, self.path, data, acl))
    }
}

impl std::fmt::Debug for BarrierBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BarrierBuilder")
            .field("path", &self.path)
            .field("data", &self.data.as_deref().map(String::from_utf8_lossy))
            .field("acl", &self.acl)
            .finish()
    }
}
