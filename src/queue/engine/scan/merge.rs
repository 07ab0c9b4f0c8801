//! Arrivals put into their places among a pass's pending items, so an item
//! created later never overtakes one the pass has still to claim.

use std::collections::{HashSet, VecDeque};

use crate::naming::{is_item, Kind};

/// Puts the items `arrived` into their places in `pending` (sorted for
/// `kind`), leaving out those the pass already knows of.
pub(super) fn merge(kind: Kind, pending: &mut VecDeque<String>, seen: &mut HashSet<String>, arrived: Vec<String>) {
    for name in arrived {
        if is_item(&name) && seen.insert(name.clone()) {
            let key = kind.order_key(&name);
            let at = pending.partition_point(|p| kind.order_key(p) < key);
            pending.insert(at, name);
        }
    }
}
