//! Node names: the sequence numbers ZooKeeper appends, and each recipe's
//! prefixes.

mod curator;
mod sequence;

pub(crate) use curator::{
    delay_epoch, delay_prefix, fix_id, id_prefix, is_item, item_sequence, parse_id, priority_prefix, split_item,
    NameKind, QUEUE_PREFIX,
};
pub(crate) use sequence::{parse_sequence, SequenceKey};
