//! A file that threads and processes (Rust or Java peers) append lines to,
//! one line per write, so the lines of different writers never mix: the
//! shared record of who did what in which order, for the coordination
//! recipes' tests, and the checks of what a lock's ledger shows.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use super::java::{PeerCommand, PeerProcess};
use super::server::shared_connect_string;

/// An append-only file in a temporary directory of its own.
pub struct Ledger {
    path: PathBuf,
    /// Keeps the directory while the ledger lives.
    _dir: tempfile::TempDir,
}

impl Ledger {
    pub fn new() -> Ledger {
        let dir = tempfile::tempdir().expect("a temporary directory");
        Ledger {
            path: dir.path().join("ledger"),
            _dir: dir,
        }
    }

    /// Appends `line` in one write.
    pub fn append(&self, line: &str) {
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .expect("open the ledger");
        file.write_all(format!("{line}\n").as_bytes())
            .expect("append to the ledger");
    }

    pub fn lines(&self) -> Vec<String> {
        std::fs::read_to_string(&self.path)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// A Java peer in `mode` on `path` of the shared server, as `id`,
    /// writing to this ledger and staying `hold` at each step it waits at
    /// (`-Dpeer.ledger`, `-Dpeer.holdMs`), not started yet.
    pub fn peer_command(&self, mode: &str, path: &str, count: usize, id: &str, hold: Duration) -> PeerCommand {
        PeerCommand::new(mode, &shared_connect_string(), path, count)
            .prefix(id)
            .property("peer.ledger", self.path.display())
            .property("peer.holdMs", hold.as_millis())
    }

    /// The peer of [`Ledger::peer_command`], started, once it printed
    /// `ready`.
    pub fn peer(&self, mode: &str, path: &str, count: usize, id: &str, hold: Duration, wait: Duration) -> PeerProcess {
        ready(self.peer_command(mode, path, count, id, hold), wait)
    }

    // Lock ledgers: every holder, in any thread or process, appends
    // `enter <who>` once it holds and `exit <who>` before it releases.

    pub fn enter(&self, who: &str) {
        self.append(&format!("enter {who}"));
    }

    pub fn exit(&self, who: &str) {
        self.append(&format!("exit {who}"));
    }

    /// The participants in the order they entered.
    pub fn entries(&self) -> Vec<String> {
        self.lines()
            .iter()
            .filter_map(|line| line.strip_prefix("enter ").map(str::to_owned))
            .collect()
    }

    /// Checks that at most `max` participants were inside at once, each
    /// leaving only after it entered; returns how many entries there were
    /// and the most inside at once.
    pub fn check(&self, max: usize) -> (usize, usize) {
        self.check_that(&format!("at most {max}"), |inside| inside.len() <= max)
    }

    /// Checks that readers (whose names start with `r`) were inside only
    /// beside readers and writers (any other name) only alone; returns how
    /// many entries there were and the most inside at once.
    pub fn check_readers_writers(&self) -> (usize, usize) {
        self.check_that("readers beside readers, writers alone", |inside| {
            inside.len() <= 1 || inside.iter().all(|who| who.starts_with('r'))
        })
    }

    /// Checks that `allowed` holds of the participants inside after every
    /// entry, each leaving only after it entered; returns how many entries
    /// there were and the most inside at once.
    fn check_that(&self, rule: &str, allowed: impl Fn(&[String]) -> bool) -> (usize, usize) {
        let mut inside: Vec<String> = Vec::new();
        let (mut entries, mut most) = (0, 0);
        for (n, line) in self.lines().iter().enumerate() {
            match line.split_once(' ') {
                Some(("enter", who)) => {
                    inside.push(who.to_owned());
                    entries += 1;
                    most = most.max(inside.len());
                    assert!(
                        allowed(&inside),
                        "line {n}: {inside:?} inside at once ({rule}):\n{}",
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

impl Default for Ledger {
    fn default() -> Self {
        Ledger::new()
    }
}

/// Starts `peer` (bounded at twice `wait`) and waits for its `ready`.
pub fn ready(peer: PeerCommand, wait: Duration) -> PeerProcess {
    let peer = peer.timeout(wait * 2).spawn().unwrap();
    peer.wait_for_stderr_line("ready", wait).unwrap();
    peer
}
