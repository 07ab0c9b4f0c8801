//! What the scanner keeps from one pass to the next: how its claims spread,
//! and its arrivals (the items created since its listing), with which a
//! pass that follows one that left nothing behind needs no listing at all,
//! and a plain queue's newest item, from which the names of the items
//! created next are known before they are listed.
//!
//! A priority consumer always keeps arrivals (it looks for urgent items
//! between its windows). A plain consumer without a lock path keeps them
//! while it hears of few deletes but its own (see `contention`): alone, an
//! item's trip is then its create, the event, the read and the delete, with
//! no listing; competing, it lists with a one-shot child watch as before.

use std::time::Instant;

use super::contention::{Contention, Verdict};
use super::registry::Registry;
use super::spread::Spread;
use super::stripes::Others;
use crate::client::Arrivals;
use crate::client::MULTI_READ;
use crate::naming::{item_sequence, plain_name_after, Kind, SequenceKey, QUEUE_PREFIX};
use crate::queue::core::Core;

/// What the scanner keeps from one pass to the next.
pub(super) struct Kept {
    pub(super) spread: Spread,
    /// This consumer's registration among the queue's consumers, whose
    /// stripe it claims (see `stripes`).
    pub(super) registry: Registry,
    /// When it first listed the other stripes' items it left alone.
    pub(super) others: Others,
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
    /// The highest sequence of a plain item listed so far, and how many
    /// plain items the latest listing named.
    newest_plain: Option<i64>,
    plain_listed: usize,
    /// A plain consumer: whose deletes its arrivals hear of.
    contention: Contention,
}

/// Whether a consumer of `core` keeps arrivals whatever its competition: a
/// priority queue, which looks for urgent items between its windows.
fn always_keeps_arrivals<T: Send + 'static>(core: &Core<T>) -> bool {
    core.kind == Kind::Priority
}

/// Whether a consumer of `core` may keep arrivals while it claims mostly
/// alone: a plain (or id) queue without a lock path, not a shard of a
/// sharded queue (whose shards take turns to list).
fn may_keep_arrivals<T: Send + 'static>(core: &Core<T>) -> bool {
    matches!(core.kind, Kind::Plain | Kind::Id)
        && core.options.lock_path.is_none()
        && core.options.listing_gate.is_none()
}

impl Kept {
    pub(super) fn new<T: Send + 'static>(core: &Core<T>) -> Kept {
        Kept {
            spread: Spread::new(),
            registry: Registry::new(core),
            others: Others::default(),
            arrivals: None,
            arrivals_refused: false,
            whole: false,
            newest: None,
            listed_at: Instant::now(),
            newest_plain: None,
            plain_listed: 0,
            contention: Contention::new(),
        }
    }

    /// Notes a listing of the queue, which named `names`.
    pub(super) fn listed(&mut self, names: &[String]) {
        self.listed_at = Instant::now();
        self.newest = None;
        self.note_newest(names);
        let plain: Vec<i64> = plain_sequences(names).collect();
        self.newest_plain = self.newest_plain.max(plain.iter().copied().max());
        self.plain_listed = plain.len();
    }

    /// The names the next listing most likely starts with, to read with it:
    /// the plain items created after the newest listed so far, twice as many
    /// as the latest listing named (at least one, at most what the next
    /// window claims), as the rate of puts seldom doubles between passes. Only for a plain queue without a lock
    /// directory whose latest pass left nothing behind and that claims
    /// alone (a competing consumer's listing starts elsewhere); none
    /// otherwise. Reading them with the listing saves an idle consumer,
    /// woken by a new item, the round trip of reading it after the listing.
    pub(super) fn expected<T: Send + 'static>(&self, core: &Core<T>) -> Vec<String> {
        if core.kind != Kind::Plain || core.options.lock_path.is_some() || !self.whole || self.spread.spreading() {
            return Vec::new();
        }
        let (Some(newest), window) = (self.newest_plain, self.spread.window(core.options.claim_window)) else {
            return Vec::new();
        };
        let count = (2 * self.plain_listed).clamp(1, window.min(MULTI_READ));
        (newest..).take(count).map_while(plain_name_after).collect()
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
        self.newest_plain = self.newest_plain.max(plain_sequences(&fresh).max());
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
        let keeps = always_keeps_arrivals(core) || (may_keep_arrivals(core) && self.contention.may_watch());
        if !keeps || self.arrivals_refused {
            return;
        }
        if self.arrivals.as_ref().is_none_or(Arrivals::has_ended) {
            self.arrivals = match core.client.watch_arrivals(&core.path) {
                Ok(arrivals) => {
                    self.contention.watching(arrivals.deleted());
                    Some(arrivals)
                }
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

    /// Records a pass that deleted `own` items (a plain consumer's claims);
    /// gives the arrivals up if others delete under the queue too (see
    /// `contention`), and says so: the next pass must list at once, with
    /// a child watch.
    pub(super) fn after_pass<T: Send + 'static>(&mut self, core: &Core<T>, own: usize) -> bool {
        if always_keeps_arrivals(core) {
            return false;
        }
        let Some(arrivals) = &self.arrivals else {
            return false;
        };
        if self.contention.after_pass(arrivals.deleted(), own) == Verdict::Keep {
            return false;
        }
        log::debug!(
            "queue {}: other consumers delete items too; listing with a child watch instead of watching arrivals",
            core.path
        );
        self.arrivals = None;
        self.whole = false;
        true
    }
}

/// The sequences of the plain items among `names`.
fn plain_sequences(names: &[String]) -> impl Iterator<Item = i64> + '_ {
    names
        .iter()
        .filter(|name| name.starts_with(QUEUE_PREFIX) && Kind::of_name(name) == Kind::Plain)
        .filter_map(|name| item_sequence(name))
}

/// The creation-order key of an item name's sequence.
fn sequence_key(name: &str) -> Option<SequenceKey> {
    item_sequence(name).and_then(SequenceKey::new)
}
