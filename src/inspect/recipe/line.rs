//! [`arrange`]: a recipe path's children placed in the recipe's own order,
//! with their roles.

use super::{RecipeKind, Role, LEASE, PROTECTED_MARK, READY};
use crate::client::Stat;
use crate::naming::is_uuid;
use crate::recipes::names::{sort_key, LATCH, LOCK, READ, WRITE};

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
pub(super) fn sequence_after(name: &str, lock_name: &str) -> Option<i64> {
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
        assert_eq!(protected_id("_c_0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f0lock-1"), None);
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
}
