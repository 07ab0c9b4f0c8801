//! `Semaphore` and `SemaphoreMutex` against a real server: the lease count
//! across clients, fencing tokens, the count recorded at the path and the
//! mutex's refused reentry (`exclusion`); one path shared with Curator's
//! `InterProcessSemaphoreV2` and `InterProcessSemaphoreMutex` in Java
//! (`curator`); deadlines, killed and expired holders and lost replies
//! (`faults`); the semaphore mutex in the fault matrix, its lost create
//! replies and its token across containers reaped (`mutex_faults`); the
//! round trips an uncontended lease waits for (`round_trips`); the
//! mutex's builder (`builder`).

mod builder;
mod curator;
mod deadlines;
mod exclusion;
mod faults;
mod mutex_faults;
mod round_trips;

use std::time::Duration;

use zk_queue::{recipes::Semaphore, ZkClient};

use crate::support::ledger::Ledger;

/// The longest wait for anything these tests wait on.
const WAIT: Duration = Duration::from_secs(30);

/// A semaphore of `max_leases` at `path` for `client`.
fn semaphore(client: &ZkClient, path: &str, max_leases: usize) -> Semaphore {
    Semaphore::builder(client, path).max_leases(max_leases).build().unwrap()
}

/// Takes a lease of `semaphore` `rounds` times for `hold` each, writing to
/// `ledger` as `<id>.<round>`.
fn take_turns(semaphore: &Semaphore, id: &str, rounds: usize, hold: Duration, ledger: &Ledger) {
    for round in 0..rounds {
        let lease = semaphore.acquire().unwrap();
        let who = format!("{id}.{round}");
        ledger.enter(&who);
        assert!(lease.is_held(), "{who} holds");
        std::thread::sleep(hold);
        ledger.exit(&who);
    }
}

/// The nodes under `<path>/leases` and `<path>/locks`.
fn leases_and_locks(client: &ZkClient, path: &str) -> (Vec<String>, Vec<String>) {
    (
        crate::support::nodes(client, &format!("{path}/leases")),
        crate::support::nodes(client, &format!("{path}/locks")),
    )
}

/// Whether no lease or lock node is left at `path`.
fn nothing_left(client: &ZkClient, path: &str) -> bool {
    let (leases, locks) = leases_and_locks(client, path);
    leases.is_empty() && locks.is_empty()
}
