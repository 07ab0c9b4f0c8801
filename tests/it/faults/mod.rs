//! Real faults: servers restarted, stalled and killed, an ensemble losing its
//! leader, consumer processes killed with `kill -9`, cut and blackholed
//! connections, lost replies and expired sessions.
//!
//! - `outages`: blocked calls and sessions recover from restarts and stalls.
//! - `killed_consumers`, `leases`: the lock-safe delivery guarantees, with
//!   consumer processes killed, and with a consumer's leases under expiry,
//!   lost replies and partitions.
//! - `put_replies`: puts whose create reply is lost.
//! - `put_outages`: puts while no server can be reached for longer than
//!   the request timeout, in the foreground and in the background.
//! - `requeue_replies`: a lock-safe consumer's requeue whose multi, or its
//!   reply, is lost: the item is stored once and delivered again.
//! - `requeue_batch_replies`: the same for a multi requeuing a window of
//!   failed items together.
//! - `random_faults`: a seeded run of random faults under a workload.
//! - `paused_holder`: a holder's process stopped past its session claims
//!   nothing when it resumes.

mod abandoned;
mod deadlines;
mod delete_replies;
mod killed_consumers;
mod lease_cap;
mod leases;
mod lock_window_replies;
mod outages;
mod paused_holder;
mod put_outages;
mod put_replies;
mod random_faults;
mod reattach;
mod recipe_deadlines;
mod requeue_batch_replies;
mod requeue_replies;

use std::path::PathBuf;
use std::thread;
use std::time::{Duration, Instant};

use crate::support::server::unique_path;
use crate::support::tally::Tally;

/// The longest wait for anything a test waits on.
const WAIT: Duration = Duration::from_secs(60);

/// A fresh directory for the workers' output files.
fn work_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(unique_path(name).trim_start_matches('/').replace('/', "-"));
    std::fs::create_dir_all(&dir).expect("a directory for the workers");
    dir
}

/// Waits until the workers writing to `dir` began `n` distinct items.
fn wait_delivered(dir: &std::path::Path, n: usize) {
    let deadline = Instant::now() + WAIT;
    loop {
        let delivered = Tally::read(dir).delivered.len();
        if delivered >= n {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{delivered} of {n} items delivered within {WAIT:?}"
        );
        thread::sleep(Duration::from_millis(20));
    }
}
