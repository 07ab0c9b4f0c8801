//! Taking a place in the line and waiting for the turn, as Curator's
//! `LockInternals.attemptLock` does.
//!
//! An attempt creates one ephemeral node with a protected name of its own
//! (`_c_<UUID>-lock-`, say, and the sequence the server appends: the
//! driver's name), fenced to the session it is sent in, and lists the lock
//! path in the same round trip (both requests are written before either
//! answer is awaited; the server answers a session's requests in order, so
//! the listing shows the new node): the participant holds when its driver
//! says so; otherwise it watches the node the driver names (a `getData`
//! watch, as Curator's, not awaited: `lead.rs`) and lists again when that
//! node goes, or when the connection changes. A mutex waiter also watches
//! one node further ahead, so that it is right behind the first node when
//! its turn comes (`lead.rs`): a release wakes at most three waiters, not
//! the herd.
//!
//! A holder's fencing token is its node's creation zxid, which the create's
//! answer carries. It hears of its node's loss from the participant's
//! watch on the lock path (`own.rs`), written ahead of its first create in
//! the same round trip and kept for the participant's later ones: its mark,
//! registered before the create, opens when the node is deleted or changed,
//! the connection drops or the session ends. So an uncontended cycle is a
//! create with its listing (one round trip) and a delete, with no request
//! for the watch. Without that watch (a client without persistent watches,
//! or an older server), the holder sets a data watch on its own node
//! without waiting for the answer (an answer that does not set it, the node
//! being gone, opens the loss latch as the watch would).
//!
//! A mutex waiter whose predecessor was the first in the line (at its last
//! listing, or since the deletion of the first, for the waiter behind the
//! second) holds when the watch says that node was deleted (not changed:
//! the client tells which event fired a watch), with no listing: the driver's
//! `holds_once_deleted` gives the argument (no node can come before its
//! own again; not so for the read-write lock). It is sound only while the
//! waiter's own node is known to be there: its mark, armed before the
//! create or before the last listing that showed the node, has not opened
//! (a deletion of its own node, by an operator, say, comes as an event
//! before the predecessor's, in the server's order; a disconnection opens
//! every mark, since events may be lost with a connection; the session's
//! end too). Without a mark, such a waiter sets a data watch on its own
//! node while it waits (not awaited, written before the watches on its
//! predecessor and ahead, so answered first), which tells the same and becomes its
//! hold's watch; a connection change during the wait means a listing
//! (a reattached session's watches may fire in any order). Otherwise it
//! lists as before. A
//! predecessor deleted with its expired session is deleted all the same:
//! the lock is free, as a listing would show. Curator's participants on the
//! same path keep their own rules (a listing after the event): they see the
//! same line, with this waiter's node first.
//!
//! Joining the line, and the search for a node whose create's reply was
//! lost, are in `join.rs`. A node lost with its session is replaced by a
//! new one at the end of the line. Whatever the attempt leaves when it
//! gives up (its deadline, or an error) is deleted, in the background if
//! the server cannot be asked now (see `release`).

mod join;

use std::time::Instant;

use super::driver::{Driver, Verdict};
use super::lead::Lead;
use super::own::Mark;
use super::release::{Leftover, Nodes};
use super::Participant;
use crate::client::{DataWatch, Opts, Session, WakerGuard};
use crate::error::{Error, Result};
use crate::path;
use crate::recipes::{deadline, names};
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
    /// The node's own creation zxid, which a re-check compares.
    pub(super) node_czxid: i64,
    /// Opened when the hold may be gone: the node changed or went, the
    /// connection changed, or the session ended.
    pub(super) lost: Latch,
    /// The watch on the node itself, which opens `lost`: a data watch of
    /// its own, or the participant's watch on the lock path.
    pub(super) _watch: Option<DataWatch>,
    pub(super) _mark: Option<Mark>,
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
    /// What tells it of its node's deletion, if the participant's watch on
    /// the lock path does.
    mark: Option<Mark>,
    /// Without a mark: a data watch on its node set while it waits, and the
    /// latch it opens (also when the answer does not set it).
    own_watch: Option<(DataWatch, Latch)>,
    /// The watch on the node it waits for, kept for the next look.
    lead: Option<Lead>,
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
            mark: None,
            own_watch: None,
            lead: None,
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
        // In the recipes' one vocabulary, and telling how long the call
        // waited, not how long its last request did.
        let result = self
            .turns(started)
            .map_err(|e| deadline::call_error(&self.lock.client, e, started, self.driver.recipe()));
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
                Turn::Gone => {
                    self.node = None;
                    self.lead = None;
                }
                Turn::NotYet if self.patient => {
                    // As every timed call: no server to ask is an error.
                    return deadline::unreachable_or(client, started, None);
                }
                Turn::NotYet => return Ok(None),
            }
        }
    }

    /// Requests fenced to `session` within the attempt's deadline.
    fn opts(&self, session: Session) -> Opts<'a> {
        Opts::new().fenced(session).until(self.deadline)
    }

    /// One look at the line from `node`: at `listed`, the children taken
    /// with its create, if given, else at a listing asked for now.
    fn turn(&mut self, node: &Node, listed: Option<Vec<String>>) -> Result<Turn> {
        let lock = self.lock;
        let client = &lock.client;
        let children = match listed {
            Some(children) => children,
            None => match self.list(node) {
                Ok(children) => children,
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
        let verdict = self.driver.verdict(&sorted, index);
        if verdict != Verdict::Holds {
            lock.own.contended();
        }
        let (before, first) = match verdict {
            Verdict::Holds => return self.confirm(node),
            Verdict::Watch(_) if !self.patient => return Ok(Turn::NotYet),
            Verdict::Watch(before) => (before, self.driver.holds_once_deleted(before)),
        };
        let ahead_at = self.driver.watch_ahead(before);
        if first || ahead_at.is_some() {
            self.watch_own_node(node);
        }
        let (session, opts) = (node.session, self.opts(node.session));
        let watch = |at: usize| Lead::watch(client, &path::join(&lock.path, &sorted[at]), session, opts);
        let ahead = ahead_at.map(watch);
        let waited_for = path::join(&lock.path, &sorted[before]);
        let lead = match self.lead.take().filter(|lead| lead.watches(&waited_for, session)) {
            Some(lead) => lead,
            None => watch(before),
        };
        // Behind the second node: the first one's deletion makes that one
        // the first (no node can come before it again).
        let moves_up = ahead.as_ref().filter(|_| before == 1 && ahead_at == Some(0));
        let Some(first) = self.wait(&lead, ahead.as_ref(), first, moves_up) else {
            return Ok(Turn::NotYet);
        };
        let turn = self.after_wait(node, first && lead.deleted_in_view());
        // Woken by a node further ahead: the watch serves the next look.
        if lead.is_fresh() {
            self.lead = Some(lead);
        }
        turn
    }

    /// Waits until `lead` or `ahead` fires (or the connection changes), but
    /// goes on waiting for `lead` once `moves_up`, the first node, is
    /// deleted; `None` at the deadline or when cancelled, else whether the
    /// node `lead` watches is known to be the first (`first` from the start).
    fn wait(&self, lead: &Lead, ahead: Option<&Lead>, mut first: bool, moves_up: Option<&Lead>) -> Option<bool> {
        loop {
            let wake = Latch::new();
            self.lock.cancel_wakes(&wake);
            lead.wakes(&wake);
            if let Some(ahead) = ahead.filter(|_| !first) {
                ahead.wakes(&wake);
            }
            if !wake.wait_until(self.deadline) || self.lock.is_cancelled() {
                return None;
            }
            if !first && moves_up.is_some_and(Lead::deleted_in_view) {
                first = true;
                if !lead.fired() {
                    continue;
                }
            }
            return Some(first);
        }
    }

    /// Without a mark, sets a data watch on its own node (not awaited, sent
    /// before the watch on the node it waits for), unless one is set: it
    /// tells, as a mark would, whether the node has been there since.
    fn watch_own_node(&mut self, node: &Node) {
        if self.mark.is_some() || node.czxid.is_none() {
            return;
        }
        self.own_watch.take_if(|(_, latch)| latch.is_open());
        if self.own_watch.is_none() {
            // A watch sent before this one could tell of its node before
            // this one tells of the waiter's own.
            self.lead = None;
            let latch = Latch::new();
            let opts = self.opts(node.session);
            let watch = self.lock.client.watch_data_unawaited(&node.path, &latch, opts);
            self.own_watch = Some((watch, latch));
        }
    }

    /// The listing of the lock path, taken with the mark armed again if it
    /// opened (the listing shows whether the node is there; the mark, what
    /// happens to it after).
    fn list(&mut self, node: &Node) -> Result<Vec<String>> {
        if let Some(mark) = self.mark.as_mut().filter(|mark| !mark.is_intact()) {
            mark.arm();
        }
        let opts = self.opts(node.session);
        self.lock
            .client
            .get_children_with(&self.lock.path, opts)
            .map(|(children, _)| children)
    }

    /// After the wait for the node before its own: it holds without another
    /// listing if that node was deleted and `its_turn` (the driver says its
    /// deletion is the turn), and its mark tells that its own node has been
    /// there since the listing; otherwise it looks at the line again.
    fn after_wait(&mut self, node: &Node, its_turn: bool) -> Result<Turn> {
        let intact = match (&self.mark, &self.own_watch) {
            (Some(mark), _) => mark.is_intact(),
            (None, Some((_, latch))) => !latch.is_open(),
            (None, None) => false,
        };
        if its_turn && intact {
            return self.confirm(node);
        }
        Ok(Turn::Again)
    }

    /// The node's turn has come: watches it, so the holder hears of its
    /// loss, and reads its creation zxid unless the create's answer told it
    /// (then the watch is sent without waiting: an answer that does not set
    /// it opens the loss latch). Any connection change on the way means
    /// looking again.
    fn confirm(&mut self, node: &Node) -> Result<Turn> {
        let client = &self.lock.client;
        let lost = Latch::new();
        let states = client.wake_on_state_change(&lost);
        let opts = self.opts(node.session);
        let own_watch = self.own_watch.take().filter(|(_, latch)| !latch.is_open());
        let (czxid, watch) = match (node.czxid, &self.mark, own_watch) {
            // The watch on the lock path tells of the node's deletion.
            (Some(czxid), Some(mark), _) => {
                mark.forward_to(&lost);
                (czxid, None)
            }
            // So does the watch on its node set while it waited.
            (Some(czxid), None, Some((watch, latch))) => {
                latch.forward_to(&lost);
                (czxid, Some(watch))
            }
            (Some(czxid), None, None) => (
                czxid,
                Some(client.watch_data_unawaited(&node.path, &lost.chained(), opts)),
            ),
            (None, _, _) => match client.watch_data(&node.path, &lost.chained(), opts) {
                Ok((_, stat, watch)) => (stat.czxid, Some(watch)),
                Err(Error::NoNode { .. } | Error::SessionExpired) => return Ok(Turn::Gone),
                Err(e) => return Err(e),
            },
        };
        if lost.is_open() || !client.is_live(node.session) || !client.state().is_connected() {
            return Ok(Turn::Again);
        }
        let mark = if watch.is_none() { self.mark.take() } else { None };
        Ok(Turn::Ours(Box::new(Acquired {
            node: node.clone(),
            czxid: self.driver.czxid().unwrap_or(czxid),
            node_czxid: czxid,
            lost,
            _watch: watch,
            _mark: mark,
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
