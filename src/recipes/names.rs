//! The node names of Curator's `LeaderLatch`, which this latch shares.
//!
//! Each participant is an `EPHEMERAL_SEQUENTIAL` child of the latch path
//! named `_c_<UUID>-latch-<sequence>`: Curator's protected name, whose random
//! UUID lets a participant find its node again after a create whose reply
//! was lost. Its data is the participant's id in UTF-8. Participants are
//! ordered by what follows the last `latch-` of their names, compared as
//! text (Curator's `StandardLockInternalsDriver.fixForSorting`); the first
//! is the leader.

use crate::naming::random_uuid;

/// What every participant's name has before its sequence.
pub(crate) const LOCK_NAME: &str = "latch-";

/// Curator's mark of a protected name.
const PROTECTED_MARK: &str = "_c_";

/// The start of a new participant's node names, `_c_<random UUID>-`: no
/// other participant's name starts with it.
pub(crate) fn protected_prefix() -> String {
    format!("{PROTECTED_MARK}{}-", random_uuid())
}

/// The name to create a participant's node with (the server appends the
/// sequence).
pub(crate) fn node_name(protected_prefix: &str) -> String {
    format!("{protected_prefix}{LOCK_NAME}")
}

/// What a participant's place in the order is decided by: its name after
/// the last `latch-`, or the whole name if it has none.
pub(crate) fn sort_key(name: &str) -> &str {
    match name.rfind(LOCK_NAME) {
        Some(at) => &name[at + LOCK_NAME.len()..],
        None => name,
    }
}

/// The children of a latch path in participant order, the leader first.
pub(crate) fn sorted(mut children: Vec<String>) -> Vec<String> {
    // Stable, as Java's sort is, for names whose keys are equal.
    children.sort_by(|a, b| sort_key(a).cmp(sort_key(b)));
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
            sorted(children),
            vec![
                "_c_cccc-latch-0000000001",
                "_c_bbbb-latch-0000000002",
                "latch-0000000003",
                "_c_aaaa-latch-0000000010"
            ]
        );
        assert_eq!(sort_key("_c_x-latch-latch-0000000007"), "0000000007");
        assert_eq!(sort_key("foreign"), "foreign");
        assert_eq!(node_name("_c_x-"), "_c_x-latch-");
    }
}
