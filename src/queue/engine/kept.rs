//! What the scanner keeps from one pass to the next: how its claims spread,
//! and a priority queue's arrivals (the items created since its listing),
//! with which a pass that follows one that left nothing behind needs no
//! listing at all.

use std::time::Instant;

use super::spread::Spread;
use crate::client::Arrivals;
use crate::naming::{item_sequence, Kind, SequenceKey};
use crate::queue::core::Core;

/// What the scanner keeps from one pass to the next.
pub(super) struct Kept {
    pub(super) spread: Spread,
    /// A priority queue's arrivals: the items created since its listing.
    pub(super) arrivals: Option<Arrivals>,
    /// The server refused the arrivals' watch (older than 3.6): listing again
    /// instead.
    arrivals_refused: bool,
    /// The latest pass went through every item it knew of and held none
    /// back: the queue holds nothing for this consumer but what arrived
    /// since.
    pub(super) whole: bool,
    /// The newest item (by sequence) listed or arrived since the latest
    /// listing; arrivals up to it are known already.
    newest: Option<SequenceKey>,
    /// When the queue was last listed.
    listed_at: Instant,
}

/// Whether a consumer of `core` keeps arrivals: a priority queue, which
/// looks for urgent items between its windows. (The watch reports every
/// create and delete under the queue to every consumer that keeps one,
/// which costs competing plain consumers more than the listings it saves.)
fn keeps_arrivals<T: Send + 'static>(core: &Core<T>) -> bool {
    core.kind == Kind::Priority
}

impl Kept {
    pub(super) fn new() -> Kept {
        Kept {
            spread: Spread::new(),
            arrivals: None,
            arrivals_refused: false,
            whole: false,
            newest: None,
            listed_at: Instant::now(),
        }
    }

    /// Notes a listing of the queue, which named `names`.
    pub(super) fn listed(&mut self, names: &[String]) {
        self.listed_at = Instant::now();
        self.newest = None;
        self.note_newest(names);
    }

    /// The items that arrived since the latest pass, in place of a listing,
    /// if that pass left nothing behind, the arrivals are whole, no lock
    /// directory needs listing and no rescan is due; `None`: list the queue.
    pub(super) fn arrived_instead_of_listing<T: Send + 'static>(&mut self, core: &Core<T>) -> Option<Vec<String>> {
        if !std::mem::take(&mut self.whole) || core.options.lock_path.is_some() {
            return None;
        }
        if self.listed_at.elapsed() >= core.options.rescan_interval {
            return None;
        }
        let arrived = self.arrivals.as_ref()?.take()?;
        let known = self.newest;
        let fresh: Vec<String> = arrived
            .into_iter()
            .filter(|name| match (sequence_key(name), known) {
                (Some(key), Some(known)) => key > known,
                _ => true,
            })
            .collect();
        self.note_newest(&fresh);
        Some(fresh)
    }

    /// Remembers the newest of `names`.
    fn note_newest(&mut self, names: &[String]) {
        let newest = names.iter().filter_map(|name| sequence_key(name)).max();
        self.newest = self.newest.max(newest);
    }

    /// Restarts a queue's arrivals before a listing (registering them again
    /// after their session ended, unless the server refuses them).
    pub(super) fn restart_arrivals<T: Send + 'static>(&mut self, core: &Core<T>) {
        if !keeps_arrivals(core) || self.arrivals_refused {
            return;
        }
        if self.arrivals.as_ref().is_none_or(Arrivals::has_ended) {
            self.arrivals = match core.client.watch_arrivals(&core.path) {
                Ok(arrivals) => Some(arrivals),
                Err(e) => {
                    if !e.is_retryable() {
                        log::info!("queue {}: no arrivals watch ({e}); listing again instead", core.path);
                        self.arrivals_refused = true;
                    }
                    None
                }
            };
        }
        if let Some(arrivals) = &self.arrivals {
            arrivals.restart();
        }
    }
}

/// The creation-order key of an item name's sequence.
fn sequence_key(name: &str) -> Option<SequenceKey> {
    item_sequence(name).and_then(SequenceKey::new)
}
