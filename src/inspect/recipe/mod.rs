//! Coordination-recipe paths: which of Curator's recipes (5.x, whose
//! layouts the crate's recipes share) a path's children belong to, and who
//! holds, leads or waits among them.
//!
//! The layouts:
//! - **Mutex** (Curator's `InterProcessMutex` and `LeaderSelector`, the
//!   crate's [`Mutex`](crate::recipes::Mutex)): `_c_<uuid>-lock-<seq>`
//!   nodes; the first `max_leases` (1 unless the owners said otherwise) hold.
//! - **Read-write lock** (`InterProcessReadWriteLock`,
//!   [`RwLock`](crate::recipes::RwLock)): `…__READ__<seq>` and
//!   `…__WRIT__<seq>` nodes in one line by sequence; a writer holds when it is
//!   first, a reader when no writer comes before it.
//! - **Semaphore** (`InterProcessSemaphoreV2`): lease nodes
//!   `_c_<uuid>-lease-<seq>` under `<path>/leases`, the first `max_leases`
//!   holding, and a mutex at `<path>/locks` that one acquirer at a time holds
//!   while it takes a lease. Curator does not order the leases, it counts
//!   them; but an acquirer waits for a lease holding `locks`, so no lease
//!   node is created after a waiting one: the waiter, if any, is the last.
//! - **Leader latch** (`LeaderLatch`, [`LeaderLatch`](crate::recipes::LeaderLatch)):
//!   `_c_<uuid>-latch-<seq>` nodes; the first leads.
//! - **Barrier** (`DistributedBarrier`, [`Barrier`](crate::recipes::Barrier)):
//!   the path's node itself; set while it exists.
//! - **Double barrier** (`DistributedDoubleBarrier`,
//!   [`DoubleBarrier`](crate::recipes::DoubleBarrier)): one ephemeral node per
//!   member, named by its id, and the persistent node `ready`.
//!
//! Every child is placed as the recipe itself orders its path's children:
//! a child whose name the recipe does not give ([`Role::Foreign`]) still
//! takes its place in the line, as it does in Curator's.

use std::fmt;
use std::str::FromStr;

use crate::naming::is_uuid;
use crate::recipes::names::{LATCH, LOCK, READ, WRITE};
pub use line::{arrange, ChildNode, Placed};

mod line;

/// The lock name of `InterProcessSemaphoreV2`'s lease nodes.
const LEASE: &str = "lease-";

/// The name of a double barrier's node that lets its members in.
pub const READY: &str = "ready";

/// The child of a semaphore's path holding its lease nodes.
pub const SEMAPHORE_LEASES: &str = "leases";

/// The child of a semaphore's path holding its mutex.
pub const SEMAPHORE_LOCKS: &str = "locks";

/// Curator's mark of a protected name.
const PROTECTED_MARK: &str = "_c_";

/// The coordination recipes whose paths can be shown.
///
/// ```
/// use zk_queue::inspect::RecipeKind;
///
/// assert_eq!(RecipeKind::detect(&["_c_0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f0-lock-0000000000"]), Some(RecipeKind::Mutex));
/// assert_eq!(RecipeKind::detect(&["x-__WRIT__0000000001", "y-__READ__0000000000"]), Some(RecipeKind::RwLock));
/// assert_eq!(RecipeKind::detect(&["leases", "locks"]), Some(RecipeKind::Semaphore));
/// assert_eq!(RecipeKind::detect(&["member-1", "ready"]), Some(RecipeKind::DoubleBarrier));
/// assert_eq!(RecipeKind::detect(&["config"]), None);
/// assert_eq!("leader-latch".parse::<RecipeKind>(), Ok(RecipeKind::LeaderLatch));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RecipeKind {
    /// `InterProcessMutex` and `LeaderSelector`: `lock-` nodes.
    Mutex,
    /// `InterProcessReadWriteLock`: `__READ__` and `__WRIT__` nodes.
    RwLock,
    /// `InterProcessSemaphoreV2`: `leases` and `locks` children.
    Semaphore,
    /// `LeaderLatch`: `latch-` nodes.
    LeaderLatch,
    /// `DistributedBarrier`: the path's node itself.
    Barrier,
    /// `DistributedDoubleBarrier`: member nodes and `ready`.
    DoubleBarrier,
}

/// Every kind, in the order of their names in [`RecipeKind::NAMES`].
const KINDS: [RecipeKind; 6] = [
    RecipeKind::Mutex,
    RecipeKind::RwLock,
    RecipeKind::Semaphore,
    RecipeKind::LeaderLatch,
    RecipeKind::Barrier,
    RecipeKind::DoubleBarrier,
];

impl RecipeKind {
    /// The kinds' names, as [`Display`](fmt::Display) writes and
    /// [`FromStr`] reads them.
    ///
    /// ```
    /// assert_eq!(zk_queue::inspect::RecipeKind::NAMES[0], "mutex");
    /// ```
    pub const NAMES: [&'static str; 6] = [
        "mutex",
        "rwlock",
        "semaphore",
        "leader-latch",
        "barrier",
        "double-barrier",
    ];

    /// The kind the child names `children` of a path say, or `None` if they
    /// say none (no children at all, too: an empty path may be a barrier or
    /// a lock nobody holds).
    ///
    /// A semaphore has a `leases` or `locks` child; otherwise the lock name
    /// most children carry decides (`__READ__`/`__WRIT__`, `latch-`,
    /// `lock-`); otherwise a `ready` child, or children that are all UUIDs
    /// (the members' default ids), make a double barrier.
    ///
    /// ```
    /// use zk_queue::inspect::RecipeKind;
    /// let members = ["0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f0"];
    /// assert_eq!(RecipeKind::detect(&members), Some(RecipeKind::DoubleBarrier));
    /// assert_eq!(RecipeKind::detect::<&str>(&[]), None);
    /// ```
    pub fn detect<S: AsRef<str>>(children: &[S]) -> Option<RecipeKind> {
        let names: Vec<&str> = children.iter().map(AsRef::as_ref).collect();
        if names.is_empty() {
            return None;
        }
        if names.iter().any(|n| *n == SEMAPHORE_LEASES || *n == SEMAPHORE_LOCKS) {
            return Some(RecipeKind::Semaphore);
        }
        let count = |lock_names: &[&str]| {
            names
                .iter()
                .filter(|n| lock_names.iter().any(|l| line::sequence_after(n, l).is_some()))
                .count()
        };
        let counts = [
            (count(&[READ, WRITE]), RecipeKind::RwLock),
            (count(&[LATCH]), RecipeKind::LeaderLatch),
            (count(&[LOCK]), RecipeKind::Mutex),
        ];
        if let Some((_, kind)) = counts.iter().filter(|(n, _)| *n > 0).max_by_key(|(n, _)| *n) {
            return Some(*kind);
        }
        if names.contains(&READY) || names.iter().all(|n| is_uuid(n)) {
            return Some(RecipeKind::DoubleBarrier);
        }
        None
    }
}

impl fmt::Display for RecipeKind {
    /// The kind's name: `mutex`, `rwlock`, `semaphore`, `leader-latch`,
    /// `barrier` or `double-barrier`.
    ///
    /// ```
    /// assert_eq!(zk_queue::inspect::RecipeKind::DoubleBarrier.to_string(), "double-barrier");
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = KINDS.iter().position(|k| k == self).unwrap_or_default();
        f.write_str(RecipeKind::NAMES[at])
    }
}

impl FromStr for RecipeKind {
    type Err = String;

    /// Reads a kind's name (see [`RecipeKind::NAMES`]).
    ///
    /// ```
    /// use zk_queue::inspect::RecipeKind;
    /// assert_eq!("rwlock".parse::<RecipeKind>(), Ok(RecipeKind::RwLock));
    /// assert!("queue".parse::<RecipeKind>().is_err());
    /// ```
    fn from_str(text: &str) -> Result<RecipeKind, String> {
        RecipeKind::NAMES
            .iter()
            .position(|name| *name == text)
            .map(|at| KINDS[at])
            .ok_or_else(|| format!("unknown recipe kind {text:?} (one of {})", RecipeKind::NAMES.join(", ")))
    }
}

/// What a node is to its recipe.
///
/// ```
/// assert_eq!(zk_queue::inspect::Role::Holder.to_string(), "holder");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Role {
    /// Holds the lock or a lease.
    Holder,
    /// Waits for the lock, a lease or leadership.
    Waiter,
    /// Leads (a leader latch's first).
    Leader,
    /// A lease node of a semaphore whose lease count was not given: it holds
    /// a lease or is being granted one.
    Lease,
    /// A member of a double barrier.
    Member,
    /// A double barrier's `ready` node.
    Ready,
    /// A child the recipe does not name; it still takes its place in the
    /// line, as in the recipe.
    Foreign,
}

impl fmt::Display for Role {
    /// The role in lowercase.
    ///
    /// ```
    /// assert_eq!(zk_queue::inspect::Role::Foreign.to_string(), "foreign");
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Role::Holder => "holder",
            Role::Waiter => "waiter",
            Role::Leader => "leader",
            Role::Lease => "lease",
            Role::Member => "member",
            Role::Ready => "ready",
            Role::Foreign => "foreign",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detection_by_the_most_common_lock_name() {
        assert_eq!(
            RecipeKind::detect(&["a-lock-0000000001", "b-latch-0000000002", "c-latch-0000000003"]),
            Some(RecipeKind::LeaderLatch)
        );
        assert_eq!(RecipeKind::detect(&["a-lock-x"]), None);
        assert_eq!(RecipeKind::detect(&["member"]), None);
        for kind in KINDS {
            assert_eq!(kind.to_string().parse::<RecipeKind>(), Ok(kind));
        }
    }
}
