//! The floor of a read-back: a lower bound for the sequence of the queue's
//! next item (see the module doc of `store`).

use parking_lot::Mutex;

use super::Store;
use crate::client::Opts;
use crate::naming::{item_sequence, SequenceKey};
use crate::path;

/// A lower bound for the sequence of the queue's next item: the highest
/// sequence this producer has seen created, or the queue's `cversion`.
#[derive(Default)]
pub(super) struct Floor(Mutex<Option<SequenceKey>>);

impl Floor {
    fn raise(&self, key: SequenceKey) {
        let mut floor = self.0.lock();
        if floor.is_none_or(|f| f < key) {
            *floor = Some(key);
        }
    }

    pub(super) fn forget(&self) {
        *self.0.lock() = None;
    }
}

impl Store {
    /// The floor for a create sent now; `None` if it cannot be read, which
    /// makes a read-back look at every item.
    pub(crate) fn read_floor(&self, opts: Opts<'_>) -> Option<SequenceKey> {
        if let Some(floor) = *self.floor.0.lock() {
            return Some(floor);
        }
        match self.client.exists_with(&self.path, opts) {
            Ok(Some(stat)) => {
                let key = SequenceKey::new(i64::from(stat.cversion));
                if let Some(key) = key {
                    self.floor.raise(key);
                }
                key
            }
            _ => None,
        }
    }

    pub(super) fn note_created(&self, created: &str) {
        if let Some(key) = item_sequence(path::name(created)).and_then(SequenceKey::new) {
            self.floor.raise(key);
        }
    }
}
