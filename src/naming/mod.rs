//! Node names: the sequence numbers ZooKeeper appends, each recipe's
//! prefixes, and the one [`Kind`] of a Curator queue.

mod curator;
mod kind;
mod sequence;

pub(crate) use curator::{
    delay_epoch, delay_prefix, fix_id, id_prefix, is_item, item_prefix, item_sequence, parse_id, parse_priority,
    plain_name_after, priority_prefix, split_item, PRIORITY_PREFIX_LEN, QUEUE_PREFIX,
};
pub use kind::Kind;
pub(crate) use sequence::{parse_sequence, SequenceKey};
