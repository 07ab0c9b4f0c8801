//! `Mutex` against a real server: exclusion, order, reentrancy, leases,
//! watches and fencing tokens (`exclusion`); deadlines, session expiry,
//! killed holders and lost replies (`faults`); the round trips an
//! acquisition waits for (`round_trips`); and one lock shared with
//! Curator's `InterProcessMutex` in Java (`curator`); a hold in doubt
//! confirmed after a cut (`recheck`).

mod curator;
mod exclusion;
mod faults;
mod recheck;
mod round_trips;

use std::time::Duration;

use zk_queue::{recipes::Mutex, ZkClient};

use crate::support::ledger::Ledger;
use crate::support::nodes;

/// The longest wait for anything these tests wait on.
const WAIT: Duration = Duration::from_secs(30);

/// Holds `mutex` `rounds` times for `hold` each, writing to `ledger` as
/// `<id>.<round>`.
fn take_turns(mutex: &Mutex, id: &str, rounds: usize, hold: Duration, ledger: &Ledger) {
    for round in 0..rounds {
        let guard = mutex.lock().unwrap();
        let who = format!("{id}.{round}");
        ledger.enter(&who);
        assert!(guard.is_held(), "{who} holds");
        std::thread::sleep(hold);
        ledger.exit(&who);
    }
}

/// A mutex at `path` for `client`.
fn mutex(client: &ZkClient, path: &str) -> Mutex {
    Mutex::builder(client, path).build().unwrap()
}
