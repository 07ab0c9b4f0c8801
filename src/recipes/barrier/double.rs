//! [`DoubleBarrier`]: Curator's `DistributedDoubleBarrier`, whose members
//! enter together once all have come and leave together once all are done.

use std::time::{Duration, Instant};

use crate::client::{Acl, Session, ZkClient};
use crate::error::Result;
use crate::path;

/// The name of the node whose creation lets the members in (Curator's
/// `READY_NODE`).
pub(super) const READY: &str = "ready";

/// A barrier that lets its members in together once
/// [`member_count`](super::DoubleBarrierBuilder) of them have entered, and out
/// together once they all leave; compatible with Curator's
/// `DistributedDoubleBarrier` on the same path, so Rust and Java members
/// can share a round.
///
/// Each member that [entered](Self::enter) has an ephemeral node named by
/// its [id](super::DoubleBarrierBuilder::id) under the barrier path; the member
/// that counts `member_count` of them creates the persistent node `ready`
/// there, which lets every member in. [Leaving](Self::leave) deletes the
/// member nodes and returns once all are gone; the last member out deletes
/// `ready`.
///
/// # How it differs from Curator
/// A round of Rust and Curator members that enter and leave goes as
/// Curator's does; two of Curator's traps are closed:
/// - A timed-out [`enter_timeout`](Self::enter_timeout) deletes its member
///   node, so the others do not count a member that has gone (Curator's
///   leaves it, and the others are let in one short).
/// - A `ready` left by an earlier round (whose members went without
///   leaving) lets no one in: a member takes `ready` as its round's only if
///   it was created after the member's own node, or while `member_count`
///   other members are inside; it deletes any other. Curator's `enter`
///   passes whenever `ready` exists, so the next round's first member would
///   pass alone. (A Curator member arriving before a Rust member has
///   deleted such a `ready` still passes it.)
///
/// A timed-out [`leave_timeout`](Self::leave_timeout) leaves `ready` to
/// the last member out (Curator's deletes it while others are still
/// inside).
///
/// # When a member dies
/// A member whose session ends while it waits in `enter` is counted until
/// the server expires its node; one whose session ends inside holds the
/// others' `leave` up until then (its session timeout), no longer.
///
/// One handle is one member: its calls are taken one at a time (as
/// Curator's); share it by reference or in an `Arc`, or make one per member.
///
/// # Notable errors
/// - [`Error::Unreachable`](crate::Error::Unreachable): no server answered
///   in time: by the deadline of a timed call, or within the client's request
///   timeout for [`enter`](Self::enter) and [`leave`](Self::leave).
/// - [`Error::Timeout`](crate::Error::Timeout): a connected server did not
///   answer in time.
/// - [`Error::SessionExpired`](crate::Error::SessionExpired): the member's
///   node went with its session while it was inside; it is no longer a
///   member of the round.
/// - [`Error::NodeExists`](crate::Error::NodeExists): another session has a
///   member node with this member's id.
/// - [`Error::Closed`](crate::Error::Closed): the client is closed.
///
/// ```no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// use zk_queue::{ZkClient, recipes::DoubleBarrier};
/// let client = ZkClient::connect("127.0.0.1:2181")?;
/// let barrier = DoubleBarrier::builder(&client, "/jobs/nightly-round", 3).build()?;
/// barrier.enter()?; // returns once 3 members have entered
/// println!("computing my share");
/// barrier.leave()?; // returns once all 3 have left
/// # Ok(())
/// # }
/// ```
pub struct DoubleBarrier {
    pub(super) client: ZkClient,
    pub(super) path: String,
    pub(super) member_count: usize,
    pub(super) id: String,
    /// The path of this member's node.
    pub(super) node_path: String,
    pub(super) ready_path: String,
    /// The data of the nodes this member creates.
    pub(super) data: Vec<u8>,
    pub(super) acl: Vec<Acl>,
    /// This member's node while it is in (or entering), and the calls
    /// taken one at a time.
    pub(super) node: parking_lot::Mutex<Option<Member>>,
    /// How many times this member created its node: a node given up
    /// (`enter` timed out or failed) is deleted in the background until it
    /// is gone, unless the member creates its node again meanwhile (the
    /// node at its path is then its new one). Held while a background
    /// deletion asks the server, so a new create waits for that.
    pub(super) joins: std::sync::Arc<parking_lot::Mutex<u64>>,
}

/// This member's node, as created.
#[derive(Clone, Copy, Debug)]
pub(super) struct Member {
    pub(super) session: Session,
    /// The node's creation zxid: a `ready` created later is of its round.
    pub(super) czxid: i64,
    /// Whether this member sent the node's delete: once it has, the node
    /// gone is its own doing, even if the delete's reply never came.
    pub(super) deleting: bool,
}

impl DoubleBarrier {
    pub(super) fn new(
        client: ZkClient,
        path: String,
        member_count: usize,
        id: String,
        data: Vec<u8>,
        acl: Vec<Acl>,
    ) -> DoubleBarrier {
        DoubleBarrier {
            node_path: path::join(&path, &id),
            ready_path: path::join(&path, READY),
            client,
            path,
            member_count,
            id,
            data,
            acl,
            node: parking_lot::Mutex::new(None),
            joins: std::sync::Arc::default(),
        }
    }

    /// Enters the barrier, blocking until `member_count` members have
    /// entered (at once if the round it joins is already in).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let barrier = zk_queue::recipes::DoubleBarrier::builder(&client, "/jobs/round", 3).build()?;
    /// barrier.enter()?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// See [Notable errors](DoubleBarrier#notable-errors): each request
    /// gives up within the client's request timeout; waiting for the others
    /// does not. On an error this member's node is deleted (in the
    /// background if the server cannot be asked now).
    pub fn enter(&self) -> Result<()> {
        self.enter_until(None).map(|_| ())
    }

    /// Enters the barrier, blocking until `member_count` members have
    /// entered (`true`) or `timeout` passes (`false`). A member that gives
    /// up deletes its node, so it is not counted by those who stay; if the
    /// last member came just as it gave up, and counted it, it is in after
    /// all (`true`, with its node created again: two round trips past the
    /// deadline). Deleting its node and looking whether it was counted
    /// happens after the deadline, and waits for a connected server at
    /// most a second (plus a second for the answer in flight): a stalled
    /// server holds a member that gives up two seconds past the deadline
    /// at most (a server that cannot be reached, not at all).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let barrier = zk_queue::recipes::DoubleBarrier::builder(&client, "/jobs/round", 3).build()?;
    /// use std::time::Duration;
    /// if !barrier.enter_timeout(Duration::from_secs(30))? {
    ///     println!("the others did not come within 30 s");
    /// }
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// [`Error::Unreachable`](crate::Error::Unreachable) by the deadline if
    /// no server can be reached then; otherwise as [`enter`](Self::enter),
    /// each request given up by the deadline (plus a second for an answer in
    /// flight from a connected server).
    pub fn enter_timeout(&self, timeout: Duration) -> Result<bool> {
        match Instant::now().checked_add(timeout) {
            Some(deadline) => self.enter_until(Some(deadline)),
            None => self.enter().map(|()| true),
        }
    }

    /// Leaves the barrier: deletes this member's node and blocks until every
    /// member's node is gone, then deletes `ready` if it is the last out. A
    /// member that has not entered waits for the others to leave.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let barrier = zk_queue::recipes::DoubleBarrier::builder(&client, "/jobs/round", 3).build()?;
    /// barrier.enter()?;
    /// barrier.leave()?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// See [Notable errors](DoubleBarrier#notable-errors): each request
    /// gives up within the client's request timeout; waiting for the others
    /// does not.
    pub fn leave(&self) -> Result<()> {
        self.leave_until(None).map(|_| ())
    }

    /// Leaves the barrier as [`leave`](Self::leave) does, blocking until
    /// every member's node is gone (`true`) or `timeout` passes (`false`,
    /// `ready` left in place; call `leave` again to finish leaving).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let barrier = zk_queue::recipes::DoubleBarrier::builder(&client, "/jobs/round", 3).build()?;
    /// use std::time::Duration;
    /// barrier.enter()?;
    /// if !barrier.leave_timeout(Duration::from_secs(30))? {
    ///     println!("some members are still inside after 30 s");
    /// }
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// [`Error::Unreachable`](crate::Error::Unreachable) by the deadline if
    /// no server can be reached then; otherwise as [`leave`](Self::leave).
    pub fn leave_timeout(&self, timeout: Duration) -> Result<bool> {
        match Instant::now().checked_add(timeout) {
            Some(deadline) => self.leave_until(Some(deadline)),
            None => self.leave().map(|()| true),
        }
    }

    /// This member's id: the name of its node.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let barrier = zk_queue::recipes::DoubleBarrier::builder(&client, "/jobs/round", 3).id("worker-1").build()?;
    /// assert_eq!(barrier.id(), "worker-1");
    /// # Ok(())
    /// # }
    /// ```
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The barrier path.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let barrier = zk_queue::recipes::DoubleBarrier::builder(&client, "/jobs/round", 3).build()?;
    /// assert_eq!(barrier.path(), "/jobs/round");
    /// # Ok(())
    /// # }
    /// ```
    pub fn path(&self) -> &str {
        &self.path
    }

    /// How many members a round has.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let barrier = zk_queue::recipes::DoubleBarrier::builder(&client, "/jobs/round", 3).build()?;
    /// assert_eq!(barrier.member_count(), 3);
    /// # Ok(())
    /// # }
    /// ```
    pub fn member_count(&self) -> usize {
        self.member_count
    }
}

impl std::fmt::Debug for DoubleBarrier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DoubleBarrier")
            .field("path", &self.path)
            .field("member_count", &self.member_count)
            .field("id", &self.id)
            .field("inside", &self.node.try_lock().map(|node| node.is_some()))
            .finish()
    }
}
