//! A ledger that participants of a lock write as they enter and leave, and
//! the checks of what it shows.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

/// A file that every holder, in any thread or process (Rust or Java),
/// appends `enter <who>` to once it holds and `exit <who>` to before it
/// releases: one line per write, so the lines of different writers never
/// mix.
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

    pub fn append(&self, line: &str) {
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .expect("open the ledger");
        file.write_all(format!("{line}\n").as_bytes())
            .expect("append to the ledger");
    }

    pub fn enter(&self, who: &str) {
        self.append(&format!("enter {who}"));
    }

    pub fn exit(&self, who: &str) {
        self.append(&format!("exit {who}"));
    }

    pub fn lines(&self) -> Vec<String> {
        std::fs::read_to_string(&self.path)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
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
