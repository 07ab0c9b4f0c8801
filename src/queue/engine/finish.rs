//! How a claimed item ends: acknowledged, requeued or moved to the dead-letter
//! path, each in one multi; and the lock that guards it.

use super::Control;
use crate::client::{CreateMode, Op, Opts, Session, Stat};
use crate::codec::{encode_frame, trailer};
use crate::error::{Error, Result};
use crate::naming::{split_item, QUEUE_PREFIX};
use crate::path;
use crate::queue::core::Core;
use crate::queue::stats::QueueCounters;

/// A consumer's lock on an item: the ephemeral node `<lock_path>/<item name>`
/// holding an owner token. Writes that end a claim are fenced three ways: the
/// lock must still be the node this consumer created (its creation zxid,
/// checked just before), at the same version (checked inside the multi), in
/// the same session (the multi is never retried in a newer one). A new
/// holder's lock at the same path also starts at version 0, so the version
/// alone would not tell them apart.
pub(super) struct Lock {
    path: String,
    version: i32,
    czxid: i64,
    session: Session,
}

impl Lock {
    /// The lock created at `path` with `stat`, in `session`.
    pub(super) fn created(path: String, stat: &Stat, session: Session) -> Lock {
        Lock {
            path,
            version: stat.version,
            czxid: stat.czxid,
            session,
        }
    }

    pub(super) fn path(&self) -> &str {
        &self.path
    }

    pub(super) fn czxid(&self) -> i64 {
        self.czxid
    }

    /// Whether the node found at this lock's path now (`None`: no node) is
    /// another holder's lock: then nothing of the claim may be touched.
    pub(super) fn replaced(&self, found: Option<&Stat>) -> bool {
        found.is_some_and(|stat| stat.czxid != self.czxid)
    }

    pub(super) fn session(&self) -> Session {
        self.session
    }

    /// The operations that end a claim on `item_path` at `item_version`.
    pub(super) fn acknowledge_ops(&self, item_path: &str, item_version: i32) -> Vec<Op> {
        vec![self.check(), Op::delete(item_path, Some(item_version)), self.delete()]
    }

    /// After a lock create whose outcome is unknown (its reply was lost): the
    /// lock is ours if it holds our token and our session is unchanged.
    pub(super) fn recover<T: Send + 'static>(
        core: &Core<T>,
        path: String,
        token: &[u8],
        session: Session,
    ) -> Result<Option<Lock>> {
        // The server reconnected to may not have applied the create yet.
        core.client.sync(&path, Opts::new().once())?;
        match core.client.get_data(&path) {
            Ok((data, stat)) if data == token && core.client.session() == session => {
                Ok(Some(Lock::created(path, &stat, session)))
            }
            Ok(_) | Err(Error::NoNode { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// A token naming this consumer's session and claim, stored in its locks.
    pub(super) fn token<T: Send + 'static>(core: &Core<T>) -> Vec<u8> {
        format!(
            "zk-queue {:x} {:016x}",
            core.client.session_id().unwrap_or_default(),
            fastrand::u64(..)
        )
        .into_bytes()
    }

    /// Deletes the lock if it is still ours. Returns whether the lock is
    /// settled (deleted, gone, another holder's, or gone with an expired
    /// session); `false` if it may still be ours.
    pub(super) fn release<T: Send + 'static>(&self, core: &Core<T>) -> bool {
        match core.client.exists(&self.path) {
            Ok(Some(stat)) if !self.replaced(Some(&stat)) => {}
            // Gone, or another holder's now.
            Ok(_) => return true,
            Err(e) => {
                log::debug!("cannot check lock {}: {e}", self.path);
                return false;
            }
        }
        match core
            .client
            .delete_with(&self.path, Some(self.version), Opts::new().fenced(self.session))
        {
            Ok(_) | Err(Error::NoNode { .. } | Error::SessionExpired) => true,
            // Still ours, at another version.
            Err(Error::BadVersion { .. }) => false,
            Err(e) => {
                log::debug!("cannot release lock {}: {e}", self.path);
                false
            }
        }
    }

    fn check(&self) -> Op {
        Op::check(&self.path, self.version)
    }

    fn delete(&self) -> Op {
        Op::delete(&self.path, Some(self.version))
    }
}

/// Puts the records not yet consumed back into the queue under the item's own
/// prefix (keeping its priority, delay or id), or moves them to the
/// dead-letter path once `attempts` reaches the limit.
pub(super) fn requeue<T: Send + 'static>(
    core: &Core<T>,
    control: &Control,
    name: &str,
    item_version: i32,
    lock: &Lock,
    remaining: &[&[u8]],
    attempts: u32,
) -> Result<()> {
    let mut data = encode_frame(remaining.iter().copied()).map_err(Error::encoding)?;
    trailer::append(&mut data, attempts);
    if core.options.max_attempts.is_some_and(|max| attempts >= max) {
        let reason = Error::AttemptsExhausted {
            path: path::join(&core.path, name),
            attempts,
        };
        return dead_letter(core, control, name, &data, item_version, Some(lock), reason);
    }
    let item_path = path::join(&core.path, name);
    let prefix = split_item(name).map_or(QUEUE_PREFIX, |(prefix, _)| prefix);
    let ops = [
        lock.check(),
        Op::delete(&item_path, Some(item_version)),
        Op::create_with_acl(
            path::join(&core.path, prefix),
            data,
            CreateMode::PersistentSequential,
            core.options.acl.clone(),
        ),
        lock.delete(),
    ];
    settle(core, &item_path, lock, &ops)?;
    QueueCounters::bump(&core.counters.requeued);
    log::warn!("requeued {item_path} after {attempts} failed attempt(s)");
    Ok(())
}

/// Moves an item that cannot be consumed to the dead-letter path as a plain
/// queue item, in one multi with its deletion; without a dead-letter path the
/// item is left in place, never deleted.
pub(super) fn dead_letter<T: Send + 'static>(
    core: &Core<T>,
    control: &Control,
    name: &str,
    data: &[u8],
    item_version: i32,
    lock: Option<&Lock>,
    reason: Error,
) -> Result<()> {
    let item_path = path::join(&core.path, name);
    let Some(dead_letters) = &core.options.dead_letter_path else {
        control.skip(name);
        if let Some(lock) = lock {
            // Kept for a later pass if it cannot be deleted now.
            super::let_go(core, control, name, lock);
        }
        log::error!("{item_path} cannot be consumed and is left in place (no dead-letter path): {reason}");
        core.tell_error(&reason);
        return Ok(());
    };
    let mut ops = Vec::with_capacity(4);
    ops.extend(lock.map(Lock::check));
    ops.push(Op::create_with_acl(
        path::join(dead_letters, QUEUE_PREFIX),
        data.to_vec(),
        CreateMode::PersistentSequential,
        core.options.acl.clone(),
    ));
    ops.push(Op::delete(&item_path, Some(item_version)));
    ops.extend(lock.map(Lock::delete));
    let create_index = usize::from(lock.is_some());
    let attempt = || match lock {
        Some(lock) => settle(core, &item_path, lock, &ops),
        None => core.client.multi(&ops).map(|_| ()),
    };
    let mut moved = attempt();
    if matches!(&moved, Err(Error::MultiFailed { index, source }) if *index == create_index && source.is_no_node()) {
        // The dead-letter node was deleted under the consumer: create it again.
        log::warn!("dead-letter path {dead_letters} is missing; creating it again");
        core.ensure_nodes()?;
        moved = attempt();
    }
    if moved.is_ok() {
        QueueCounters::bump(&core.counters.dead_lettered);
        log::warn!("moved {item_path} to {dead_letters}: {reason}");
        core.tell_error(&reason);
    }
    moved
}

/// What the result of a multi fenced on a lock (its first operation checks
/// the lock) says about the claim it ends: the one reading of it, for single
/// and batched acknowledges, requeues and dead-letter moves alike.
pub(super) enum Fenced {
    /// Applied.
    Applied,
    /// The lock check failed, or the session expired. The lease was lost,
    /// unless the item is already gone: then an earlier attempt of this very
    /// multi went through before its reply was lost. [`item_decides`] reads
    /// which.
    ItemDecides,
    /// Any other failure: the item changed or vanished under us (removed by
    /// id, say), or the request failed.
    Failed(Error),
}

impl Fenced {
    pub(super) fn of<R>(result: Result<R>) -> Fenced {
        match result {
            Ok(_) => Fenced::Applied,
            Err(Error::MultiFailed { index: 0, .. } | Error::SessionExpired) => Fenced::ItemDecides,
            Err(e) => Fenced::Failed(e),
        }
    }
}

/// After [`Fenced::ItemDecides`]: the item gone (`None`) means the claim was
/// settled; still there, the lease was lost (counted).
pub(super) fn item_decides<T>(core: &Core<T>, item_path: &str, item: Option<Stat>) -> Result<()> {
    match item {
        None => Ok(()),
        Some(_) => Err(lease_lost(core, item_path)),
    }
}

/// A lost lease on `item_path`, counted.
pub(super) fn lease_lost<T>(core: &Core<T>, item_path: &str) -> Error {
    QueueCounters::bump(&core.counters.lease_lost);
    Error::LeaseLost {
        path: item_path.to_owned(),
    }
}

/// Runs a fenced multi that ends a claim, unless the lock was replaced by
/// another holder's (then nothing of theirs is touched).
fn settle<T: Send + 'static>(core: &Core<T>, item_path: &str, lock: &Lock, ops: &[Op]) -> Result<()> {
    if lock.replaced(core.client.exists(&lock.path)?.as_ref()) {
        return Err(lease_lost(core, item_path));
    }
    match Fenced::of(core.client.multi_with(ops, Opts::new().fenced(lock.session))) {
        Fenced::Applied => Ok(()),
        Fenced::ItemDecides => item_decides(core, item_path, core.client.exists(item_path)?),
        // The caller lets the lease go for another try.
        Fenced::Failed(e) => Err(e),
    }
}
