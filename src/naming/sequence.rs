//! Parsing and ordering of the sequence numbers ZooKeeper appends to
//! sequential node names.
//!
//! The server formats the parent's `cversion`, a signed 32-bit counter, as
//! `%010d`. After 2³¹ − 1 creations under one parent it wraps to
//! `-2147483648` and counts up through `-0000000001`: those names are newer
//! than every positive one, although they sort first both as strings and as
//! signed numbers (the classic Java recipe's order). Reading the counter as
//! unsigned restores creation order across that wrap. (A second wrap, after
//! 2³² creations, brings back `0000000000` and is not ordered correctly.)

/// The creation-order key of a sequence number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct SequenceKey(u64);

impl SequenceKey {
    /// The key of a parsed sequence, or `None` if ZooKeeper cannot produce it.
    pub(crate) fn new(sequence: i64) -> Option<SequenceKey> {
        if let Ok(small) = i32::try_from(sequence) {
            // Negative values are the 32-bit counter past its sign wrap.
            Some(SequenceKey(u64::from(small as u32)))
        } else if sequence > 0 {
            // 64-bit sequences (19 digits), which newer servers may produce.
            Some(SequenceKey(sequence as u64))
        } else {
            None
        }
    }
}

/// Parses the sequence at the end of `name` after `prefix`: an optional `-`
/// and decimal digits only. Returns `None` for anything else.
pub(crate) fn parse_sequence(name: &str, prefix: &str) -> Option<i64> {
    let digits = name.strip_prefix(prefix)?;
    let unsigned = digits.strip_prefix('-').unwrap_or(digits);
    if unsigned.is_empty() || !unsigned.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> Option<SequenceKey> {
        parse_sequence(name, "qn-").and_then(SequenceKey::new)
    }

    #[test]
    fn parses_padded_and_negative_sequences() {
        assert_eq!(parse_sequence("qn-0000000000", "qn-"), Some(0));
        assert_eq!(parse_sequence("qn-0000000042", "qn-"), Some(42));
        assert_eq!(parse_sequence("qn-2147483647", "qn-"), Some(2147483647));
        assert_eq!(parse_sequence("qn--2147483648", "qn-"), Some(-2147483648));
        assert_eq!(parse_sequence("qn--000000001", "qn-"), Some(-1));
        assert_eq!(parse_sequence("qn-0000000000000000012", "qn-"), Some(12));
    }

    #[test]
    fn rejects_foreign_and_malformed_names() {
        for name in [
            "queue-0000000001",
            "qn-",
            "qn--",
            "qn-+5",
            "qn-12a",
            "qn- 1",
            "qn-1.0",
            "lock",
            "qn-99999999999999999999",
        ] {
            assert_eq!(key(name), None, "{name}");
        }
        assert_eq!(SequenceKey::new(-2147483649), None);
    }

    #[test]
    fn orders_by_creation_across_the_sign_wrap() {
        let names = [
            "qn--000000001",
            "qn-0000000001",
            "qn--2147483648",
            "qn-2147483647",
            "qn-0000000000",
            "qn--2147483647",
        ];
        let mut sorted: Vec<&str> = names.to_vec();
        sorted.sort_by_key(|n| key(n).unwrap());
        assert_eq!(
            sorted,
            [
                "qn-0000000000",
                "qn-0000000001",
                "qn-2147483647",
                "qn--2147483648",
                "qn--2147483647",
                "qn--000000001"
            ]
        );
    }

    #[test]
    fn numeric_not_lexicographic_order() {
        // Unpadded names (written by other tools) still sort by number.
        assert!(key("qn-9").unwrap() < key("qn-10").unwrap());
        assert!(key("qn-0000000009").unwrap() < key("qn-10").unwrap());
    }
}
