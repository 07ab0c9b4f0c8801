//! Node names of kazoo's (Python) queues, `kazoo.recipe.queue.Queue` and
//! `LockingQueue`, and the order their consumers take them in.
//!
//! | | kazoo `Queue` | kazoo `LockingQueue` |
//! | --- | --- | --- |
//! | entries | `<path>/entry-<ppp>-<seq>` | `<path>/entries/entry-<ppp>-<seq>` |
//! | lock of an entry | none (taken = deleted) | `<path>/taken/<entry name>`, ephemeral |
//!
//! `<ppp>` is the priority, 0 to 999, as three decimal digits (Python's
//! `{priority:03d}`; kazoo's default is 100); `<seq>` is the sequence the
//! server appends. An entry holds the item's raw bytes. Consumers take
//! entries in the order of their names as strings (Python's `sorted`): lower
//! priority numbers first, equal priorities in put order.

use super::parse_sequence;

/// The prefix of every kazoo queue entry.
pub(crate) const ENTRY_PREFIX: &str = "entry-";

/// The child of a `LockingQueue`'s node that holds its entries.
pub(crate) const ENTRIES_DIR: &str = "entries";

/// The child of a `LockingQueue`'s node that holds its locks.
pub(crate) const TAKEN_DIR: &str = "taken";

/// The highest priority number kazoo accepts (the lowest is 0).
pub(crate) const MAX_PRIORITY: u16 = 999;

/// The name prefix of an entry of `priority` (at most [`MAX_PRIORITY`]):
/// `entry-<ppp>-`.
pub(crate) fn entry_prefix(priority: u16) -> String {
    format!("{ENTRY_PREFIX}{priority:03}-")
}

/// The priority and sequence of an entry name, or `None` for a name kazoo's
/// producers do not write.
pub(crate) fn parse_entry(name: &str) -> Option<(u16, i64)> {
    let rest = name.strip_prefix(ENTRY_PREFIX)?;
    let (priority, sequence) = rest.split_once('-').filter(|(p, _)| p.len() == 3)?;
    if !priority.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((priority.parse().ok()?, parse_sequence(sequence, "")?))
}

/// Whether a child of the entries' node is an entry this crate takes: only
/// names kazoo's producers write (kazoo itself would take any child).
pub(crate) fn is_entry(name: &str) -> bool {
    parse_entry(name).is_some()
}

/// Keeps the entries among `names` and sorts them in kazoo's order (the
/// names as strings).
pub(crate) fn entries_in_order(mut names: Vec<String>) -> Vec<String> {
    names.retain(|name| is_entry(name));
    names.sort_unstable();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_prefixes_match_kazoos_format() {
        assert_eq!(entry_prefix(0), "entry-000-");
        assert_eq!(entry_prefix(7), "entry-007-");
        assert_eq!(entry_prefix(100), "entry-100-");
        assert_eq!(entry_prefix(MAX_PRIORITY), "entry-999-");
    }

    #[test]
    fn parses_priority_and_sequence_and_refuses_other_names() {
        assert_eq!(parse_entry("entry-100-0000000003"), Some((100, 3)));
        assert_eq!(parse_entry("entry-000-2147483647"), Some((0, 2_147_483_647)));
        for name in [
            "entry-10-0000000003",
            "entry-1000-0000000003",
            "entry-abc-0000000003",
            "entry-100-",
            "entry-100-x",
            "entry-0000000001",
            "queue-0000000001",
            "qn-0000000001",
            "taken",
        ] {
            assert_eq!(parse_entry(name), None, "{name}");
        }
    }

    #[test]
    fn order_is_priority_number_then_sequence() {
        let names = [
            "entry-100-0000000000",
            "entry-005-0000000001",
            "foreign",
            "entry-999-0000000002",
            "entry-005-0000000003",
            "entry-000-0000000004",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            entries_in_order(names),
            [
                "entry-000-0000000004",
                "entry-005-0000000001",
                "entry-005-0000000003",
                "entry-100-0000000000",
                "entry-999-0000000002",
            ]
        );
    }
}
