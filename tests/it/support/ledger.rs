//! A file that threads and processes (Rust or Java peers) append lines to,
//! one line per write, so the lines of different writers never mix: the
//! shared record of who did what in which order, for the coordination
//! recipes' tests.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
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

    pub fn path(&self) -> &Path {
        &self.path
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
    /// (`-Dpeer.ledger`, `-Dpeer.holdMs`), once it printed `ready`.
    pub fn peer(&self, mode: &str, path: &str, count: usize, id: &str, hold: Duration, wait: Duration) -> PeerProcess {
        let peer = PeerCommand::new(mode, &shared_connect_string(), path, count)
            .prefix(id)
            .property("peer.ledger", self.path.display())
            .property("peer.holdMs", hold.as_millis())
            .timeout(wait * 2)
            .spawn()
            .unwrap();
        peer.wait_for_stderr_line("ready", wait).unwrap();
        peer
    }
}

impl Default for Ledger {
    fn default() -> Self {
        Ledger::new()
    }
}
