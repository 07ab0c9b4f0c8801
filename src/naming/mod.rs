//! Node names: the sequence numbers ZooKeeper appends, each recipe's
//! prefixes, the one [`Kind`] of a Curator queue, kazoo's (Python) queue entries, and the random UUIDs of
//! Curator's names.

mod curator;
mod kazoo;
mod kind;
mod registry;
mod sequence;
mod uuid;

pub(crate) use curator::{
    delay_epoch, delay_prefix, fix_id, id_prefix, is_item, item_prefix, item_sequence, parse_id, parse_priority,
    plain_name_after, priority_prefix, split_item, PRIORITY_PREFIX_LEN, QUEUE_PREFIX,
};
pub(crate) use kazoo::{
    entries_in_order, entry_prefix, is_entry as is_kazoo_entry, ENTRIES_DIR, MAX_PRIORITY, TAKEN_DIR,
};
pub use kind::Kind;
pub(crate) use registry::{is_registration, registry_of, REGISTRATION, REGISTRY_MARK};
pub(crate) use sequence::{parse_sequence, SequenceKey};
pub(crate) use uuid::{is_uuid, random_uuid};
