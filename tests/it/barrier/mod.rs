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

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use zk_queue::{recipes::DoubleBarrier, ZkClient};

/// The longest wait for anything these tests wait on.
const WAIT: Duration = Duration::from_secs(30);

/// A file that every member, in any thread or process (Rust or Java),
/// appends to as it goes through a round: `arrive <id>` before entering,
/// `entered <id>` once in, `leaving <id>` before leaving and `left <id>`
/// once out; one line per write, so the lines of different writers never
/// mix.
struct Ledger {
    path: PathBuf,
    /// Keeps the directory while the ledger lives.
    _dir: tempfile::TempDir,
}

impl Ledger {
    fn new() -> Ledger {
        let dir = tempfile::tempdir().expect("a temporary directory");
        Ledger {
            path: dir.path().join("ledger"),
            _dir: dir,
        }
    }

    fn path(&self) -> &Path {
        &self.path
    }

    fn append(&self, line: &str) {
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .expect("open the ledger");
        file.write_all(format!("{line}\n").as_bytes())
            .expect("append to the ledger");
    }

    fn lines(&self) -> Vec<String> {
        std::fs::read_to_string(&self.path)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// The line numbers of `step` lines.
    fn steps(&self, step: &str) -> Vec<usize> {
        let prefix = format!("{step} ");
        let lines = self.lines();
        (0..lines.len()).filter(|&n| lines[n].starts_with(&prefix)).collect()
    }

    /// Checks that `members` went through one round together: every member
    /// entered only after the last one arrived, and left only after the
    /// last one began leaving.
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

/// The nodes under `path` (none if it is missing), sorted.
fn nodes(client: &ZkClient, path: &str) -> Vec<String> {
    match client.get_children(path) {
        Ok((mut children, _)) => {
            children.sort();
            children
        }
        Err(zk_queue::Error::NoNode { .. }) => Vec::new(),
        Err(e) => panic!("listing {path}: {e}"),
    }
}
