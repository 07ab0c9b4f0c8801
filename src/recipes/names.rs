//! The node names Curator's coordination recipes share: its `LeaderLatch`
//! (`latch-`), its locks (`lock-`) and its read-write lock (`__READ__` and
//! `__WRIT__`).
//!
//! Each participant is an `EPHEMERAL_SEQUENTIAL` child of the recipe's path
//! named `_c_<UUID>-<lock name><sequence>`: Curator's protected name
//! (`ProtectedUtils`), whose random UUID lets a participant find its node
//! again after a create whose reply was lost. Participants are ordered by
//! what follows the last lock name in their names, compared as text
//! (Curator's `StandardLockInternalsDriver.fixForSorting`; the read-write
//! lock cuts at `__READ__`, then at `__WRIT__`); the first leads, or holds
//! the lock.

use crate::naming::random_uuid;

/// The lock name of Curator's `LeaderLatch` participants.
pub(crate) const LATCH: &str = "latch-";

/// The lock name of Curator's `InterProcessMutex` (and of the locks and
/// semaphores built on it).
pub(crate) const LOCK: &str = "lock-";

/// The lease name of Curator's `InterProcessSemaphoreV2` (its nodes under
/// `<path>/leases`, which it counts and never orders).
pub(crate) const LEASE: &str = "lease-";

/// The lock name of the readers of Curator's `InterProcessReadWriteLock`.
pub(crate) const READ: &str = "__READ__";

/// The lock name of its writers (as long as [`READ`], as Curator requires).
pub(crate) const WRITE: &str = "__WRIT__";

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
/// the last of each of `lock_names` in turn, or the whole name if it has
/// none of them.
pub(crate) fn sort_key<'a>(name: &'a str, lock_names: &[&str]) -> &'a str {
    lock_names
        .iter()
        .fold(name, |key, lock_name| match key.rfind(lock_name) {
            Some(at) => &key[at + lock_name.len()..],
            None => key,
        })
}

/// The children of a recipe's path in participant order, the first (who
/// leads or holds) first.
pub(crate) fn sorted(mut children: Vec<String>, lock_names: &[&str]) -> Vec<String> {
    // Stable, as Java's sort is, for names whose keys are equal.
    children.sort_by(|a, b| sort_key(a, lock_names).cmp(sort_key(b, lock_names)));
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
            sorted(children, &[LATCH]),
            vec![
                "_c_cccc-latch-0000000001",
                "_c_bbbb-latch-0000000002",
                "latch-0000000003",
                "_c_aaaa-latch-0000000010"
            ]
        );
        assert_eq!(sort_key("_c_x-latch-latch-0000000007", &[LATCH]), "0000000007");
        assert_eq!(sort_key("foreign", &[LATCH]), "foreign");
        assert_eq!(node_name("_c_x-", LATCH), "_c_x-latch-");
        assert_eq!(sort_key("_c_0f-lock-0000000042", &[LOCK]), "0000000042");
        assert_eq!(node_name("_c_x-", LOCK), "_c_x-lock-");
    }

    #[test]
    fn readers_and_writers_are_ordered_together_by_their_sequences() {
        let children = vec![
            "_c_aaaa-__WRIT__0000000003".to_owned(),
            "_c_bbbb-__READ__0000000001".to_owned(),
            "_c_cccc-__WRIT__0000000002".to_owned(),
            "_c_dddd-__READ__0000000000".to_owned(),
        ];
        assert_eq!(
            sorted(children, &[READ, WRITE]),
            vec![
                "_c_dddd-__READ__0000000000",
                "_c_bbbb-__READ__0000000001",
                "_c_cccc-__WRIT__0000000002",
                "_c_aaaa-__WRIT__0000000003"
            ]
        );
        assert_eq!(READ.len(), WRITE.len());
    }
}
