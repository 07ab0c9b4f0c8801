//! The selector's thread: waits in line at the lock, runs the closure for
//! each term of leadership, releases, and requeues or leaves; and the
//! watcher of one term, which reports a closure that overruns its loss.

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

use super::context::LeaderContext;
use super::state::{SelectorState, Shared, TermEnd};
use crate::recipes::MutexGuard;
use crate::sync::{Backoff, Latch};

/// The closure a selector runs for each term.
pub(super) type Lead = Box<dyn FnMut(&LeaderContext<'_>) + Send>;

/// The first pause after a failed attempt to join the line, doubling up to
/// [`MAX_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(100);
const MAX_PAUSE: Duration = Duration::from_secs(5);

pub(super) fn run(shared: &Shared, mut lead: Lead) {
    let mut backoff = Backoff::new(FIRST_PAUSE, MAX_PAUSE);
    while !shared.stop.is_open() {
        shared.set_state(SelectorState::Queued);
        let guard = match shared.mutex.lock_cancellable() {
            Ok(Some(guard)) => guard,
            // Cancelled: the selector is closing.
            Ok(None) => break,
            Err(e) => {
                let pause = backoff.pause();
                log::log!(
                    backoff.log_level(),
                    "leader selector {}: cannot join the line: {e}; trying again in {pause:?}",
                    shared.path
                );
                // A reconnection ends the pause: the line is reachable again.
                let wake = Latch::new();
                let _states = shared.client.wake_on_state_change(&wake);
                shared.stop.forward_to(&wake);
                wake.wait_until(Some(Instant::now() + pause));
                continue;
            }
        };
        backoff.reset();
        if shared.stop.is_open() {
            break;
        }
        let end = term(shared, &guard, &mut lead);
        // The term ends before the node goes: once it is deleted, the next
        // participant may lead at once, and this one must not still say
        // it leads. Released before this one queues again.
        shared.end_term();
        drop(guard);
        if shared.closes_after_term() {
            log::info!(
                "leader selector {} ({}): closed by its closure after its term",
                shared.path,
                shared.id
            );
            break;
        }
        if shared.auto_requeue || shared.stop.is_open() {
            continue;
        }
        shared.set_state(SelectorState::Left(end));
        if !shared.wait_for_requeue() {
            break;
        }
    }
    shared.set_closed();
}

/// One term: runs the closure while a watcher reports an overrun of its
/// loss; returns how it ended.
fn term(shared: &Shared, guard: &MutexGuard<'_>, lead: &mut Lead) -> TermEnd {
    let latch = Latch::new();
    guard.forward_loss_to(&latch);
    shared.stop.forward_to(&latch);
    shared.begin_term(&latch);
    let returned = Latch::new();
    let context = LeaderContext::new(guard, &latch, shared);
    let outcome = std::thread::scope(|s| {
        let watcher = std::thread::Builder::new()
            .name("zkq-selector-watch".into())
            .spawn_scoped(s, || watch(shared, &latch, &returned));
        if let Err(e) = watcher {
            log::warn!(
                "leader selector {}: cannot start the watcher of the term ({e}): an overrun goes unreported",
                shared.path
            );
        }
        let outcome = catch_unwind(AssertUnwindSafe(|| lead(&context)));
        returned.open();
        outcome
    });
    match outcome {
        Err(panic) => {
            let message = panic_message(&*panic);
            log::error!(
                "leader selector {} ({}): the leader's closure panicked: {message}; leadership is released",
                shared.path,
                shared.id
            );
            shared.record_panic(message);
            TermEnd::Panicked
        }
        Ok(()) if latch.is_open() => TermEnd::Lost,
        Ok(()) => TermEnd::Returned,
    }
}

/// Waits for the term's loss or the closure's return; at a loss first,
/// reports the closure as overrunning, and warns if it has not returned
/// within the grace.
fn watch(shared: &Shared, lost: &Latch, returned: &Latch) {
    let (lost_rx, returned_rx) = (lost.receiver(), returned.receiver());
    crossbeam_channel::select! {
        recv(lost_rx) -> _ => {}
        recv(returned_rx) -> _ => return,
    }
    if returned.is_open() {
        return;
    }
    let since = Instant::now();
    shared.overrunning();
    if !returned.wait_until(Some(since + shared.overrun_grace)) {
        log::warn!(
            "leader selector {} ({}): the leader's closure still runs {:?} after leadership was lost or in doubt; \
             another participant may lead beside it: it must return once its context says so",
            shared.path,
            shared.id,
            shared.overrun_grace
        );
        returned.wait_until(None);
        log::warn!(
            "leader selector {} ({}): the leader's closure returned {:?} after leadership was lost",
            shared.path,
            shared.id,
            since.elapsed()
        );
    }
}

/// The message of a panic's payload, if it is text.
fn panic_message(panic: &(dyn Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic with a payload that is not text".to_owned())
}
