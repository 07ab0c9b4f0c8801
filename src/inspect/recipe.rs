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
//!   while it takes a lease.
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

use crate::client::Stat;
use crate::naming::is_uuid;
use crate::recipes::names::{sort_key, LATCH, LOCK, READ, WRITE};

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
                .filter(|n| lock_names.iter().any(|l| sequence_after(n, l).is_some()))
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

/// One child of a recipe's path, as read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChildNode {
    /// The node name.
    pub name: String,
    /// Its data.
    pub data: Vec<u8>,
    /// Its stat.
    pub stat: Stat,
}

/// A child placed in its recipe's line.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Placed {
    /// The child as read.
    pub node: ChildNode,
    /// What it is to the recipe.
    pub role: Role,
    /// Its place in the line, 1 for the first; for a double barrier, the
    /// order members entered (by creation), `ready` last.
    pub position: usize,
    /// `read` or `write` for a read-write lock's nodes.
    pub mode: Option<&'static str>,
    /// The UUID of a protected name `_c_<uuid>-…`.
    pub protected_id: Option<String>,
    /// The sequence the server appended, if the name ends in one after its
    /// lock name.
    pub sequence: Option<i64>,
    /// For a double barrier's `ready`: no member present entered before it
    /// was created (it is left from an earlier round, or its round's last
    /// member is about to delete it).
    pub stale: bool,
}

/// Places the children `nodes` of a path as the recipe `kind` orders them,
/// with their roles; `max_leases` is how many may hold a mutex or a
/// semaphore at once (the owners know it, the path does not: a mutex's
/// default is 1, a semaphore's lease nodes are [`Role::Lease`] without it).
///
/// For [`RecipeKind::Semaphore`], `nodes` are the children of its `leases`
/// child (its `locks` child is a [`RecipeKind::Mutex`]); a
/// [`RecipeKind::Barrier`]'s children are all foreign.
///
/// ```
/// use zk_queue::client::Stat;
/// use zk_queue::inspect::{arrange, ChildNode, RecipeKind, Role};
///
/// let node = |name: &str| ChildNode { name: name.into(), data: vec![], stat: Stat::default() };
/// let line = arrange(
///     RecipeKind::RwLock,
///     vec![node("b-__WRIT__0000000002"), node("a-__READ__0000000001"), node("c-__READ__0000000003")],
///     None,
/// );
/// let roles: Vec<(&str, Role)> = line.iter().map(|p| (p.node.name.as_str(), p.role)).collect();
/// assert_eq!(roles, [
///     ("a-__READ__0000000001", Role::Holder),
///     ("b-__WRIT__0000000002", Role::Waiter),
///     ("c-__READ__0000000003", Role::Waiter),
/// ]);
/// ```
pub fn arrange(kind: RecipeKind, nodes: Vec<ChildNode>, max_leases: Option<usize>) -> Vec<Placed> {
    match kind {
        RecipeKind::Mutex => in_line(nodes, &[LOCK], |at, _, _| {
            if at < max_leases.unwrap_or(1) {
                Role::Holder
            } else {
                Role::Waiter
            }
        }),
        RecipeKind::Semaphore => in_line(nodes, &[LEASE], |at, _, _| match max_leases {
            None => Role::Lease,
            Some(n) if at < n => Role::Holder,
            Some(_) => Role::Waiter,
        }),
        RecipeKind::LeaderLatch => in_line(
            nodes,
            &[LATCH],
            |at, _, _| {
                if at == 0 {
                    Role::Leader
                } else {
                    Role::Waiter
                }
            },
        ),
        RecipeKind::RwLock => in_line(nodes, &[READ, WRITE], |at, writer_before, lock_name| {
            let holds = if lock_name == WRITE { at == 0 } else { !writer_before };
            if holds {
                Role::Holder
            } else {
                Role::Waiter
            }
        }),
        RecipeKind::DoubleBarrier => double_barrier(nodes),
        RecipeKind::Barrier => nodes
            .into_iter()
            .enumerate()
            .map(|(at, node)| placed(node, Role::Foreign, at + 1, None))
            .collect(),
    }
}

/// Sorts `nodes` by what follows their last lock name (as the recipes do)
/// and asks `role_of(index, whether a writer comes before, lock name)` for
/// each named one.
fn in_line(
    nodes: Vec<ChildNode>,
    lock_names: &[&'static str],
    role_of: impl Fn(usize, bool, &str) -> Role,
) -> Vec<Placed> {
    let mut nodes = nodes;
    // Stable, as Java's sort is, for names whose keys are equal.
    nodes.sort_by(|a, b| sort_key(&a.name, lock_names).cmp(sort_key(&b.name, lock_names)));
    let mut writer_before = false;
    let mut out = Vec::with_capacity(nodes.len());
    for (at, node) in nodes.into_iter().enumerate() {
        let lock_name = lock_names
            .iter()
            .copied()
            .find(|l| sequence_after(&node.name, l).is_some());
        let mut one = match lock_name {
            Some(lock_name) => {
                let role = role_of(at, writer_before, lock_name);
                let mut one = placed(node, role, at + 1, Some(lock_name));
                if lock_names.len() > 1 {
                    one.mode = Some(if lock_name == WRITE { "write" } else { "read" });
                }
                one
            }
            None => placed(node, Role::Foreign, at + 1, None),
        };
        // Curator's readers see a writer in any name containing its lock name.
        writer_before |= lock_names.contains(&WRITE) && one.node.name.contains(WRITE);
        one.position = at + 1;
        out.push(one);
    }
    out
}

/// Members in the order they entered (creation), then `ready`.
fn double_barrier(nodes: Vec<ChildNode>) -> Vec<Placed> {
    let (mut members, ready): (Vec<ChildNode>, Vec<ChildNode>) = nodes.into_iter().partition(|n| n.name != READY);
    members.sort_by_key(|n| n.stat.czxid);
    let first_member = members.first().map(|m| m.stat.czxid);
    let mut out: Vec<Placed> = members
        .into_iter()
        .enumerate()
        .map(|(at, node)| placed(node, Role::Member, at + 1, None))
        .collect();
    for node in ready {
        let stale = first_member.is_none_or(|first| first > node.stat.czxid);
        let mut one = placed(node, Role::Ready, out.len() + 1, None);
        one.stale = stale;
        out.push(one);
    }
    out
}

fn placed(node: ChildNode, role: Role, position: usize, lock_name: Option<&str>) -> Placed {
    Placed {
        protected_id: protected_id(&node.name).map(str::to_owned),
        sequence: lock_name.and_then(|l| sequence_after(&node.name, l)),
        node,
        role,
        position,
        mode: None,
        stale: false,
    }
}

/// The UUID of a protected name `_c_<uuid>-…`.
fn protected_id(name: &str) -> Option<&str> {
    let uuid = name.strip_prefix(PROTECTED_MARK)?.get(..36)?;
    (is_uuid(uuid) && name[PROTECTED_MARK.len() + 36..].starts_with('-')).then_some(uuid)
}

/// The sequence after the last `lock_name` in `name`, if what follows it
/// is one (digits, a sign allowed: the counter wraps to negative).
fn sequence_after(name: &str, lock_name: &str) -> Option<i64> {
    let at = name.rfind(lock_name)?;
    let tail = &name[at + lock_name.len()..];
    let digits = tail.strip_prefix('-').unwrap_or(tail);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    tail.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, czxid: i64) -> ChildNode {
        ChildNode {
            name: name.to_owned(),
            data: Vec::new(),
            stat: Stat {
                czxid,
                ..Stat::default()
            },
        }
    }

    fn roles(line: &[Placed]) -> Vec<(String, Role, usize)> {
        line.iter().map(|p| (p.node.name.clone(), p.role, p.position)).collect()
    }

    const U: &str = "_c_0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f0-";

    #[test]
    fn a_mutex_line_holds_its_first_max_leases_and_counts_foreign_names_in_place() {
        let names = [
            format!("{U}lock-0000000003"),
            format!("{U}lock-0000000001"),
            "000".to_owned(),
        ];
        let line = arrange(RecipeKind::Mutex, names.iter().map(|n| node(n, 0)).collect(), None);
        let got = roles(&line);
        assert_eq!(got[0], ("000".to_owned(), Role::Foreign, 1));
        assert_eq!(
            got[1],
            (names[1].clone(), Role::Waiter, 2),
            "Curator counts the foreign name first"
        );
        let line = arrange(RecipeKind::Mutex, names.iter().map(|n| node(n, 0)).collect(), Some(2));
        assert_eq!(line[1].role, Role::Holder);
        assert_eq!(line[1].protected_id.as_deref(), Some(&U[3..39]));
        assert_eq!(line[1].sequence, Some(1));
    }

    #[test]
    fn a_reader_holds_unless_a_writer_comes_before_it_and_a_writer_only_when_first() {
        let names = ["w-__WRIT__0000000000", "r-__READ__0000000001", "s-__READ__0000000002"];
        let line = arrange(RecipeKind::RwLock, names.iter().map(|n| node(n, 0)).collect(), None);
        let got: Vec<Role> = line.iter().map(|p| p.role).collect();
        assert_eq!(got, [Role::Holder, Role::Waiter, Role::Waiter]);
        assert_eq!(line[0].mode, Some("write"));
        assert_eq!(line[1].mode, Some("read"));
    }

    #[test]
    fn a_latch_is_led_by_its_lowest_sequence_across_the_sign_wrap_as_text() {
        let names = ["b-latch-0000000002", "a-latch-0000000010", "c-latch-0000000001"];
        let line = arrange(
            RecipeKind::LeaderLatch,
            names.iter().map(|n| node(n, 0)).collect(),
            None,
        );
        assert_eq!(line[0].node.name, "c-latch-0000000001");
        assert_eq!(line[0].role, Role::Leader);
        assert!(line[1..].iter().all(|p| p.role == Role::Waiter));
        assert_eq!(sequence_after("x-latch--2147483648", LATCH), Some(-2_147_483_648));
    }

    #[test]
    fn semaphore_leases_without_a_count_are_leases() {
        let names = ["a-lease-0000000000", "b-lease-0000000001"];
        let line = arrange(RecipeKind::Semaphore, names.iter().map(|n| node(n, 0)).collect(), None);
        assert!(line.iter().all(|p| p.role == Role::Lease));
        let line = arrange(
            RecipeKind::Semaphore,
            names.iter().map(|n| node(n, 0)).collect(),
            Some(1),
        );
        assert_eq!((line[0].role, line[1].role), (Role::Holder, Role::Waiter));
    }

    #[test]
    fn a_ready_created_before_every_member_is_stale() {
        let line = arrange(
            RecipeKind::DoubleBarrier,
            vec![node("ready", 5), node("m2", 7), node("m1", 6)],
            None,
        );
        assert_eq!(
            roles(&line),
            [
                ("m1".to_owned(), Role::Member, 1),
                ("m2".to_owned(), Role::Member, 2),
                ("ready".to_owned(), Role::Ready, 3)
            ]
        );
        assert!(line[2].stale);
        let line = arrange(
            RecipeKind::DoubleBarrier,
            vec![node("ready", 8), node("m1", 6), node("late", 9)],
            None,
        );
        assert!(!line[2].stale, "created after a member: its round's");
    }

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
        assert_eq!(protected_id("_c_0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f0lock-1"), None);
    }
}
