//! Node names of Curator's queues (`DistributedQueue`, `DistributedPriorityQueue`,
//! `DistributedDelayQueue`, `DistributedIdQueue`) and the order consumers take
//! them in.
//!
//! Every item is a `PERSISTENT_SEQUENTIAL` child whose name starts with
//! `queue-`; the server appends the sequence (`%010d` of a signed 32-bit
//! counter, so 10 characters, or 11 for the most negative values after the
//! counter wraps):
//!
//! | kind | name |
//! | --- | --- |
//! | plain | `queue-<seq>` |
//! | priority | `queue-<S><HHHHHHHH><seq>`: S is `1` for p ≥ 0 else `0`, then 8 upper-case hex digits of `p as u32` |
//! | delay | `queue-\|<HEX>\|<seq>`: at least 8 upper-case hex digits of the epoch milliseconds |
//! | id | `queue-\|<id with / and \| replaced by _>\|<seq>` |
//!
//! The lock of an item in lock-safe mode is `<lock path>/<item name>`: the
//! exact item name, so a Curator consumer and this crate see each other's
//! locks.

use super::parse_sequence;

/// The prefix of every Curator queue item.
pub(crate) const QUEUE_PREFIX: &str = "queue-";

/// Separates the delay epoch or the id from the rest of the name.
const SEPARATOR: char = '|';

/// Length of a priority's text in a name.
const PRIORITY_LEN: usize = 9;

/// Length of `queue-` plus a priority's text.
pub(crate) const PRIORITY_PREFIX_LEN: usize = QUEUE_PREFIX.len() + PRIORITY_LEN;

/// Longest sequence the server appends: `-2147483648`.
const MAX_SEQUENCE_LEN: usize = 11;

/// Whether a child of a queue node is an item: Curator's consumers look at
/// nothing else (and leave other children alone).
pub(crate) fn is_item(name: &str) -> bool {
    name.starts_with(QUEUE_PREFIX)
}

/// The 9-character text of a priority (Curator's `priorityToString`): `1` for
/// non-negative priorities, `0` for negative ones, then the 32 bits in 8
/// upper-case hex digits. String order is numeric order over all of `i32`.
pub(crate) fn priority_to_string(priority: i32) -> String {
    let sign = if priority >= 0 { '1' } else { '0' };
    format!("{sign}{:08X}", priority as u32)
}

/// Reads a 9-character priority text (`1`/`0`, then 8 hex digits of the bits).
pub(crate) fn parse_priority(text: &str) -> Option<i32> {
    // A sign digit, then eight uppercase hex digits (Curator's `%08X`).
    let (sign, hex) = (text.get(..1)?, text.get(1..)?);
    let upper_hex = |b: u8| b.is_ascii_digit() || (b'A'..=b'F').contains(&b);
    if !matches!(sign, "0" | "1") || hex.len() != 8 || !hex.bytes().all(upper_hex) {
        return None;
    }
    let bits = u32::from_str_radix(hex, 16).ok()?;
    Some(bits as i32)
}

/// The name prefix of an item of a priority queue: `queue-` and the priority.
pub(crate) fn priority_prefix(priority: i32) -> String {
    format!("{QUEUE_PREFIX}{}", priority_to_string(priority))
}

/// The name prefix of an item of a delay queue due at `epoch_ms`
/// (milliseconds since the Unix epoch): `queue-|<HEX>|`, with Java's `%08X`
/// of a `long`, i.e. at least 8 upper-case hex digits (a negative value is
/// written as its 16-digit two's complement, as Java does).
pub(crate) fn delay_prefix(epoch_ms: i64) -> String {
    format!("{QUEUE_PREFIX}{SEPARATOR}{epoch_ms:08X}{SEPARATOR}")
}

/// The due time of a delay-queue item, in epoch milliseconds (Curator's
/// `getEpoch`).
///
/// The text between the last two `|`, read as a (signed) hex number. A name
/// without two such separators (a requeued `queue-<seq>`, say), with nothing
/// between them or with text that does not parse gives 0: due immediately,
/// as in Curator. (Java's parser also accepts non-ASCII digits, which no
/// Curator producer writes; here they give 0.)
pub(crate) fn delay_epoch(name: &str) -> i64 {
    let Some(last) = name.rfind(SEPARATOR) else {
        return 0;
    };
    // Curator requires the first separator past index 0 and a non-empty text.
    match name[..last].rfind(SEPARATOR) {
        Some(first) if first > 0 && last > first + 1 => i64::from_str_radix(&name[first + 1..last], 16).unwrap_or(0),
        _ => 0,
    }
}

/// An id as Curator stores it in a name (`fixId`): `/` and `|` become `_`.
pub(crate) fn fix_id(id: &str) -> String {
    id.replace(['/', SEPARATOR], "_")
}

/// The name prefix of an item of an id queue: `queue-|<fixed id>|`.
pub(crate) fn id_prefix(id: &str) -> String {
    format!("{QUEUE_PREFIX}{SEPARATOR}{}{SEPARATOR}", fix_id(id))
}

/// The (fixed) id in an id-queue item name: the text between the first and
/// the second `|`, or `None` if there are not two.
pub(crate) fn parse_id(name: &str) -> Option<&str> {
    let (_, after_first) = name.split_once(SEPARATOR)?;
    let (id, _) = after_first.split_once(SEPARATOR)?;
    Some(id)
}

/// Splits an item name into the prefix it was created with and the sequence
/// the server appended, for any kind of Curator item.
///
/// The sequence follows the last `|` in delay and id names, and the
/// 9-character priority in priority names; a name with no `|` whose text
/// after `queue-` is at most 11 characters long is a plain name. `None` for
/// names that are not items or whose sequence does not parse.
pub(crate) fn split_item(name: &str) -> Option<(&str, i64)> {
    let rest = name.strip_prefix(QUEUE_PREFIX)?;
    let prefix_len = if let Some(last) = rest.rfind(SEPARATOR) {
        QUEUE_PREFIX.len() + last + SEPARATOR.len_utf8()
    } else if rest.len() <= MAX_SEQUENCE_LEN {
        QUEUE_PREFIX.len()
    } else if rest.get(..PRIORITY_LEN).is_some_and(is_priority_text) {
        QUEUE_PREFIX.len() + PRIORITY_LEN
    } else {
        return None;
    };
    let (prefix, sequence) = name.split_at(prefix_len);
    Some((prefix, parse_sequence(sequence, "")?))
}

/// The prefix item `name` was created with, which carries its priority,
/// due time or id; `queue-` for a name that does not parse.
pub(crate) fn item_prefix(name: &str) -> &str {
    split_item(name).map_or(QUEUE_PREFIX, |(prefix, _)| prefix)
}

/// The sequence the server appended to an item name; see [`split_item`].
pub(crate) fn item_sequence(name: &str) -> Option<i64> {
    split_item(name).map(|(_, sequence)| sequence)
}

/// The name the server gives the plain item created after the one with
/// `sequence` (the parent's next sequence); `None` where the counter would
/// pass its sign.
pub(crate) fn plain_name_after(sequence: i64) -> Option<String> {
    let next = i32::try_from(sequence).ok()?.checked_add(1).filter(|next| *next >= 0)?;
    Some(format!("{QUEUE_PREFIX}{next:010}"))
}

/// Whether `text` looks like [`priority_to_string`]'s output.
fn is_priority_text(text: &str) -> bool {
    let mut bytes = text.bytes();
    matches!(bytes.next(), Some(b'0' | b'1')) && bytes.all(|b| b.is_ascii_digit() || (b'A'..=b'F').contains(&b))
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    #[test]
    fn the_plain_name_after_a_sequence_is_the_servers_next_name() {
        assert_eq!(plain_name_after(0).as_deref(), Some("queue-0000000001"));
        assert_eq!(plain_name_after(41).as_deref(), Some("queue-0000000042"));
        assert_eq!(plain_name_after(-1).as_deref(), Some("queue-0000000000"));
        assert_eq!(plain_name_after(i64::from(i32::MAX)), None);
        assert_eq!(plain_name_after(-5), None);
        assert_eq!(item_sequence(&plain_name_after(99).unwrap()), Some(100));
    }

    #[test]
    fn priority_text_matches_curators_vectors() {
        for (p, text) in [
            (i32::MIN, "080000000"),
            (-2, "0FFFFFFFE"),
            (-1, "0FFFFFFFF"),
            (0, "100000000"),
            (1, "100000001"),
            (10, "10000000A"),
            (255, "1000000FF"),
            (i32::MAX, "17FFFFFFF"),
        ] {
            assert_eq!(priority_to_string(p), text, "{p}");
        }
        // Names observed from Curator for priorities 5, -1, MIN, 0 put in turn.
        let names: Vec<String> = [5, -1, i32::MIN, 0]
            .iter()
            .enumerate()
            .map(|(seq, p)| format!("{}{seq:010}", priority_prefix(*p)))
            .collect();
        assert_eq!(
            names,
            [
                "queue-1000000050000000000",
                "queue-0FFFFFFFF0000000001",
                "queue-0800000000000000002",
                "queue-1000000000000000003"
            ]
        );
    }

    #[test]
    fn delay_prefix_matches_curators_vectors() {
        assert_eq!(delay_prefix(1), "queue-|00000001|");
        assert_eq!(delay_prefix(1000), "queue-|000003E8|");
        assert_eq!(delay_prefix(1_700_000_000_000), "queue-|18BCFE56800|");
        assert_eq!(delay_prefix(0xFFFF_FFFF), "queue-|FFFFFFFF|");
        assert_eq!(
            format!("{}{:010}", delay_prefix(1_700_000_000_000), 0),
            "queue-|18BCFE56800|0000000000"
        );
        // Java's %08X of a negative long is its two's complement.
        assert_eq!(delay_prefix(-1), "queue-|FFFFFFFFFFFFFFFF|");
    }

    #[test]
    fn delay_epoch_reads_between_the_last_two_separators() {
        assert_eq!(delay_epoch("queue-|18BCFE56800|0000000000"), 1_700_000_000_000);
        assert_eq!(delay_epoch("queue-|00000005|0000000001"), 5);
        assert_eq!(delay_epoch("queue-|000003e8|0000000001"), 1000);
        assert_eq!(delay_epoch("queue-|a|b|00000010|0000000001"), 16);
        assert_eq!(delay_epoch("queue-|-10|0000000001"), -16);
        for epoch in [1, 1000, 0xFFFF_FFFF, 1_700_000_000_000, i64::MAX] {
            assert_eq!(delay_epoch(&format!("{}0000000007", delay_prefix(epoch))), epoch);
        }
    }

    #[test]
    fn unparsable_delays_are_due_immediately() {
        for name in [
            "queue-0000000001",
            "queue-|0000000001",
            "queue-||0000000001",
            "queue-|zz|0000000001",
            "queue-|+|0000000001",
            "queue-| 5|0000000001",
            "queue-|FFFFFFFFFFFFFFFF|0000000001",
            "queue-|é|0000000001",
            "|5|0000000001",
            "|",
            "||",
            "",
        ] {
            assert_eq!(delay_epoch(name), 0, "{name}");
        }
    }

    #[test]
    fn id_names_match_curator() {
        assert_eq!(fix_id("job/1|x"), "job_1_x");
        assert_eq!(fix_id("plain"), "plain");
        assert_eq!(id_prefix("job/1|x"), "queue-|job_1_x|");
        assert_eq!(
            format!("{}{:010}", id_prefix("job/1|x"), 0),
            "queue-|job_1_x|0000000000"
        );
        assert_eq!(parse_id("queue-|job_1_x|0000000000"), Some("job_1_x"));
        assert_eq!(parse_id("queue-||0000000000"), Some(""));
        assert_eq!(parse_id("queue-0000000000"), None);
        assert_eq!(parse_id("queue-|job0000000000"), None);
    }

    #[test]
    fn is_item_accepts_only_queue_names() {
        for name in ["queue-0000000000", "queue-|a|0000000001", "queue-", "queue-x"] {
            assert!(is_item(name), "{name}");
        }
        for name in [
            "qn-0000000001",
            "lock",
            "queue",
            "Queue-0000000001",
            " queue-1",
            "entry-100-0000000001",
        ] {
            assert!(!is_item(name), "{name}");
        }
    }

    #[test]
    fn splits_every_kind_into_prefix_and_sequence() {
        for (name, prefix, seq) in [
            ("queue-0000000000", "queue-", 0),
            ("queue-0000000042", "queue-", 42),
            ("queue--2147483648", "queue-", i32::MIN as i64),
            ("queue--000000001", "queue-", -1),
            ("queue-1000000050000000000", "queue-100000005", 0),
            ("queue-0FFFFFFFF0000000001", "queue-0FFFFFFFF", 1),
            ("queue-17FFFFFFF-000000001", "queue-17FFFFFFF", -1),
            ("queue-|18BCFE56800|0000000000", "queue-|18BCFE56800|", 0),
            ("queue-|job_1_x|0000000012", "queue-|job_1_x|", 12),
        ] {
            assert_eq!(split_item(name), Some((prefix, seq)), "{name}");
            assert_eq!(item_sequence(name), Some(seq), "{name}");
        }
        for name in [
            "qn-0000000001",
            "queue-",
            "queue-abc",
            "queue-|a|",
            "queue-|a|x1",
            "queue-2000000050000000000",
            "queue-1000000g50000000000",
            "queue-ééééé0000000000",
        ] {
            assert_eq!(split_item(name), None, "{name}");
        }
    }

    /// Pairs of names made of the pieces item names are made of, most of
    /// them malformed, the same each run.
    pub(in crate::naming) fn malformed_pairs() -> impl Iterator<Item = (String, String)> {
        let pieces = [
            "queue-",
            "|",
            "-",
            "0",
            "9",
            "F",
            "é",
            "\u{1F600}",
            "x",
            "||",
            "+",
            "1000000050",
        ];
        let mut rng = fastrand::Rng::with_seed(11);
        (0..20_000).map(move |_| {
            let name: String = (0..rng.usize(0..8))
                .map(|_| pieces[rng.usize(..pieces.len())])
                .collect();
            let other: String = (0..rng.usize(0..8))
                .map(|_| pieces[rng.usize(..pieces.len())])
                .collect();
            (name, other)
        })
    }

    #[test]
    fn malformed_names_never_panic_and_every_parse_agrees_with_the_name() {
        for (name, _) in malformed_pairs() {
            match split_item(&name) {
                Some((prefix, sequence)) => {
                    assert!(is_item(&name) && name.starts_with(prefix), "{name:?}");
                    // The sequence is the rest of the name, and reads back the same.
                    assert_eq!(parse_sequence(&name[prefix.len()..], ""), Some(sequence), "{name:?}");
                    assert_eq!(item_prefix(&name), prefix, "{name:?}");
                }
                None => assert_eq!(item_prefix(&name), QUEUE_PREFIX, "{name:?}"),
            }
            if !is_item(&name) {
                assert_eq!(split_item(&name), None, "a foreign name has no sequence: {name:?}");
            }
            if let Some(id) = parse_id(&name) {
                assert!(name.contains(&format!("{SEPARATOR}{id}{SEPARATOR}")), "{name:?}");
            }
            if delay_epoch(&name) != 0 {
                assert!(
                    name.matches(SEPARATOR).count() >= 2,
                    "a due time needs two separators: {name:?}"
                );
            }
        }
    }
}
