//! [`ChildWatch`]: a one-shot watch on a node's children that a thread can
//! wait on.

use std::time::{Duration, Instant};

use crate::sync::Latch;

/// A one-shot watch left by [`ZkClient::get_children_watch`](crate::ZkClient::get_children_watch).
///
/// It fires once, on the next change of the node's children, the node's
/// deletion, or a change of the connection (after which the children may
/// have changed unseen). The watcher callback only opens a latch; waiting
/// happens on the caller's thread. Dropping the watch removes the watcher;
/// once no other watcher of the client is left on the node, the client also
/// asks the server to remove its watch there, as the watch is dropped and
/// without waiting for the answer.
///
/// ```no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// use std::time::Duration;
/// let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
/// client.ensure_path("/jobs")?;
/// let (children, _stat, watch) = client.get_children_watch("/jobs")?;
/// if children.is_empty() && watch.wait_timeout(Duration::from_secs(10)) {
///     println!("the children of /jobs changed");
/// }
/// # Ok(())
/// # }
/// ```
#[must_use = "a watch does nothing unless waited on"]
pub struct ChildWatch {
    latch: Latch,
    _task: async_global_executor::Task<()>,
}

impl ChildWatch {
    pub(crate) fn new(latch: Latch, task: async_global_executor::Task<()>) -> ChildWatch {
        ChildWatch { latch, _task: task }
    }

    /// Whether the watch has fired.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let (_, _, watch) = client.get_children_watch("/")?;
    /// println!("fired already: {}", watch.is_fired());
    /// # Ok(())
    /// # }
    /// ```
    pub fn is_fired(&self) -> bool {
        self.latch.wait_until(Some(Instant::now()))
    }

    /// Waits until the watch fires.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let (_, _, watch) = client.get_children_watch("/")?;
    /// watch.wait();
    /// # Ok(())
    /// # }
    /// ```
    pub fn wait(&self) {
        self.latch.wait_until(None);
    }

    /// Waits until the watch fires or `timeout` passes; returns whether it fired.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// use std::time::Duration;
    /// let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let (_, _, watch) = client.get_children_watch("/")?;
    /// let fired = watch.wait_timeout(Duration::from_millis(100));
    /// # Ok(())
    /// # }
    /// ```
    pub fn wait_timeout(&self, timeout: Duration) -> bool {
        self.latch.wait_until(Instant::now().checked_add(timeout))
    }

    /// The latch the watch opens, for waiting on it together with other wake-ups.
    pub(crate) fn latch(&self) -> &Latch {
        &self.latch
    }
}

impl std::fmt::Debug for ChildWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChildWatch").field("fired", &self.is_fired()).finish()
    }
}
