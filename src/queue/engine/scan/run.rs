//! The scanner's loop: a pass, then a wait for a watch, a connection
//! change, a due item or the rescan interval; a pass that failed is tried
//! again after a pause that grows while the failures persist.

use std::time::Instant;

use crossbeam_channel::Sender;

use super::pass::{self, Pass};
use crate::queue::core::Core;
use crate::queue::engine::kept::Kept;
use crate::queue::engine::{Control, Work, MAX_BACKOFF, POLL};
use crate::sync::{earliest, Backoff, Latch};

pub(in crate::queue::engine) fn scan_loop<T: Send + 'static>(core: &Core<T>, control: &Control, tx: Sender<Work<T>>) {
    let mut backoff = Backoff::new(POLL, MAX_BACKOFF);
    let mut kept = Kept::new(core);
    while !control.stopping() {
        let latch = Latch::new();
        *control.wake.lock() = latch.clone();
        if control.stopping() {
            break;
        }
        // Connection changes (and a new session) wake the scanner to list again.
        let _guard = core.client.wake_on_state_change(&latch);
        match pass::scan(core, control, &tx, &latch, &mut kept) {
            Ok(pass) => {
                backoff.reset();
                wait_after(core, &latch, &pass);
            }
            Err(e) => {
                let pause = backoff.pause();
                log::log!(
                    backoff.log_level(),
                    "queue {}: {e}; scanning again in {pause:?}",
                    core.path
                );
                core.tell_error(&e);
                latch.wait_until(Some(Instant::now() + pause));
            }
        }
    }
    // The others take this consumer's stripe at once.
    kept.registry.leave(core);
}

/// Waits, after a pass that went well, for its latch or for the pass's
/// wake-up time, whichever comes first; at most the rescan interval.
fn wait_after<T: Send + 'static>(core: &Core<T>, latch: &Latch, pass: &Pass) {
    // Also list again after a while: ZooKeeper drops some watch events (see
    // `QueueBuilder::rescan_interval`). An interval too long to add means
    // never.
    let rescan_at = Instant::now().checked_add(core.options.rescan_interval);
    latch.wait_until(earliest(pass.wake_at, rescan_at));
}
