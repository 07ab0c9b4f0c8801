//! [`Hold`]: a thread's hold of a lock, shared by the guards of that
//! thread; [`Holds`]: the hold of each thread of a participant;
//! [`Acquisition`]: one guard's share, which the public guards wrap.

use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::ThreadId;
use std::time::Instant;

use crossbeam_channel::Receiver;

use super::acquire::Acquired;
use super::release::{Leftover, Nodes};
use super::Participant;
use crate::client::{DataWatch, Opts, Session, WakerGuard, ZkClient, TRY_WAIT};
use crate::error::{Error, Result};
use crate::sync::Latch;

/// A thread's hold of the lock: its node, and how many guards of that
/// thread share it (Curator's `lockCount`).
///
/// The fencing token is the node's creation zxid, never its sequence: the
/// server gives every transaction a larger zxid than the one before, so a
/// holder's token is larger than every earlier holder's, also when the lock
/// path was deleted and created again in between (which starts the
/// sequences over).
pub(crate) struct Hold {
    acquired: Acquired,
    /// The watch a re-check set, once the first loss latch opened for a
    /// disconnection the session survived; it stands for the hold since.
    renewed: parking_lot::Mutex<Option<Renewal>>,
    /// What the holder is called in the log.
    recipe: &'static str,
    /// The guards alive.
    count: AtomicUsize,
}

/// What a successful re-check set: a new loss latch, opened as the first
/// one is (the node changed or went, the connection changed), and what
/// opens it.
struct Renewal {
    lost: Latch,
    _watch: DataWatch,
    _states: WakerGuard,
}

impl Hold {
    /// The fencing token: the node's creation zxid (never negative), or the
    /// write node's for a read node in its place.
    pub(crate) fn token(&self) -> u64 {
        u64::try_from(self.acquired.czxid).unwrap_or(0)
    }

    /// Whether the hold is still certain: nothing opened its loss latch, and
    /// its session is live and vouched for (the server cannot have expired it).
    pub(crate) fn is_held(&self, client: &ZkClient) -> bool {
        !self.loss_latch().is_open() && client.holds_session(self.acquired.node.session)
    }

    /// The latch that opens when the hold is lost, in doubt or ended: the
    /// one a re-check set, if any, else the first.
    fn loss_latch(&self) -> Latch {
        match &*self.renewed.lock() {
            Some(renewal) => renewal.lost.clone(),
            None => self.acquired.lost.clone(),
        }
    }

    /// Confirms a hold in doubt, as [`is_held`](Self::is_held) says it is
    /// after a disconnection: its node still exists, in the session that
    /// created it (the same node: the same creation zxid), unchanged (its
    /// data never set since its creation), and the client is
    /// connected in that session. Then a new watch on the node tells of its
    /// loss from now on, and the hold is certain again (`true`). `false` if
    /// the node or its session is gone, or the connection dropped again
    /// meanwhile. A hold that is certain is left as it is (`true`).
    pub(crate) fn recheck(&self, client: &ZkClient, deadline: Instant) -> Result<bool> {
        if self.is_held(client) {
            return Ok(true);
        }
        let session = self.acquired.node.session;
        if !client.is_live(session) {
            return Ok(false);
        }
        let lost = Latch::new();
        let states = client.wake_on_state_change(&lost);
        let opts = Opts::new().fenced(session).until(Some(deadline));
        let watch = match client.watch_data(&self.acquired.node.path, &lost.chained(), opts) {
            // The node it held (created at the same zxid), never changed since.
            Ok((_, stat, watch)) if stat.czxid == self.acquired.node_czxid && stat.mzxid == stat.czxid => watch,
            // Another node at its path, or its node changed by another.
            Ok(_) => return Ok(false),
            Err(Error::NoNode { .. } | Error::SessionExpired) => return Ok(false),
            Err(e) => return Err(e),
        };
        if lost.is_open() || !client.is_live(session) || !client.state().is_connected() {
            return Ok(false);
        }
        *self.renewed.lock() = Some(Renewal {
            lost,
            _watch: watch,
            _states: states,
        });
        log::info!(
            "{}: the hold of {} is confirmed after a disconnection",
            self.recipe,
            self.acquired.node.path
        );
        Ok(self.is_held(client))
    }

    /// Whether the session the node was created in still lives.
    pub(crate) fn is_in_live_session(&self, client: &ZkClient) -> bool {
        client.is_live(self.acquired.node.session)
    }

    /// The session the node was created in.
    pub(crate) fn session(&self) -> Session {
        self.acquired.node.session
    }

    /// The fencing token as the server gave it (a creation zxid).
    pub(crate) fn czxid(&self) -> i64 {
        self.acquired.czxid
    }

    /// A channel that disconnects when the hold is lost, in doubt or ended.
    pub(crate) fn lost(&self) -> Receiver<()> {
        self.loss_latch().receiver()
    }

    /// Opens `latch` when the hold is lost, in doubt or ended (at once if
    /// it is), on the thread that learns of it, which only signals.
    pub(crate) fn forward_loss_to(&self, latch: &Latch) {
        self.loss_latch().forward_to(latch);
    }

    /// The path of the hold's node.
    pub(crate) fn node(&self) -> &str {
        &self.acquired.node.path
    }

    /// The number of guards alive.
    pub(crate) fn count(&self) -> usize {
        self.count.load(Ordering::Relaxed)
    }

    /// Ends the hold: tells those waiting for its loss, and deletes its node
    /// (in the background if the server cannot be asked now).
    pub(super) fn end(&self, lock: &Participant) {
        self.end_by(lock, Instant::now() + TRY_WAIT);
    }

    /// Ends the hold as [`end`](Self::end) does, waiting for the server
    /// until `deadline` at most (a passed one: not at all).
    pub(super) fn end_by(&self, lock: &Participant, deadline: Instant) {
        self.acquired.lost.open();
        if let Some(renewal) = &*self.renewed.lock() {
            renewal.lost.open();
        }
        let node = &self.acquired.node;
        log::debug!("{} {}: releasing {}", self.recipe, lock.path, node.path);
        Leftover {
            lock_path: lock.path.clone(),
            session: node.session,
            nodes: Nodes::Known(node.path.clone()),
        }
        .release(&lock.client, Some(deadline));
    }
}

/// The hold of each thread that holds a lock (by one driver) for one
/// participant.
#[derive(Default)]
pub(crate) struct Holds(parking_lot::Mutex<HashMap<ThreadId, Arc<Hold>>>);

impl Holds {
    /// The calling thread's hold, if it has one.
    pub(crate) fn of_current_thread(&self) -> Option<Arc<Hold>> {
        self.0.lock().get(&std::thread::current().id()).cloned()
    }

    /// The calling thread's hold with one guard more, if it has one.
    pub(super) fn reenter(&self) -> Option<Arc<Hold>> {
        let holds = self.0.lock();
        let hold = holds.get(&std::thread::current().id())?;
        hold.count.fetch_add(1, Ordering::Relaxed);
        Some(Arc::clone(hold))
    }

    /// Records what the calling thread acquired as its hold, with one guard.
    pub(super) fn insert(&self, acquired: Acquired, recipe: &'static str) -> Arc<Hold> {
        let hold = Arc::new(Hold {
            acquired,
            renewed: parking_lot::Mutex::new(None),
            recipe,
            count: AtomicUsize::new(1),
        });
        self.0.lock().insert(std::thread::current().id(), Arc::clone(&hold));
        hold
    }

    /// Drops one guard of `hold`; true if it was the last (the hold is then
    /// no longer the thread's).
    pub(super) fn release(&self, hold: &Arc<Hold>) -> bool {
        let mut holds = self.0.lock();
        if hold.count.fetch_sub(1, Ordering::Relaxed) > 1 {
            return false;
        }
        holds.retain(|_, held| !Arc::ptr_eq(held, hold));
        true
    }

    /// Whether the calling thread has a hold.
    pub(crate) fn held_by_current_thread(&self) -> bool {
        self.0.lock().contains_key(&std::thread::current().id())
    }

    /// How many threads have a hold.
    pub(crate) fn len(&self) -> usize {
        self.0.lock().len()
    }
}

/// One acquisition of a thread's hold: one guard's share of it, given back
/// when dropped (the last share ends the hold).
///
/// It belongs to the thread that acquired it (it is not `Send`), as
/// Curator's locks belong to their thread.
pub(crate) struct Acquisition<'a> {
    lock: &'a Participant,
    holds: &'a Holds,
    hold: Arc<Hold>,
    /// How long its release may wait for the server, if not the usual.
    release_by: Option<Instant>,
    /// Not `Send`: the hold belongs to the thread that acquired it.
    _thread: PhantomData<std::sync::MutexGuard<'static, ()>>,
}

impl<'a> Acquisition<'a> {
    pub(crate) fn new(lock: &'a Participant, holds: &'a Holds, hold: Arc<Hold>) -> Acquisition<'a> {
        Acquisition {
            lock,
            holds,
            hold,
            release_by: None,
            _thread: PhantomData,
        }
    }

    /// The hold shared.
    pub(crate) fn hold(&self) -> &Hold {
        &self.hold
    }

    /// Drops this share, waiting for the server until `deadline` at most
    /// if it ends the hold.
    pub(crate) fn release_by(mut self, deadline: Instant) {
        self.release_by = Some(deadline);
    }

    /// Whether the hold is still certain (see [`Hold::is_held`]).
    pub(crate) fn is_held(&self) -> bool {
        self.hold.is_held(&self.lock.client)
    }

    /// Confirms a hold in doubt (see [`Hold::recheck`]), waiting for the
    /// server within the client's request timeout.
    pub(crate) fn recheck(&self) -> Result<bool> {
        let client = &self.lock.client;
        self.hold.recheck(client, Instant::now() + client.request_timeout())
    }

    /// Writes the `Debug` form of the guard named `name` that wraps it.
    pub(crate) fn debug(&self, name: &str, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct(name)
            .field("node", &self.hold.node())
            .field("token", &self.hold.token())
            .field("count", &self.hold.count())
            .field("is_held", &self.is_held())
            .finish()
    }
}

impl Drop for Acquisition<'_> {
    fn drop(&mut self) {
        self.lock.release(self.holds, &self.hold, self.release_by);
    }
}
