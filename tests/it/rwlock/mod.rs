//! `RwLock` against a real server: readers share, writers are alone, the
//! line is fair, reentrancy and the downgrade (`exclusion`); deadlines with
//! the server down, lost create replies and session expiry (`faults`); and
//! one lock shared with Curator's `InterProcessReadWriteLock` in Java
//! (`curator`).

mod curator;
mod exclusion;
mod faults;

use std::time::Duration;

use zk_queue::{recipes::RwLock, ZkClient};

use crate::support::ledger::Ledger;
use crate::support::nodes;

/// The longest wait for anything these tests wait on.
const WAIT: Duration = Duration::from_secs(30);

/// Which half of the lock a participant takes.
#[derive(Clone, Copy, Debug)]
enum Role {
    Read,
    Write,
}

/// Takes the `role` half of `lock` `rounds` times for `hold` each, writing
/// to `ledger` as `<id>.<round>`; readers' ids start with `r`, as the
/// ledger's check wants.
fn take_turns(lock: &RwLock, role: Role, id: &str, rounds: usize, hold: Duration, ledger: &Ledger) {
    for round in 0..rounds {
        let who = format!("{id}.{round}");
        // Written while the guard lives: entered once held, left before
        // the release.
        let inside = |is_held: &dyn Fn() -> bool| {
            ledger.enter(&who);
            std::thread::sleep(hold);
            assert!(is_held(), "{who} held throughout");
            ledger.exit(&who);
        };
        match role {
            Role::Read => {
                let guard = lock.read().unwrap();
                inside(&|| guard.is_held());
            }
            Role::Write => {
                let guard = lock.write().unwrap();
                inside(&|| guard.is_held());
            }
        }
    }
}

/// A read-write lock at `path` for `client`.
fn rwlock(client: &ZkClient, path: &str) -> RwLock {
    RwLock::builder(client, path).build().unwrap()
}
