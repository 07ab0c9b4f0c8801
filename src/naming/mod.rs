//! Node names: the sequence numbers ZooKeeper appends, and each recipe's
//! prefixes.

mod sequence;

pub(crate) use sequence::{parse_sequence, SequenceKey};
