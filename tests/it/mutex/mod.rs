//! `Mutex` against a real server: exclusion, order, reentrancy, leases,
//! watches and fencing tokens (`exclusion`); deadlines, session expiry,
//! killed holders and lost replies (`faults`); and one lock shared with
//! Curator's `InterProcessMutex` in Java (`curator`).

mod curator;
mod exclusion;
mod faults;

use std::time::Duration;

use zk_queue::{recipes::Mutex, ZkClient};

use crate::support::ledger::Ledger;
use crate::support::nodes;

/// The longest wait for anything these tests wait on.
const WAIT: Duration = Duration::from_secs(30);

/// What the holders write to a ledger: every holder, in any thread or
/// process (Rust or Java), appends `enter <who>` once it holds and
/// `exit <who>` before it releases.
trait Turns {
    fn enter(&self, who: &str);
    fn exit(&self, who: &str);
    /// The participants in the order they entered.
    fn entries(&self) -> Vec<String>;
    /// Checks that at most `max` participants were inside at once, each
    /// leaving only after it entered; returns how many entries there were
    /// and the most inside at once.
    fn check(&self, max: usize) -> (usize, usize);
}

impl Turns for Ledger {
    fn enter(&self, who: &str) {
        self.append(&format!("enter {who}"));
    }

    fn exit(&self, who: &str) {
        self.append(&format!("exit {who}"));
    }

    fn entries(&self) -> Vec<String> {
        self.lines()
            .iter()
            .filter_map(|line| line.strip_prefix("enter ").map(str::to_owned))
            .collect()
    }

    fn check(&self, max: usize) -> (usize, usize) {
        let mut inside: Vec<String> = Vec::new();
        let (mut entries, mut most) = (0, 0);
        for (n, line) in self.lines().iter().enumerate() {
            match line.split_once(' ') {
                Some(("enter", who)) => {
                    inside.push(who.to_owned());
                    entries += 1;
                    most = most.max(inside.len());
                    assert!(
                        inside.len() <= max,
                        "line {n}: {inside:?} inside at once (at most {max}):\n{}",
                        self.lines().join("\n")
                    );
                }
                Some(("exit", who)) => {
                    let at = inside.iter().position(|w| w == who);
                    let at = at.unwrap_or_else(|| panic!("line {n}: {who} leaves without having entered"));
                    inside.remove(at);
                }
                _ => panic!("line {n}: {line:?} is no ledger line"),
            }
        }
        assert!(inside.is_empty(), "{inside:?} never left");
        (entries, most)
    }
}

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
