//! Taking a place in the line and waiting for the turn, as Curator's
//! `LockInternals.attemptLock` does.
//!
//! An attempt creates one ephemeral node with a protected name of its own
//! (`_c_<UUID>-lock-`, say, and the sequence the server appends: the
//! driver's name), fenced to the session it is sent in, and lists the lock
//! path in the same round trip (both requests are written before either
//! answer is awaited; the server answers a session's requests in order, so
//! the listing shows the new node): the participant holds when its driver
//! says so; otherwise it watches only the node the driver names (a
//! `getData` watch, as Curator's, so a release wakes one waiter, not the
//! herd) and lists again when that node goes, or when the connection
//! changes.
//!
//! A holder's fencing token is its node's creation zxid, which the create's
//! answer carries; the watch on its own node, which tells the hold of its
//! loss, is sent without waiting for the answer (an answer that does not
//! set it, the node being gone, opens the loss latch as the watch would).
//! So an uncontended acquisition costs one round trip, and a waiter holds
//! one listing after the event of its predecessor's deletion.
//!
//! A create whose reply was lost is resolved as Curator resolves it: after a
//! `sync`, the attempt lists the lock path and looks for its protected
//! prefix; found, that node is its own; not found, the create was not
//! applied and is sent again, in the same session. A node of the attempt's
//! besides its own (a create that was applied after all) is deleted when a
//! listing shows it. A node lost with its session is replaced by a new one
//! at the end of the line. Whatever the attempt leaves when it gives up
//! (its deadline, or an error) is deleted, in the background if the server
//! cannot be asked now (see `release`).

use std::time::Instant;

use super::driver::{Driver, Verdict};
use super::release::{Leftover, Nodes};
use super::Participant;
use crate::client::{CreateMode, DataWatch, Opts, Session, WakerGuard};
use crate::error::{Error, Result};
use crate::path;
use crate::recipes::names;
use crate::sync::Latch;

/// A node this attempt created, in the session it was created in.
#[derive(Clone)]
pub(super) struct Node {
    pub(super) path: String,
    name: String,
    pub(super) session: Session,
    /// Its creation zxid, when the create's answer told it.
    czxid: Option<i64>,
}

/// What a successful attempt holds.
pub(super) struct Acquired {
    pub(super) node: Node,
    /// The fencing token: the node's creation zxid, or the one its driver
    /// gives it.
    pub(super) czxid: i64,
    /// Opened when the hold may be gone: the node changed or went, the
    /// connection changed, or the session ended.
    pub(super) lost: Latch,
    /// The watch on the node itself, which opens `lost`.
    pub(super) _watch: DataWatch,
    /// Opens `lost` on every connection change.
    pub(super) _states: WakerGuard,
}

/// What one look at the line found.
enum Turn {
    /// The attempt holds.
    Ours(Box<Acquired>),
    /// Look again.
    Again,
    /// Its node is gone (deleted, or with its session): join again.
    Gone,
    /// Not its turn, and it waits no longer.
    NotYet,
}

/// One call's attempt at the lock.
pub(super) struct Attempt<'a> {
    lock: &'a Participant,
    driver: &'a Driver,
    /// The start of the names of this attempt's nodes.
    prefix: String,
    node: Option<Node>,
    /// The session the last create went out in, and whether a create's
    /// outcome was unknown at some point (another node may exist).
    sent: Option<(Session, bool)>,
    /// When the attempt gives up; `None`: each request within the client's
    /// request timeout, and no end to waiting for the turn.
    deadline: Option<Instant>,
    /// Whether it waits for its turn (`false`: `try_lock`, `try_read`...).
    patient: bool,
}

impl<'a> Attempt<'a> {
    pub(super) fn new(
        lock: &'a Participant,
        driver: &'a Driver,
        deadline: Option<Instant>,
        patient: bool,
    ) -> Attempt<'a> {
        Attempt {
            lock,
            driver,
            prefix: names::protected_prefix(),
            node: None,
            sent: None,
            deadline,
            patient,
        }
    }

    /// Waits for the turn; `None` if it did not come by the deadline (or at
    /// once, for an impatient attempt). Whatever it created is deleted
    /// unless it holds.
    pub(super) fn run(mut self) -> Result<Option<Acquired>> {
        let started = Instant::now();
        // A request's error tells how long that request waited; the call's
        // caller wants how long the call did.
        let result = self.turns(started).map_err(|e| e.of_call_since(started));
        if !matches!(result, Ok(Some(_))) {
            self.give_up();
        }
        result
    }

    fn turns(&mut self, started: Instant) -> Result<Option<Acquired>> {
        let client = &self.lock.client;
        // The listing taken with the create, for the first look.
        let mut listed = None;
        loop {
            let session = client.session();
            if self.driver.session().is_some_and(|only| only != session) {
                return Err(Error::SessionExpired);
            }
            // A node of an earlier session went with it.
            self.node.take_if(|node| node.session != session);
            let node = match &self.node {
                Some(node) => node.clone(),
                None => match self.join(session) {
                    Ok((node, listing)) => {
                        listed = listing;
                        self.node.insert(node).clone()
                    }
                    Err(Error::SessionExpired) if client.session() != session => continue,
                    Err(e) => return Err(e),
                },
            };
            match self.turn(&node, listed.take())? {
                Turn::Ours(acquired) => return Ok(Some(*acquired)),
                Turn::Again => {}
                Turn::Gone => self.node = None,
                Turn::NotYet => {
                    // As every timed call: no server to ask is an error.
                    if self.patient && !client.is_closed() && !client.state().is_connected() {
                        return Err(client.unreachable(started.elapsed()));
                    }
                    return Ok(None);
                }
            }
        }
    }

    /// Requests fenced to `session` within the attempt's deadline.
    fn opts(&self, session: Session) -> Opts<'a> {
        Opts::new().fenced(session).until(self.deadline)
    }

    /// Creates this attempt's node in `session`, with the listing of the
    /// lock path taken right after it when the server gave one, or finds the
    /// node a create whose reply was lost made.
    fn join(&mut self, session: Session) -> Result<(Node, Option<Vec<String>>)> {
        let lock = self.lock;
        let client = &lock.client;
        let (name, mode) = self.driver.node_name(&self.prefix);
        let wanted = path::join(&lock.path, &name);
        loop {
            let unknown = self.sent.is_some_and(|(s, unknown)| s == session && unknown);
            self.sent = Some((session, unknown));
            let opts = self.opts(session).once().mode(mode).acl(&lock.acl);
            match client.create_and_list_with(&wanted, &lock.data, &lock.path, opts) {
                Ok(made) => {
                    let node = self.node_at(made.path, session, Some(made.stat.czxid));
                    return Ok((node, made.children.ok()));
                }
                Err(Error::NoNode { .. }) => {
                    // Curator's `creatingParentContainersIfNeeded`.
                    let parent = Opts::new()
                        .until(self.deadline)
                        .mode(CreateMode::Container)
                        .acl(&lock.acl);
                    client.ensure_path_with(&lock.path, parent)?;
                }
                // A name of our own that exists (a node not sequential) is
                // a create of ours whose reply was lost: found below.
                Err(e @ Error::NodeExists { .. }) if mode == CreateMode::Ephemeral => {
                    self.sent = Some((session, true));
                    return match self.find(session)? {
                        Some(found) => Ok((self.node_at(path::join(&lock.path, &found), session, None), None)),
                        None => Err(e),
                    };
                }
                Err(e) if e.is_retryable() && !matches!(e, Error::SessionExpired) => {
                    self.sent = Some((session, true));
                    if let Some(found) = self.find(session)? {
                        log::info!(
                            "{} {}: a create's reply was lost; its node is {found}",
                            self.driver.recipe(),
                            lock.path
                        );
                        return Ok((self.node_at(path::join(&lock.path, &found), session, None), None));
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }

    fn node_at(&self, path: String, session: Session, czxid: Option<i64>) -> Node {
        let name = path::name(&path).to_owned();
        Node {
            path,
            name,
            session,
            czxid,
        }
    }

    /// The name of a node of this attempt's, if the lock path has one: after
    /// a `sync`, so the server has applied every create sent before.
    fn find(&self, session: Session) -> Result<Option<String>> {
        let client = &self.lock.client;
        client.sync(&self.lock.path, self.opts(session))?;
        match client.get_children_with(&self.lock.path, self.opts(session)) {
            Ok((children, _)) => Ok(children.into_iter().find(|name| name.starts_with(&self.prefix))),
            Err(Error::NoNode { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// One look at the line from `node`: at `listed`, the children taken
    /// with its create, if given, else at a listing asked for now.
    fn turn(&self, node: &Node, listed: Option<Vec<String>>) -> Result<Turn> {
        let lock = self.lock;
        let client = &lock.client;
        let children = match listed {
            Some(children) => children,
            None => match client.get_children_with(&lock.path, self.opts(node.session)) {
                Ok((children, _)) => children,
                Err(Error::NoNode { .. } | Error::SessionExpired) => return Ok(Turn::Gone),
                Err(e) => return Err(e),
            },
        };
        let sorted = self.driver.sorted(children);
        for stray in sorted
            .iter()
            .filter(|c| c.starts_with(&self.prefix) && **c != node.name)
        {
            let stray = Nodes::Known(path::join(&lock.path, stray));
            self.leftover(node.session, stray).in_background(client);
        }
        let Some(index) = sorted.iter().position(|name| *name == node.name) else {
            log::info!(
                "{} {}: {} is gone; joining again",
                self.driver.recipe(),
                lock.path,
                node.path
            );
            return Ok(Turn::Gone);
        };
        let before = match self.driver.verdict(&sorted, index) {
            Verdict::Holds => return self.confirm(node),
            Verdict::Watch(_) if !self.patient => return Ok(Turn::NotYet),
            Verdict::Watch(before) => path::join(&lock.path, &sorted[before]),
        };
        let latch = Latch::new();
        let _states = client.wake_on_state_change(&latch);
        lock.cancel_wakes(&latch);
        match client.watch_data(&before, &latch, self.opts(node.session)) {
            Ok((_, _, _watch)) if latch.wait_until(self.deadline) && !lock.is_cancelled() => Ok(Turn::Again),
            Ok(_) => Ok(Turn::NotYet),
            // Released since the listing.
            Err(Error::NoNode { .. }) => Ok(Turn::Again),
            Err(Error::SessionExpired) => Ok(Turn::Gone),
            Err(e) => Err(e),
        }
    }

    /// The node's turn has come: watches it, so the holder hears of its
    /// loss, and reads its creation zxid unless the create's answer told it
    /// (then the watch is sent without waiting: an answer that does not set
    /// it opens the loss latch). Any connection change on the way means
    /// looking again.
    fn confirm(&self, node: &Node) -> Result<Turn> {
        let client = &self.lock.client;
        let lost = Latch::new();
        let states = client.wake_on_state_change(&lost);
        let opts = self.opts(node.session);
        let (czxid, watch) = match node.czxid {
            Some(czxid) => (czxid, client.watch_data_unawaited(&node.path, &lost.chained(), opts)),
            None => match client.watch_data(&node.path, &lost.chained(), opts) {
                Ok((_, stat, watch)) => (stat.czxid, watch),
                Err(Error::NoNode { .. } | Error::SessionExpired) => return Ok(Turn::Gone),
                Err(e) => return Err(e),
            },
        };
        if lost.is_open() || !client.is_live(node.session) || !client.state().is_connected() {
            return Ok(Turn::Again);
        }
        Ok(Turn::Ours(Box::new(Acquired {
            node: node.clone(),
            czxid: self.driver.czxid().unwrap_or(czxid),
            lost,
            _watch: watch,
            _states: states,
        })))
    }

    fn leftover(&self, session: Session, nodes: Nodes) -> Leftover {
        Leftover {
            lock_path: self.lock.path.clone(),
            session,
            nodes,
        }
    }

    /// Deletes whatever this attempt may have left.
    fn give_up(&self) {
        let Some((session, unknown)) = self.sent else { return };
        let nodes = match &self.node {
            Some(node) if !unknown && node.session == session => Nodes::Known(node.path.clone()),
            _ => Nodes::Prefixed(self.prefix.clone()),
        };
        self.leftover(session, nodes).release(&self.lock.client, self.deadline);
    }
}
