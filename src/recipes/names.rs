//! The node names Curator's coordination recipes share: its `LeaderLatch`
//! (`latch-`) and its locks (`lock-`).
//!
//! Each participant is an `EPHEMERAL_SEQUENTIAL` child of the recipe's path
//! named `_c_<UUID>-<lock name><sequence>`: Curator's protected name
//! (`ProtectedUtils`), whose random UUID lets a participant find its node
//! again after a create whose reply was lost. Participants are ordered by
//! what follows the last lock name in their names, compared as text
//! (Curator's `StandardLockInternalsDriver.fixForSorting`); the first leads,
//! or holds the lock.

use crate::naming::random_uuid;

/// The lock name of Curator's `LeaderLatch` participants.
pub(crate) const LATCH: &str = "latch-";

/// The lock name of Curator's `InterProcessMutex` (and of the locks and
/// semaphores built on it).
pub(crate) const LOCK: &str = "lock-";

/// Curator's mark of a protected name.
const PROTECTED_MARK: &str = "_c_";

/// The start of a new participant's node names, `_c_<random UUID>-`: no
/// other participant's name starts with it.
pub(crate) fn protected_prefix() -> String {
    format!("{PROTECTED_MARK}{}-", random_uuid())
}

/// The name to create a participant's node with (the server appends the
/// sequence).
pub(crate) fn node_name(protected_prefix: &str, lock_name: &str) -> String {
    format!("{protected_prefix}{lock_name}")
}

/// What a participant's place in the order is decided by: its name after
/// the last `lock_name`, or the whole name if it has none.
pub(crate) fn sort_key<'a>(name: &'a str, lock_name: &str) -> &'a str {
    match name.rfind(lock_name) {
        Some(at) => &name[at + lock_name.len()..],
        None => name,
    }
}

/// The children of a recipe's path in participant order, the first (who
/// leads or holds) first.
pub(crate) fn sorted(mut children: Vec<String>, lock_name: &str) -> Vec<String> {
    // Stable, as Java's sort is, for names whose keys are equal.
    children.sort_by(|a, b| sort_key(a, lock_name).cmp(sort_key(b, lock_name)));
    children
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_protected_prefix_is_curator_s_mark_and_a_new_uuid() {
        let prefix = protected_prefix();
        assert!(prefix.starts_with("_c_") && prefix.ends_with('-') && prefix.len() == 3 + 36 + 1);
        assert_ne!(protected_prefix(), prefix);
    }

    #[test]
    fn participants_are_ordered_by_what_follows_their_last_latch() {
        let children = vec![
            "_c_bbbb-latch-0000000002".to_owned(),
            "_c_aaaa-latch-0000000010".to_owned(),
            "_c_cccc-latch-0000000001".to_owned(),
            "latch-0000000003".to_owned(),
        ];
        assert_eq!(
            sorted(children, LATCH),
            vec![
                "_c_cccc-latch-0000000001",
                "_c_bbbb-latch-0000000002",
                "latch-0000000003",
                "_c_aaaa-latch-0000000010"
            ]
        );
        assert_eq!(sort_key("_c_x-latch-latch-0000000007", LATCH), "0000000007");
        assert_eq!(sort_key("foreign", LATCH), "foreign");
        assert_eq!(node_name("_c_x-", LATCH), "_c_x-latch-");
        assert_eq!(sort_key("_c_0f-lock-0000000042", LOCK), "0000000042");
        assert_eq!(node_name("_c_x-", LOCK), "_c_x-lock-");
    }
}
