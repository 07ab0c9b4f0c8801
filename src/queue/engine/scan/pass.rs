//! One pass of the scanner: from a listing (or the arrivals since the
//! latest pass), the items in the kind's order, claimed a window at a time
//! until none is left, the pass must look again, or the queue stops.

use std::collections::{HashSet, VecDeque};
use std::time::{Duration, Instant};

use crossbeam_channel::Sender;

use super::listing::{self, Start};
use super::locks::LockView;
use super::merge::merge;
use super::window::claim_window;
use super::MAX_PENDING;
use crate::client::{Arrivals, ChildWatch};
use crate::error::Result;
use crate::naming::{delay_epoch, is_item, Kind};
use crate::queue::core::Core;
use crate::queue::engine::claim::ReadAhead;
use crate::queue::engine::kept::Kept;
use crate::queue::engine::spread::{self, Next};
use crate::queue::engine::stripes::Stripe;
use crate::queue::engine::{Control, Work};
use crate::queue::DeliverAt;
use crate::sync::{earliest, Latch};

mod hand;

/// The outcome of one pass: the watches to keep while waiting, and when to
/// scan again at the latest.
pub(super) struct Pass {
    _watches: Vec<ChildWatch>,
    pub(super) wake_at: Option<Instant>,
}

/// What a pass works with.
struct Scope<'a, T> {
    core: &'a Core<T>,
    control: &'a Control,
    tx: &'a Sender<Work<T>>,
    latch: &'a Latch,
}

/// Whether a pass goes on with its next item.
enum Flow {
    Next,
    Stop,
}

/// What a pass knows and has done so far.
struct PassState<'a, T> {
    core: &'a Core<T>,
    control: &'a Control,
    tx: &'a Sender<Work<T>>,
    latch: &'a Latch,
    kept: &'a mut Kept,
    /// The items still to go through, in the kind's order.
    pending: VecDeque<String>,
    /// The items this pass knows of, so an arrival it listed is not taken
    /// twice (kept only with arrivals).
    seen: HashSet<String>,
    /// The window being filled.
    batch: Vec<String>,
    /// Lock-safe: what the pass knows of the lock directory.
    locks: Option<LockView>,
    read_ahead: ReadAhead,
    wake_at: Option<Instant>,
    /// Whether the pass went through every item it knew of.
    whole: bool,
    /// Items handed over since the latest look for urgent items.
    handed: usize,
    /// Items handed over in this pass.
    taken: usize,
    /// The most items of the next window.
    limit: usize,
    /// Whether the next window starts elsewhere (see `spread`).
    jump: bool,
    /// The window the options allow this pass.
    window: usize,
    /// A priority queue: items after which to look for urgent ones.
    refresh_after: Option<usize>,
    /// When the pass began, epoch milliseconds.
    now_ms: i64,
    /// This consumer's stripe, if others of this crate consume too.
    stripe: Option<Stripe>,
    /// Whether the pass ends after the window being handed over (it found
    /// a reason to look again while handing it over).
    stop_after: bool,
}

pub(super) fn scan<T: Send + 'static>(
    core: &Core<T>,
    control: &Control,
    tx: &Sender<Work<T>>,
    latch: &Latch,
    kept: &mut Kept,
) -> Result<Pass> {
    // Items this consumer settles from now on may still be named.
    control.leases.listing();
    let Some(start) = listing::start(core, latch, kept)? else {
        return recreated(core);
    };
    if let Some(arrivals) = &kept.arrivals {
        arrivals.wake_on_arrival(latch);
    }
    // Orphans left are tried again soon; deleting one fires the lock watch.
    let wake_at = control.leases.settle_orphans(core);
    let locks = match &core.options.lock_path {
        // Watching the locks picks up an item the moment its holder dies.
        Some(lock_path) => match LockView::list(core, lock_path, latch)? {
            Some(view) => Some(view),
            None => return recreated(core),
        },
        None => None,
    };
    let Start {
        names,
        mut watches,
        listed,
        read_ahead,
        turn,
    } = start;
    let scope = Scope {
        core,
        control,
        tx,
        latch,
    };
    // This consumer's stripe, if others of this crate consume too.
    let stripe = kept.registry.stripe(core, latch);
    let mut state = PassState::new(scope, kept, read_ahead, locks, wake_at);
    state.keep(names, listed, stripe);
    drop(turn);
    // Handing the last window over may find arrivals, which join the
    // pending items: unless it found a reason to look again, the pass goes
    // on with them.
    loop {
        let flow = state.run()?;
        state.finish_window()?;
        let stop = std::mem::take(&mut state.stop_after);
        if matches!(flow, Flow::Stop) || stop || state.pending.is_empty() || control.stopping() {
            break;
        }
    }
    Ok(state.finish(&mut watches))
}

/// A queue or lock node deleted under the consumer (by an operator, or
/// reaped as an empty container) is created again, and listed at once.
fn recreated<T: Send + 'static>(core: &Core<T>) -> Result<Pass> {
    core.ensure_nodes()?;
    Ok(Pass {
        _watches: Vec::new(),
        wake_at: Some(Instant::now()),
    })
}

impl<'a, T: Send + 'static> PassState<'a, T> {
    fn new(
        scope: Scope<'a, T>,
        kept: &'a mut Kept,
        read_ahead: ReadAhead,
        locks: Option<LockView>,
        wake_at: Option<Instant>,
    ) -> PassState<'a, T> {
        let Scope {
            core,
            control,
            tx,
            latch,
        } = scope;
        // At least one item per listing, so a steady stream of puts cannot
        // starve the consumer (Curator's livelock with 0).
        let refresh_after = (core.kind == Kind::Priority).then(|| core.options.min_items_before_refresh.max(1));
        // A priority queue's window ends where it may have to look again,
        // unless it can look while handing the window over (see `keep`).
        let window = refresh_after.map_or(core.options.claim_window, |n| n.min(core.options.claim_window));
        // Competing consumers start their windows in different places (see
        // `spread`); one claiming alone takes the listing in order.
        let jump = kept.spread.spreading();
        PassState {
            core,
            control,
            tx,
            latch,
            kept,
            pending: VecDeque::new(),
            seen: HashSet::new(),
            batch: Vec::with_capacity(window),
            locks,
            read_ahead,
            wake_at,
            whole: true,
            handed: 0,
            taken: 0,
            limit: window,
            jump,
            window,
            refresh_after,
            now_ms: DeliverAt::now().epoch_millis(),
            stripe: None,
            stop_after: false,
        }
    }

    /// Keeps the items of `names`, sorted for the kind: the head of a long
    /// listing only, so a consumer's memory does not grow with its backlog
    /// (nor a sharded consumer's with its shards); it lists again when done
    /// with it.
    fn keep(&mut self, names: Vec<String>, listed: bool, stripe: Option<Stripe>) {
        let mut items: Vec<String> = names.into_iter().filter(|n| is_item(n)).collect();
        self.core.kind.sort(&mut items);
        if listed {
            self.control
                .deferred
                .keep_only(&items.iter().map(String::as_str).collect());
        }
        // Others' items left to them are not this pass's to go through.
        self.stripe = stripe;
        // A plain priority consumer claiming alone, with arrivals kept,
        // looks for urgent items while it hands a window over (see
        // `hand`): its windows need not end where it looks. One with
        // stripes does not claim ahead: another's more urgent arrival, left
        // to its owner for a grace, must not wait behind a window of this
        // one's less urgent items.
        if self.locks.is_none() && stripe.is_none() && self.kept.arrivals.is_some() {
            self.window = self.core.options.claim_window;
        }
        let mine = self.kept.others.mine(self.core.kind, items, stripe, self.now_ms);
        if mine.left_out {
            self.whole = false;
            self.wake_at = earliest(self.wake_at, mine.wake_at);
        }
        let mut items = mine.items;
        if items.len() > MAX_PENDING {
            items.truncate(MAX_PENDING);
            items.shrink_to_fit();
            self.relist_now();
        }
        if self.kept.arrivals.is_some() {
            self.seen = items.iter().cloned().collect();
        }
        self.pending = VecDeque::from(items);
        self.limit = self.next_limit();
    }

    /// The most items of the next window: lock-safe, never more locks on
    /// the server than the claim window (the leases held, and orphaned
    /// locks not yet known gone). A lock-safe consumer holding more than
    /// half its window waits, while acknowledgements are on their way, for
    /// room for half a window (or for the items pending, if fewer): one
    /// window is locked while the one before is consumed, instead of a lock
    /// request for every few items acknowledged.
    fn next_limit(&self) -> usize {
        let spread = self.kept.spread.window(self.window);
        if self.locks.is_none() {
            return spread.min(self.window);
        }
        let claim_window = self.core.options.claim_window;
        let want = (claim_window / 2).min(self.pending.len()).min(spread);
        let room = self
            .control
            .leases
            .room(self.core, claim_window, want, || self.control.stopping());
        spread.min(room.max(1))
    }

    /// Lists again at once after this pass, which leaves items behind.
    fn relist_now(&mut self) {
        self.wake_at = Some(Instant::now());
        self.whole = false;
    }

    /// Goes through the pending items until none is left (`Next`) or the
    /// pass stops (`Stop`).
    fn run(&mut self) -> Result<Flow> {
        loop {
            if self.jump && self.batch.is_empty() {
                self.jump_ahead();
            }
            let Some(name) = self.pending.pop_front() else {
                return Ok(Flow::Next);
            };
            if let Flow::Stop = self.step(name)? {
                return Ok(Flow::Stop);
            }
        }
    }

    /// Starts the next window at a random place (see `spread`); the items
    /// skipped are left to the next listing, which comes at once; a
    /// lock-safe pass takes them itself if nobody did within a check.
    fn jump_ahead(&mut self) {
        self.jump = false;
        let range = spread::range(self.core.kind, self.pending.iter(), self.now_ms);
        let skip = self.kept.spread.skip(range, self.limit);
        if skip > 0 {
            let skipped = self.pending.drain(..skip);
            match &mut self.locks {
                Some(view) => view.jumped_over(skipped),
                None => drop(skipped),
            }
            self.relist_now();
        }
    }

    /// Takes the item named into the window (claiming the window once
    /// full), or passes it by, or stops the pass before it.
    fn step(&mut self, name: String) -> Result<Flow> {
        if self.ends_before(&name) {
            self.whole = false;
            return Ok(Flow::Stop);
        }
        if self.refresh_after.is_some_and(|n| self.handed >= n) {
            match self.kept.arrivals.as_ref().and_then(Arrivals::take) {
                Some(arrived) => {
                    let (own, others_first) = self.own_arrivals(arrived, &name);
                    self.pending.push_front(name);
                    merge(self.core.kind, &mut self.pending, &mut self.seen, own);
                    self.handed = 0;
                    return Ok(if others_first { Flow::Stop } else { Flow::Next });
                }
                None if self.latch.is_open() => {
                    self.relist_now();
                    return Ok(Flow::Stop);
                }
                None => {}
            }
        }
        if self.batch.is_empty() && self.abandoned_first(&name)? {
            return Ok(Flow::Next);
        }
        if self.passes_by(&name) {
            return Ok(Flow::Next);
        }
        self.batch.push(name);
        if self.batch.len() < self.limit {
            return Ok(Flow::Next);
        }
        self.claim_full_window()
    }

    /// Of the items that arrived mid-pass, those of this consumer's stripe,
    /// and whether another's is due before `next`. Another's are their
    /// owner's first: a listing right after this pass leaves them to it for
    /// a grace (see `stripes`), and when one of them is more urgent than
    /// `next`, this pass stops for that listing, so nothing less urgent is
    /// taken before it.
    fn own_arrivals(&mut self, arrived: Vec<String>, next: &str) -> (Vec<String>, bool) {
        let Some(stripe) = self.stripe else {
            return (arrived, false);
        };
        let (own, others): (Vec<String>, Vec<String>) = arrived.into_iter().partition(|name| stripe.owns(name));
        if others.is_empty() {
            return (own, false);
        }
        self.relist_now();
        let kind = self.core.kind;
        let first = kind.order_key(next);
        (
            own,
            others.iter().any(|name| is_item(name) && kind.order_key(name) < first),
        )
    }

    /// Whether the pass ends before the item named: the queue is stopping,
    /// or (a delay queue, sorted by due time) it is not due, nor anything
    /// after it; the pass then wakes when it is.
    fn ends_before(&mut self, name: &str) -> bool {
        if self.control.stopping() {
            return true;
        }
        if self.core.kind != Kind::Delay {
            return false;
        }
        let due = delay_epoch(name);
        if due <= self.now_ms {
            return false;
        }
        let due_at = Instant::now() + Duration::from_millis((due - self.now_ms).unsigned_abs());
        self.wake_at = earliest(self.wake_at, Some(due_at));
        true
    }

    /// Lock-safe: puts the items whose holders are gone since ahead of the
    /// item named (they were ahead of it, or will be taken in this pass
    /// anyway); whether there were any.
    fn abandoned_first(&mut self, name: &str) -> Result<bool> {
        let Some(view) = &mut self.locks else {
            return Ok(false);
        };
        let abandoned = view.abandoned(self.core, self.control, self.latch)?;
        if abandoned.is_empty() {
            return Ok(false);
        }
        self.pending.push_front(name.to_owned());
        for item in abandoned.into_iter().rev() {
            self.pending.push_front(item);
        }
        Ok(true)
    }

    /// Whether the item named is not this pass's to claim: locked, set
    /// aside, held or settled by this consumer, or backing off.
    fn passes_by(&self, name: &str) -> bool {
        let control = self.control;
        self.locks.as_ref().is_some_and(|view| view.is_locked(name))
            || control.skipped.lock().contains(name)
            || control.leases.holds(name)
            || control.leases.settled_lately(name)
            || control.deferred.holds_back(name)
    }

    /// Claims the window filled, and learns from what it lost.
    fn claim_full_window(&mut self) -> Result<Flow> {
        let tried = self.batch.len();
        let names = std::mem::take(&mut self.batch);
        let next = self.next_window(&names);
        let (claimed, won) = claim_window(self.core, self.control, self.tx, names, &mut self.read_ahead, next)?;
        if let Some(view) = &mut self.locks {
            view.also_locked(&claimed.held_elsewhere);
        }
        self.handed += claimed.handed;
        self.taken += claimed.handed;
        self.hand_over(won)?;
        let flow = match self.kept.spread.after(tried, claimed.lost, self.window) {
            Next::Continue => Flow::Next,
            Next::Jump => {
                self.jump = true;
                Flow::Next
            }
            Next::Relist => {
                self.relist_now();
                Flow::Stop
            }
        };
        self.limit = self.next_limit();
        // Handing the window over found a reason to look again.
        if std::mem::take(&mut self.stop_after) {
            return Ok(Flow::Stop);
        }
        Ok(flow)
    }

    /// Plain mode: the items the next window (after the one of `names`)
    /// will likely claim, to be read while this one's deletes commit; none
    /// while competing consumers may take them first (the next window may
    /// start elsewhere), nor while reads kept ahead for later windows hold
    /// a window already.
    fn next_window(&self, names: &[String]) -> Vec<String> {
        let this_window = names.iter().filter(|n| self.read_ahead.contains_key(*n)).count();
        let later = self.read_ahead.len() - this_window;
        if self.locks.is_some() || self.jump || self.kept.spread.spreading() || later >= self.window {
            return Vec::new();
        }
        self.pending
            .iter()
            .take_while(|name| self.core.kind != Kind::Delay || delay_epoch(name) <= self.now_ms)
            .filter(|name| !self.read_ahead.contains_key(*name) && !self.passes_by(name))
            .take(self.limit)
            .cloned()
            .collect()
    }

    /// Claims what is left in the window, unless the queue is stopping.
    fn finish_window(&mut self) -> Result<()> {
        if self.batch.is_empty() || self.control.stopping() {
            return Ok(());
        }
        let tried = self.batch.len();
        let names = std::mem::take(&mut self.batch);
        let (claimed, won) = claim_window(
            self.core,
            self.control,
            self.tx,
            names,
            &mut self.read_ahead,
            Vec::new(),
        )?;
        self.taken += claimed.handed;
        self.kept.spread.after(tried, claimed.lost, self.window);
        self.hand_over(won)
    }

    /// Ends the pass: what it leaves for the next, and the watches to keep
    /// (`watches` and the lock directory's).
    fn finish(self, watches: &mut Vec<ChildWatch>) -> Pass {
        // Wake for the first item backing off, once it is due.
        let next_due = self.control.deferred.next_due();
        let mut wake_at = earliest(self.wake_at, next_due);
        // Nothing left behind: the next pass may take the arrivals instead
        // of listing the queue again.
        self.kept.whole = self.whole && next_due.is_none() && !self.control.stopping();
        if self.kept.after_pass(self.core, self.taken) {
            // No watch is left to wake the scanner: it lists at once.
            wake_at = Some(Instant::now());
        }
        watches.extend(self.locks.map(|view| view.watch));
        Pass {
            _watches: std::mem::take(watches),
            wake_at,
        }
    }
}
