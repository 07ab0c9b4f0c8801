//! The one kind of a Curator queue: how its items are named and the order
//! consumers take them in.

use std::fmt;

use super::curator::{delay_epoch, is_item, item_sequence, parse_id, parse_priority, split_item, PRIORITY_PREFIX_LEN};
use super::{SequenceKey, QUEUE_PREFIX};

/// The kind of a Curator queue (or of one of its item names), which decides
/// the order items are taken in.
///
/// ```
/// use zk_queue::inspect::Kind;
///
/// assert_eq!(Kind::of_name("queue-0000000003"), Kind::Plain);
/// assert_eq!(Kind::of_name("queue-1000000050000000000"), Kind::Priority);
/// assert_eq!(Kind::of_name("queue-|18BCFE56800|0000000000"), Kind::Delay);
/// assert_eq!(Kind::of_name("queue-|job_1_x|0000000000"), Kind::Id);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// `DistributedQueue`: `queue-<seq>`, taken in name order. Classic items
    /// are of this kind too.
    Plain,
    /// `DistributedPriorityQueue`: `queue-<9-char priority><seq>`, lower
    /// priorities first.
    Priority,
    /// `DistributedDelayQueue`: `queue-|<hex epoch ms>|<seq>`, by due time.
    Delay,
    /// `DistributedIdQueue`: `queue-|<id>|<seq>`, by sequence.
    Id,
}

impl Kind {
    /// The kind a Curator item name was written by.
    ///
    /// A name with `|…|` after `queue-` is a delay name if the text between
    /// the bars is hexadecimal, else an id name (so an id made only of hex
    /// digits reads as a due time); a name with a 9-character priority before
    /// its sequence is a priority name; everything else (including classic
    /// and foreign names) is [`Kind::Plain`].
    ///
    /// ```
    /// use zk_queue::inspect::Kind;
    /// assert_eq!(Kind::of_name("queue-|BEEF|0000000001"), Kind::Delay);
    /// assert_eq!(Kind::of_name("qn-0000000001"), Kind::Plain);
    /// ```
    pub fn of_name(name: &str) -> Kind {
        let Some(rest) = name.strip_prefix(QUEUE_PREFIX) else {
            return Kind::Plain;
        };
        if rest.starts_with('|') {
            return match parse_id(name) {
                Some(text) if !text.is_empty() && text.bytes().all(|b| b.is_ascii_hexdigit()) => Kind::Delay,
                Some(_) => Kind::Id,
                None => Kind::Plain,
            };
        }
        match split_item(name) {
            Some((prefix, _))
                if prefix.len() == PRIORITY_PREFIX_LEN
                    && prefix.get(QUEUE_PREFIX.len()..).and_then(parse_priority).is_some() =>
            {
                Kind::Priority
            }
            _ => Kind::Plain,
        }
    }

    /// The kind of a Curator queue from its children: the most common kind
    /// among names that are not plain (plain names appear in every kind of
    /// queue, as requeued items), or [`Kind::Plain`] if all are plain. Ties go
    /// to priority, then delay, then id. Foreign and classic names are ignored.
    ///
    /// ```
    /// use zk_queue::inspect::Kind;
    /// let names = ["queue-0000000002", "queue-|00000005|0000000000", "queue-|00000007|0000000001"];
    /// assert_eq!(Kind::detect(&names), Kind::Delay);
    /// assert_eq!(Kind::detect(&["queue-0000000000", "qn-0000000001"]), Kind::Plain);
    /// ```
    pub fn detect<S: AsRef<str>>(names: &[S]) -> Kind {
        let mut counts = [0usize; 3];
        for name in names.iter().map(AsRef::as_ref).filter(|n| is_item(n)) {
            match Kind::of_name(name) {
                Kind::Priority => counts[0] += 1,
                Kind::Delay => counts[1] += 1,
                Kind::Id => counts[2] += 1,
                Kind::Plain => {}
            }
        }
        let kinds = [Kind::Priority, Kind::Delay, Kind::Id];
        let max = counts.iter().copied().max().unwrap_or(0);
        if max == 0 {
            return Kind::Plain;
        }
        kinds[counts.iter().position(|&c| c == max).unwrap_or(0)]
    }

    /// The sort key of an item name.
    ///
    /// - Plain and priority: the whole name, as Curator sorts them. A plain
    ///   `queue-<seq>` name (an item Curator requeued, which drops the
    ///   priority) therefore sorts before every priority name while its
    ///   sequence is below 10⁹; and in a plain queue, names past the
    ///   counter's sign wrap sort first. Both are kept for compatibility.
    /// - Delay: the due time ([`delay_epoch`], 0 if unparsable), then the
    ///   sequence. Curator leaves items due at the same time unordered; the
    ///   tie-break only refines its order.
    /// - Id: the sequence (FIFO; a requeued item goes to the back), read in
    ///   creation order across the sign wrap. Curator compares the names with
    ///   `|id|` removed, i.e. `queue-<seq>` strings, which is the same order
    ///   for non-negative sequences. Names whose sequence does not parse come
    ///   last, by name.
    pub(crate) fn order_key(self, name: &str) -> OrderKey<'_> {
        match self {
            Kind::Plain | Kind::Priority => OrderKey::Name(name),
            Kind::Delay => OrderKey::Due {
                epoch: delay_epoch(name),
                sequence: SequenceOrder::of(name),
            },
            Kind::Id => OrderKey::Sequence(SequenceOrder::of(name)),
        }
    }

    /// Sorts item names into the order they are taken in. Names that are not
    /// items ([`is_item`]) should be filtered out first.
    pub(crate) fn sort<S: AsRef<str>>(self, names: &mut [S]) {
        names.sort_by(|a, b| self.order_key(a.as_ref()).cmp(&self.order_key(b.as_ref())));
    }
}

impl fmt::Display for Kind {
    /// The kind's name in lowercase: `plain`, `priority`, `delay` or `id`.
    ///
    /// ```
    /// assert_eq!(zk_queue::inspect::Kind::Delay.to_string(), "delay");
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Kind::Plain => "plain",
            Kind::Priority => "priority",
            Kind::Delay => "delay",
            Kind::Id => "id",
        })
    }
}

/// The sort key of an item name under a [`Kind`]; keys of one kind
/// compare as that kind's consumers order items.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum OrderKey<'a> {
    /// Plain and priority: the whole name.
    Name(&'a str),
    /// Delay: the due time, then the sequence.
    Due {
        /// Due time in epoch milliseconds ([`delay_epoch`]).
        epoch: i64,
        /// Tie-break.
        sequence: SequenceOrder<'a>,
    },
    /// Id: the sequence.
    Sequence(SequenceOrder<'a>),
}

/// Order by sequence in creation order (across the counter's sign wrap), the
/// names without a sequence last, by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum SequenceOrder<'a> {
    /// A name with a sequence; the name breaks ties between equal sequences.
    Known(SequenceKey, &'a str),
    /// A name without a parsable sequence.
    Unknown(&'a str),
}

impl<'a> SequenceOrder<'a> {
    fn of(name: &'a str) -> SequenceOrder<'a> {
        match item_sequence(name).and_then(SequenceKey::new) {
            Some(key) => SequenceOrder::Known(key, name),
            None => SequenceOrder::Unknown(name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::naming::curator::tests::malformed_pairs;
    use crate::naming::priority_prefix;

    #[test]
    fn priority_names_sort_numerically_over_the_whole_range() {
        let mut rng = fastrand::Rng::with_seed(7);
        let mut priorities: Vec<i32> = vec![i32::MIN, i32::MIN + 1, -256, -2, -1, 0, 1, 9, 10, 255, i32::MAX];
        priorities.extend((0..500).map(|_| rng.i32(..)));
        // Equal priorities come out in sequence order.
        priorities.extend([42, 42, 42]);
        let mut names: Vec<String> = priorities
            .iter()
            .enumerate()
            .map(|(seq, p)| format!("{}{seq:010}", priority_prefix(*p)))
            .collect();
        rng.shuffle(&mut names);
        Kind::Priority.sort(&mut names);
        let mut expected: Vec<(i32, usize)> = priorities.iter().enumerate().map(|(seq, p)| (*p, seq)).collect();
        expected.sort();
        let sorted: Vec<(i32, usize)> = names
            .iter()
            .map(|n| {
                let (prefix, seq) = split_item(n).unwrap();
                let p = expected.iter().find(|(_, s)| *s as i64 == seq).unwrap().0;
                assert_eq!(prefix, priority_prefix(p));
                (p, seq as usize)
            })
            .collect();
        assert_eq!(sorted, expected);
    }

    #[test]
    fn plain_names_sort_before_priority_names_as_in_curator() {
        let mut names = [
            "queue-1000000070000000000",
            "queue-0000000001",
            "queue-0800000000000000002",
        ];
        Kind::Priority.sort(&mut names);
        assert_eq!(
            names,
            [
                "queue-0000000001",
                "queue-0800000000000000002",
                "queue-1000000070000000000"
            ]
        );
        let mut plain = ["queue-0000000010", "queue-0000000002", "queue-0000000009"];
        Kind::Plain.sort(&mut plain);
        assert_eq!(plain, ["queue-0000000002", "queue-0000000009", "queue-0000000010"]);
    }

    #[test]
    fn delay_order_is_by_due_time_then_sequence() {
        let mut names = vec![
            "queue-|18BCFE56800|0000000004".to_owned(),
            "queue-|000003E8|0000000003".to_owned(),
            "queue-|FFFFFFFF|0000000000".to_owned(),
            "queue-|000003E8|0000000001".to_owned(),
            "queue-0000000009".to_owned(),
            "queue-|000003E8|0000000002".to_owned(),
            "queue-|000003E8|garbage".to_owned(),
        ];
        Kind::Delay.sort(&mut names);
        assert_eq!(
            names,
            [
                // A requeued item has no delay: due at once, first.
                "queue-0000000009",
                "queue-|000003E8|0000000001",
                "queue-|000003E8|0000000002",
                "queue-|000003E8|0000000003",
                "queue-|000003E8|garbage",
                // Widths differ: 0xFFFFFFFF < 0x18BCFE56800.
                "queue-|FFFFFFFF|0000000000",
                "queue-|18BCFE56800|0000000004",
            ]
        );
    }

    #[test]
    fn id_order_is_fifo_by_sequence_ignoring_ids() {
        let mut names = vec![
            "queue-|zebra|0000000000",
            "queue-|bad",
            "queue-|apple|0000000002",
            "queue-|m|-2147483648",
            "queue-0000000003",
            "queue-|apple|2147483647",
            "queue-|b|0000000001",
        ];
        Kind::Id.sort(&mut names);
        assert_eq!(
            names,
            [
                "queue-|zebra|0000000000",
                "queue-|b|0000000001",
                "queue-|apple|0000000002",
                // A name without an id still has its sequence, as in Curator.
                "queue-0000000003",
                "queue-|apple|2147483647",
                // Past the counter's sign wrap: newer than every positive one.
                "queue-|m|-2147483648",
                "queue-|bad",
            ]
        );
    }

    #[test]
    fn the_order_of_every_kind_is_total_even_over_malformed_names() {
        for (name, other) in malformed_pairs() {
            for kind in [Kind::Plain, Kind::Priority, Kind::Delay, Kind::Id] {
                // Consumption order is a total order: the same both ways round.
                let (a, b) = (kind.order_key(&name), kind.order_key(&other));
                assert_eq!(a.cmp(&b), b.cmp(&a).reverse(), "{kind:?}: {name:?} against {other:?}");
                assert_eq!(a.cmp(&a), std::cmp::Ordering::Equal);
            }
        }
    }
}
