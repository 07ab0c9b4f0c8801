//! Handing a plain window's items to the workers: a priority queue that
//! keeps arrivals looks for more urgent ones every `min_items_before_refresh`
//! items handed, also within a window, so a window of any size keeps
//! Curator's promise that an urgent item overtakes the backlog within that
//! many items.

use std::collections::VecDeque;

use super::{claim_window, merge, Arrivals, PassState};
use crate::error::Result;
use crate::queue::engine::claim;
use crate::queue::engine::Work;

impl<T: Send + 'static> PassState<'_, T> {
    /// Hands the items a plain window won to the workers, in order. Every
    /// `refresh_after` items handed (a priority queue), the arrivals more
    /// urgent than the next item won are claimed and handed before it, as
    /// many as keep the items claimed and not yet handed within the claim
    /// window; the others join the pending items. The items won are
    /// deleted already, so each is handed over whatever else fails; a
    /// failure to claim urgent items is returned after.
    pub(super) fn hand_over(&mut self, won: Vec<Work<T>>) -> Result<()> {
        let mut won = VecDeque::from(won);
        let mut failure = None;
        while let Some(work) = won.pop_front() {
            if claim::hand(self.core, self.tx, work) {
                self.handed += 1;
                self.taken += 1;
            }
            let Some(Work::Claimed { name: next, .. }) = won.front() else {
                continue;
            };
            if failure.is_some() || self.control.stopping() || self.refresh_after.is_none_or(|n| self.handed < n) {
                continue;
            }
            let next = next.clone();
            match self.urgent_before(&next, won.len()) {
                Ok(urgent) => urgent.into_iter().rev().for_each(|work| won.push_front(work)),
                Err(e) => failure = Some(e),
            }
        }
        failure.map_or(Ok(()), Err)
    }

    /// Looks for arrivals: claims those of this consumer more urgent than
    /// `next` (up to the claim window less `held`, the items claimed and
    /// not yet handed) and returns them; the others join the pending items.
    /// With no arrivals to take, a wake-up (a connection change, whose
    /// events ZooKeeper may have dropped) lists the queue instead, and ends
    /// the pass after this window.
    fn urgent_before(&mut self, next: &str, held: usize) -> Result<Vec<Work<T>>> {
        let arrived = match self.kept.arrivals.as_ref().and_then(Arrivals::take) {
            Some(arrived) => arrived,
            None if self.latch.is_open() => {
                self.relist_now();
                self.stop_after = true;
                self.core.client.get_children(&self.core.path)?.0
            }
            None => return Ok(Vec::new()),
        };
        self.handed = 0;
        let (own, others_first) = self.own_arrivals(arrived, next);
        self.stop_after |= others_first;
        let kind = self.core.kind;
        merge(kind, &mut self.pending, &mut self.seen, own);
        let first = kind.order_key(next);
        let room = self.core.options.claim_window.saturating_sub(held);
        let mut urgent = Vec::new();
        while urgent.len() < room {
            match self.pending.front() {
                Some(name) if kind.order_key(name) < first && !self.passes_by(name) => {}
                _ => break,
            }
            urgent.extend(self.pending.pop_front());
        }
        if urgent.is_empty() {
            return Ok(Vec::new());
        }
        let (_, won) = claim_window(
            self.core,
            self.control,
            self.tx,
            urgent,
            &mut self.read_ahead,
            Vec::new(),
        )?;
        Ok(won)
    }
}
