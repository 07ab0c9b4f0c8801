//! Which locks `zkq take` and `zkq purge` respect: the lock path given, or
//! else the one the queue's lock-safe consumers recorded, unless forced;
//! and the locks `zkq stats` reports, found the same way.

use std::collections::{BTreeMap, HashSet};

use clap::Args;
use serde::Serialize;
use zk_queue::admin::RawQueue;
use zk_queue::inspect::{Listing, SessionState, SessionSurvey};
use zk_queue::path::join as child;

use crate::common::{escaped, Context};
use crate::four_letter;

#[derive(Debug, Args)]
pub struct LockArgs {
    /// The lock path of the queue's lock-safe consumers: items they hold are
    /// left alone, and the items taken or deleted are locked first as they
    /// lock them. Default: the lock path the queue's consumers recorded on
    /// the queue node, if any (Curator's consumers record none).
    #[arg(long)]
    pub lock_path: Option<String>,
    /// Take or delete items whatever their locks: even an item a live
    /// consumer holds.
    #[arg(long, conflicts_with = "lock_path")]
    pub force: bool,
}

impl LockArgs {
    /// `queue`, respecting the locks these arguments say.
    pub fn apply(&self, queue: RawQueue) -> anyhow::Result<RawQueue> {
        if self.force {
            return Ok(queue);
        }
        if let Some(lock_path) = &self.lock_path {
            return Ok(queue.lock_path(lock_path)?);
        }
        match queue.recorded_lock_path() {
            Ok(Some(lock_path)) => {
                eprintln!(
                    "zkq: leaving alone items held under {lock_path}, the lock path the queue's consumers recorded (--force to ignore)"
                );
                Ok(queue.lock_path(&lock_path)?)
            }
            Ok(None) | Err(zk_queue::Error::NoNode { .. }) => Ok(queue),
            Err(e) => Err(e.into()),
        }
    }
}

/// The locks under a queue's lock path, as `zkq stats` shows them.
#[derive(Serialize)]
pub struct LockReport {
    /// The lock path looked at.
    pub lock_path: String,
    /// Whether it is the one the queue's consumers recorded (else given).
    pub lock_path_recorded: bool,
    /// Lock nodes under it.
    pub locks: usize,
    /// Each lock's data (its holder's id) as text, by lock name (the text
    /// output escapes its control characters, as `peek` shows items).
    pub lock_owners: BTreeMap<String, String>,
    /// Each lock: its session and why it is stale, if it is.
    pub lock_details: Vec<LockDetail>,
    /// Locks flagged stale.
    pub stale_locks: usize,
    /// How the sessions were learned (four-letter words), if any lock is
    /// ephemeral.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sessions: Option<String>,
}

/// One lock node.
#[derive(Serialize)]
pub struct LockDetail {
    /// The lock's name: the name of the item it locks.
    pub name: String,
    /// The owning session, `0x…`; absent for a persistent node.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// `connected`, `disconnected`, `gone` or `unknown`; absent for a
    /// persistent node.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_state: Option<String>,
    /// Whether the item it locks is still in the queue.
    pub item_present: bool,
    /// Why the lock is stale: `item gone`, `session gone`, `persistent`
    /// (no session will ever release it); absent if it is not.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stale: Vec<&'static str>,
}

impl LockReport {
    /// Prints the report as text, each line after `indent`.
    pub fn print(&self, indent: &str) {
        let how = if self.lock_path_recorded {
            "recorded by the queue's consumers"
        } else {
            "given"
        };
        println!("{indent}lock path: {} ({how})", self.lock_path);
        println!("{indent}locks: {}", self.locks);
        for detail in &self.lock_details {
            let owner = self
                .lock_owners
                .get(&detail.name)
                .map_or(String::new(), |o| escaped(o.as_bytes()));
            let mut line = format!("{indent}  {}: {owner}", detail.name);
            if let (Some(session), Some(state)) = (&detail.session, &detail.session_state) {
                line += &format!("\tsession={session}({state})");
            }
            if !detail.stale.is_empty() {
                line += &format!("\tstale: {}", detail.stale.join(", "));
            }
            println!("{line}");
        }
        println!("{indent}stale locks: {}", self.stale_locks);
        if let Some(sessions) = &self.sessions {
            println!("{indent}sessions: {sessions}");
        }
    }
}

/// The locks of the queue at `path` (listed as `listing`) under
/// `lock_path`, or else under the lock path its consumers recorded; `None`
/// if there is neither.
///
/// A lock is stale when the item it locks is gone from the queue, when its
/// session no longer exists (the leader's `dump` does not list the lock
/// node's ephemeral owner, asked after the locks were read), or when it is
/// a persistent node (no session's end removes it).
pub fn survey_locks(
    ctx: &Context,
    path: &str,
    lock_path: Option<&str>,
    listing: &Listing,
) -> anyhow::Result<Option<LockReport>> {
    let (lock_path, recorded) = match lock_path {
        Some(given) => (given.to_owned(), false),
        None => match RawQueue::new(&ctx.client, path).map(|queue| queue.recorded_lock_path()) {
            Ok(Ok(Some(recorded))) => (recorded, true),
            // A path the library refuses as a queue's records nothing.
            Ok(Ok(None) | Err(zk_queue::Error::NoNode { .. })) | Err(_) => return Ok(None),
            Ok(Err(e)) => return Err(e.into()),
        },
    };
    let mut names = match ctx.client.get_children(&lock_path) {
        Ok((names, _)) => names,
        Err(e) if e.is_no_node() => Vec::new(),
        Err(e) => return Err(e.into()),
    };
    names.sort();
    let mut owners = BTreeMap::new();
    let mut sessions = Vec::new();
    for name in names {
        match ctx.client.get_data(&child(&lock_path, &name)) {
            Ok((data, stat)) => {
                owners.insert(name.clone(), String::from_utf8_lossy(&data).into_owned());
                sessions.push((name, stat.ephemeral_owner));
            }
            Err(e) if e.is_no_node() => {}
            Err(e) => return Err(e.into()),
        }
    }
    let (survey, how) = if sessions.iter().any(|(_, owner)| *owner != 0) {
        let (survey, how) = four_letter::survey(&ctx.connect, ctx.timeout);
        (survey, Some(how))
    } else {
        (SessionSurvey::default(), None)
    };
    let present: HashSet<&str> = listing.items.iter().map(|i| i.name.as_str()).collect();
    let details: Vec<LockDetail> = sessions
        .into_iter()
        .map(|(name, owner)| {
            let state = survey.state(owner);
            let item_present = present.contains(name.as_str());
            let mut stale = Vec::new();
            if !item_present {
                stale.push("item gone");
            }
            match state {
                Some(SessionState::Gone) => stale.push("session gone"),
                None => stale.push("persistent"),
                Some(_) => {}
            }
            LockDetail {
                name,
                session: (owner != 0).then(|| format!("0x{owner:x}")),
                session_state: state.map(|s| s.to_string()),
                item_present,
                stale,
            }
        })
        .collect();
    Ok(Some(LockReport {
        lock_path,
        lock_path_recorded: recorded,
        locks: owners.len(),
        stale_locks: details.iter().filter(|d| !d.stale.is_empty()).count(),
        lock_owners: owners,
        lock_details: details,
        sessions: how,
    }))
}
