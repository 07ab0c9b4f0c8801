//! Consumers that do not collide: each of the N consumers of this crate
//! registered on a queue (see `registry`) claims the items of its own
//! stripe of the sequence numbers: those whose sequence, mixed by a hash,
//! is its rank modulo N.
//!
//! Why a hash of the sequence, not the sequence itself modulo N, nor
//! contiguous ranges: the server numbers a queue's children with the
//! parent's child version, which every create and every delete moves on. A
//! producer and a consumer taking turns leave every other number unused, so
//! `sequence % 2` would put every item in one stripe. Mixed first, any set
//! of sequences, however regular its gaps, falls evenly into the stripes.
//! Contiguous ranges would need the span of live sequences, which moves
//! with every put, and would give a short queue to one consumer; with a
//! hash, any stretch of the queue holds about as many items of every
//! stripe, so every consumer has work as soon as there are N items, and a
//! join or a leave only changes N, with nothing to agree on but N and the
//! ranks.
//!
//! A pass claims the items of its stripe among those it may take in any
//! order (`spread::range`: all of a plain or id queue, the most urgent
//! priority of a priority queue, the due items of a delay queue), in order.
//! Only when none of them is its own does it take the others' items, and
//! only those it listed [`GRACE`] ago or more: a consumer whose stripe ran
//! dry does not race the owners for the items just put (it lists again once
//! the first of them has waited that long), but helps with a backlog, and
//! takes the items of an owner that stopped claiming while still
//! registered. Helping does not collide either: a second hash divides each
//! stripe's items among the other consumers, and a helper takes its share
//! from the tail while the owner works from the head, so they meet once.
//! An item that waited [`ANYONE_AFTER`] graces is anyone's (its helper may
//! have stopped too). When a
//! consumer leaves (it closes, crashes or loses its session), its
//! registration goes and the rest divide the sequences among themselves
//! again: its items fall into their stripes. Until every consumer has seen a
//! join or leave, stripes may overlap or leave a gap for a moment; claims
//! stay correct (a claim is a delete or a lock), only some collide.
//!
//! Curator's consumers (and other crates') are not registered: they claim
//! from the head of the queue as before, and this crate's consumers lose an
//! item to them now and then, which `spread` absorbs.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::naming::{item_sequence, Kind};
use crate::sync::earliest;

use super::spread;

/// A consumer's stripe: the sequences `s` with `mix(s) % of == rank`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Stripe {
    rank: usize,
    of: usize,
}

impl Stripe {
    /// The stripe of the consumer ranked `rank` of `of`; `None` for a
    /// consumer alone (it claims everything).
    pub(super) fn new(rank: usize, of: usize) -> Option<Stripe> {
        (of > 1 && rank < of).then_some(Stripe { rank, of })
    }

    /// Whether the item named is in this stripe (an item without a
    /// sequence is in every stripe).
    pub(super) fn owns(&self, name: &str) -> bool {
        let of = u64::try_from(self.of).unwrap_or(u64::MAX);
        item_sequence(name).is_none_or(|s| usize::try_from(mix(s) % of).ok() == Some(self.rank))
    }

    /// Whether this consumer is the one to help with the item named, of
    /// another stripe: each stripe's items are divided among the other
    /// consumers by a second hash, so that helpers never race each other.
    fn helps_with(&self, name: &str) -> bool {
        let Some(s) = item_sequence(name) else {
            return true;
        };
        let of = u64::try_from(self.of).unwrap_or(u64::MAX);
        let owner = mix(s) % of;
        let helper = mix(s ^ HELPER_SALT) % (of - 1);
        let helper = if helper >= owner { helper + 1 } else { helper };
        usize::try_from(helper).ok() == Some(self.rank)
    }
}

/// Makes the second hash independent of the first.
const HELPER_SALT: i64 = 0x5bd1_e995;

/// SplitMix64's finalizer: consecutive or evenly spaced sequences spread
/// over every stripe.
fn mix(sequence: i64) -> u64 {
    let mut z = sequence as u64;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// How long another stripe's item must have waited (since this consumer
/// first listed it) before this consumer takes it: a few of a busy owner's
/// passes, so that a consumer whose stripe ran dry does not race the owner
/// for an item just put, yet helps with a backlog, and takes the items of
/// an owner that stopped claiming (but is still registered) within it.
pub(super) const GRACE: Duration = Duration::from_millis(250);

/// The most of the other stripes' items a consumer remembers (the first in
/// the kind's order); those after them count as just listed.
const MAX_SEEN: usize = 8_192;

/// Graces after which any consumer whose stripe is empty takes another
/// stripe's item, not only the one to help with it (which may have stopped
/// claiming too).
const ANYONE_AFTER: u32 = 4;

/// What a consumer knows of the other stripes' items: when it first listed
/// each of those it left alone.
#[derive(Debug, Default)]
pub(super) struct Others {
    seen: HashMap<String, Instant>,
}

/// The items a pass goes through, from [`Others::mine`].
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Mine {
    pub(super) items: Vec<String>,
    /// Items of other stripes were left out.
    pub(super) left_out: bool,
    /// When the first of those left out may be taken.
    pub(super) wake_at: Option<Instant>,
}

impl Others {
    /// Of `items` (sorted for `kind`), those a pass of the consumer with
    /// `stripe` goes through. Of the items at the head that may be taken in
    /// any order: those of its stripe, in order; when there are none, its
    /// share of the other stripes' items it listed [`GRACE`] ago or more
    /// (their owners are behind, or stopped), the last first (the owners
    /// take theirs from the head), and any other stripe's items listed
    /// [`ANYONE_AFTER`] graces ago or more. A delay queue's items not due yet follow,
    /// so the pass still wakes when they are due. A consumer alone (no
    /// stripe) goes through every item.
    pub(super) fn mine(&mut self, kind: Kind, items: Vec<String>, stripe: Option<Stripe>, now_ms: i64) -> Mine {
        let Some(stripe) = stripe else {
            self.seen.clear();
            return Mine {
                items,
                left_out: false,
                wake_at: None,
            };
        };
        let now = Instant::now();
        let head = spread::range(kind, items.iter(), now_ms);
        let own_at_head = items[..head].iter().any(|name| stripe.owns(name));
        let mut seen = HashMap::with_capacity(head.min(MAX_SEEN));
        let (total, mut wake_at) = (items.len(), None);
        let mut kept = Vec::new();
        for (at, name) in items.into_iter().enumerate() {
            if at >= head {
                if kind == Kind::Delay {
                    kept.push(name);
                }
                continue;
            }
            if stripe.owns(&name) {
                if own_at_head {
                    kept.push(name);
                }
                continue;
            }
            let first = self.seen.get(&name).copied().unwrap_or(now);
            if !own_at_head {
                // Its share of the others' items once they waited a grace,
                // anyone's once they waited [`ANYONE_AFTER`] graces.
                let due = match stripe.helps_with(&name) {
                    true => first + GRACE,
                    false => first + GRACE * ANYONE_AFTER,
                };
                match due <= now {
                    true => kept.push(name.clone()),
                    false => wake_at = earliest(wake_at, Some(due)),
                }
            }
            // The oldest only: memory does not grow with the backlog.
            if seen.len() < MAX_SEEN {
                seen.insert(name, first);
            }
        }
        self.seen = seen;
        if !own_at_head {
            // Helpers take from the tail, the owners from the head.
            let later = if kind == Kind::Delay { total - head } else { 0 };
            let helped = kept.len() - later;
            kept[..helped].reverse();
        }
        Mine {
            left_out: kept.len() < total,
            items: kept,
            wake_at,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::naming::{delay_prefix, priority_prefix};

    fn plain(sequences: impl Iterator<Item = i64>) -> Vec<String> {
        sequences.map(|s| format!("queue-{s:010}")).collect()
    }

    /// The first `n` sequences from 1 that `stripe` owns (`owned`) or not.
    fn sequences(stripe: Stripe, owned: bool, n: usize) -> Vec<i64> {
        let name = |s: i64| format!("queue-{s:010}");
        (1..).filter(|s| stripe.owns(&name(*s)) == owned).take(n).collect()
    }

    /// Others that listed `items` a grace ago.
    fn listed_long_ago(items: &[String]) -> Others {
        let then = Instant::now() - GRACE;
        Others {
            seen: items.iter().map(|name| (name.clone(), then)).collect(),
        }
    }

    #[test]
    fn the_stripes_of_n_consumers_divide_any_stretch_of_sequences_between_them() {
        let stripes: Vec<Stripe> = (0..4).filter_map(|rank| Stripe::new(rank, 4)).collect();
        for name in plain(37..137) {
            assert_eq!(stripes.iter().filter(|s| s.owns(&name)).count(), 1, "{name}");
        }
        let all = plain(10..18);
        let mine = Others::default().mine(Kind::Plain, all.clone(), Some(stripes[2]), 0);
        let owned: Vec<String> = all.into_iter().filter(|n| stripes[2].owns(n)).collect();
        assert!(!owned.is_empty());
        assert_eq!(
            (mine.items, mine.left_out, mine.wake_at),
            (owned.clone(), owned.len() < 8, None)
        );
        // Every other sequence (a producer and a consumer taking turns)
        // falls into both of two stripes, about evenly.
        let two = Stripe::new(0, 2).unwrap();
        let even = plain((0..2_000).map(|s| s * 2));
        let first = even.iter().filter(|n| two.owns(n)).count();
        assert!((800..1_200).contains(&first), "{first} of 2000");
        assert_eq!(Stripe::new(0, 1), None);
        assert_eq!(Stripe::new(3, 3), None);
    }

    #[test]
    fn a_consumer_whose_stripe_is_empty_takes_the_others_items_once_they_waited_a_grace() {
        let stripe = Stripe::new(1, 2).unwrap();
        let theirs = plain(sequences(stripe, false, 3).into_iter());
        let mut others = Others::default();
        let before = Instant::now();
        let fresh = others.mine(Kind::Plain, theirs.clone(), Some(stripe), 0);
        assert!(fresh.items.is_empty() && fresh.left_out);
        let wake_at = fresh.wake_at.unwrap();
        assert!(wake_at >= before + GRACE && wake_at <= Instant::now() + GRACE);
        // Of two, the other's every item is its to help with, the last first.
        let waited = listed_long_ago(&theirs).mine(Kind::Plain, theirs.clone(), Some(stripe), 0);
        let backwards: Vec<String> = theirs.iter().rev().cloned().collect();
        assert_eq!(
            (waited.items, waited.left_out, waited.wake_at),
            (backwards, false, None)
        );
        let alone = others.mine(Kind::Plain, plain(0..4), None, 0);
        assert_eq!((alone.items, alone.left_out), (plain(0..4), false));
    }

    #[test]
    fn each_stripe_s_items_are_divided_among_the_other_consumers_to_help_with() {
        let stripes: Vec<Stripe> = (0..4).filter_map(|rank| Stripe::new(rank, 4)).collect();
        let mut shares = [0usize; 4];
        for name in plain(0..4_000) {
            let owner = stripes.iter().position(|s| s.owns(&name)).unwrap();
            let helpers: Vec<usize> = (0..4).filter(|&r| stripes[r].helps_with(&name)).collect();
            assert_eq!(helpers.len(), 1, "{name}");
            assert_ne!(helpers[0], owner, "{name}");
            shares[helpers[0]] += 1;
        }
        assert!(shares.iter().all(|&n| (800..1_200).contains(&n)), "{shares:?}");
    }

    #[test]
    fn a_priority_consumer_takes_the_most_urgent_priority_first_its_own_or_not() {
        let stripe = Stripe::new(1, 2).unwrap();
        let (own, others) = (sequences(stripe, true, 2), sequences(stripe, false, 2));
        let urgent = |s: i64| format!("{}{s:010}", priority_prefix(-5));
        let later = |s: i64| format!("{}{s:010}", priority_prefix(7));
        // Its own items are all of a lower priority: none before the urgent
        // ones waited a grace, then the urgent ones.
        let items = vec![urgent(others[0]), urgent(others[1]), later(own[0]), later(own[1])];
        assert!(Others::default()
            .mine(Kind::Priority, items.clone(), Some(stripe), 0)
            .items
            .is_empty());
        let waited = listed_long_ago(&items).mine(Kind::Priority, items.clone(), Some(stripe), 0);
        assert_eq!(waited.items, vec![items[1].clone(), items[0].clone()]);
        // Its own urgent items only, not its own later ones.
        let items = vec![urgent(others[0]), urgent(own[0]), later(others[1]), later(own[1])];
        let mine = listed_long_ago(&items).mine(Kind::Priority, items, Some(stripe), 0);
        assert_eq!(mine.items, vec![urgent(own[0])]);
    }

    #[test]
    fn a_delay_consumer_takes_its_due_items_and_keeps_those_not_due_to_wake_for_them() {
        let stripe = Stripe::new(1, 2).unwrap();
        let (own, others) = (sequences(stripe, true, 3), sequences(stripe, false, 3));
        let at = |due: i64, s: i64| format!("{}{s:010}", delay_prefix(due));
        let items = vec![
            at(1_000, own[0]),
            at(1_000, others[0]),
            at(2_000, own[1]),
            at(9_000, others[1]),
            at(9_000, own[2]),
        ];
        let mine = Others::default().mine(Kind::Delay, items, Some(stripe), 5_000);
        let wanted = vec![
            at(1_000, own[0]),
            at(2_000, own[1]),
            at(9_000, others[1]),
            at(9_000, own[2]),
        ];
        assert_eq!((mine.items, mine.left_out), (wanted, true));
    }
}
