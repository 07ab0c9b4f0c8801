//! The sorted local list of item names a [`SimpleQueue`](super::SimpleQueue)
//! handle works through between listings.

use std::collections::{BTreeMap, HashSet};

use parking_lot::Mutex;

use super::ITEM_PREFIX;
use crate::naming::{parse_sequence, SequenceKey};

/// How many distinct foreign names are remembered so each is warned about once.
const MAX_WARNED: usize = 1024;

#[derive(Debug, Default)]
pub(super) struct LocalList {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    items: BTreeMap<SequenceKey, String>,
    warned: HashSet<String>,
    /// `qn-` nodes found to have children: not items, never touched again.
    skipped: HashSet<String>,
}

/// The ordering key of an item name, or `None` for a name that is not
/// `qn-<number>`.
pub(super) fn item_key(name: &str) -> Option<SequenceKey> {
    parse_sequence(name, ITEM_PREFIX).and_then(SequenceKey::new)
}

impl LocalList {
    /// Replaces the list with a fresh listing; returns how many items it holds.
    pub(super) fn refill(&self, dir: &str, names: Vec<String>) -> usize {
        let mut inner = self.inner.lock();
        let Inner { items, warned, skipped } = &mut *inner;
        items.clear();
        for name in names {
            match item_key(&name) {
                Some(_) if skipped.contains(&name) => {}
                Some(key) => {
                    items.insert(key, name);
                }
                None => {
                    if warned.len() < MAX_WARNED && warned.insert(name.clone()) {
                        log::warn!("{dir}: skipping child {name:?}, which is not a queue item (qn-<number>)");
                    }
                }
            }
        }
        items.len()
    }

    /// The first item; with `remove`, it is also taken off the list so other
    /// threads of this handle move on to the next one.
    pub(super) fn first(&self, remove: bool) -> Option<(SequenceKey, String)> {
        let mut inner = self.inner.lock();
        if remove {
            inner.items.pop_first()
        } else {
            inner.items.first_key_value().map(|(k, v)| (*k, v.clone()))
        }
    }

    /// Takes up to `n` first items off the list, in order, for a thread of
    /// this handle to claim together.
    pub(super) fn take_first(&self, n: usize) -> Vec<(SequenceKey, String)> {
        let mut inner = self.inner.lock();
        std::iter::from_fn(|| inner.items.pop_first()).take(n).collect()
    }

    /// Drops an item found gone.
    pub(super) fn forget(&self, key: SequenceKey) {
        self.inner.lock().items.remove(&key);
    }

    /// Drops a node found to have children: queue items have none, so it is
    /// not one (and could not be deleted); later listings leave it out.
    pub(super) fn skip(&self, dir: &str, key: SequenceKey, name: String) {
        let mut inner = self.inner.lock();
        inner.items.remove(&key);
        if inner.skipped.len() < MAX_WARNED {
            log::warn!("{dir}: skipping {name:?}, which has children and so is not a queue item");
            inner.skipped.insert(name);
        }
    }

    /// Puts back an item whose claim failed for a reason other than its absence.
    pub(super) fn restore(&self, key: SequenceKey, name: String) {
        self.inner.lock().items.insert(key, name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn refill_orders_items_and_skips_foreign_names() {
        let list = LocalList::default();
        let n = list.refill(
            "/q",
            names(&["qn-0000000010", "lock", "qn-0000000002", "queue-0000000001", "qn-9"]),
        );
        assert_eq!(n, 3);
        let order: Vec<String> = std::iter::from_fn(|| list.first(true).map(|(_, name)| name)).collect();
        assert_eq!(order, ["qn-0000000002", "qn-9", "qn-0000000010"]);
    }

    #[test]
    fn peek_keeps_and_restore_puts_back() {
        let list = LocalList::default();
        list.refill("/q", names(&["qn-0000000001", "qn-0000000002"]));
        let (k, name) = list.first(false).unwrap();
        assert_eq!(list.first(false).unwrap().1, name, "peek does not remove");
        let (k2, taken) = list.first(true).unwrap();
        assert_eq!((k2, taken.as_str()), (k, "qn-0000000001"));
        list.restore(k2, taken);
        assert_eq!(list.first(true).unwrap().1, "qn-0000000001");
        list.forget(list.first(false).unwrap().0);
        assert!(list.first(true).is_none());
    }
}
