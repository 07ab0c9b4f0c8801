//! `Barrier` and `DoubleBarrier` against a real server: waiters released by
//! the removal, deadlines with the server down (`single`); members let in
//! and out together, a timed-out member that no longer counts, a stale
//! `ready` that lets no one in (`double`); a member expired inside
//! (`faults`); and one round shared with Curator's
//! `DistributedDoubleBarrier` in Java (`curator`).

mod curator;
mod double;
mod faults;
mod single;

use std::time::Duration;

use zk_queue::{recipes::DoubleBarrier, ZkClient};

use crate::support::ledger::Ledger;
use crate::support::nodes;

/// The longest wait for anything these tests wait on.
const WAIT: Duration = Duration::from_secs(30);

/// What the members of a round write to a ledger: every member, in any
/// thread or process (Rust or Java), appends `arrive <id>` before entering,
/// `entered <id>` once in, `leaving <id>` before leaving and `left <id>`
/// once out.
trait Round {
    /// The line numbers of `step` lines.
    fn steps(&self, step: &str) -> Vec<usize>;
    /// Checks that `members` went through one round together: every member
    /// entered only after the last one arrived, and left only after the
    /// last one began leaving.
    fn check_round(&self, members: usize);
}

impl Round for Ledger {
    fn steps(&self, step: &str) -> Vec<usize> {
        let prefix = format!("{step} ");
        let lines = self.lines();
        (0..lines.len()).filter(|&n| lines[n].starts_with(&prefix)).collect()
    }

    fn check_round(&self, members: usize) {
        let all = self.lines().join("\n");
        for step in ["arrive", "entered", "leaving", "left"] {
            assert_eq!(self.steps(step).len(), members, "{members} {step} lines:\n{all}");
        }
        let last_arrival = self.steps("arrive").into_iter().max();
        let first_entry = self.steps("entered").into_iter().min();
        assert!(
            last_arrival < first_entry,
            "someone entered before the last arrived:\n{all}"
        );
        let last_leaving = self.steps("leaving").into_iter().max();
        let first_out = self.steps("left").into_iter().min();
        assert!(
            last_leaving < first_out,
            "someone left before the last began leaving:\n{all}"
        );
    }
}

/// Goes through one round of `barrier` as `id`, staying inside for `hold`,
/// writing to `ledger`.
fn one_round(barrier: &DoubleBarrier, id: &str, hold: Duration, ledger: &Ledger) {
    ledger.append(&format!("arrive {id}"));
    barrier.enter().unwrap();
    ledger.append(&format!("entered {id}"));
    std::thread::sleep(hold);
    ledger.append(&format!("leaving {id}"));
    barrier.leave().unwrap();
    ledger.append(&format!("left {id}"));
}

/// A member `id` of a barrier of `members` at `path` for `client`.
fn member(client: &ZkClient, path: &str, members: usize, id: &str) -> DoubleBarrier {
    DoubleBarrier::builder(client, path, members).id(id).build().unwrap()
}
