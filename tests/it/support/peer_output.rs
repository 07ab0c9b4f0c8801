//! A peer process's stdout and stderr as they arrive, read by a thread of
//! their own each, for tests to wait on.

use std::io::{BufRead, BufReader, Read};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Instant, SystemTime};

/// Lines each with the time it was read.
pub type TimedLines = Vec<(SystemTime, String)>;

/// A stream read so far, shared with the thread that reads it.
#[derive(Debug, Default)]
pub struct Output<S> {
    state: Mutex<Sofar<S>>,
    /// Notified after every line and at the end.
    changed: Condvar,
}

/// What was read, and whether the stream ended.
#[derive(Debug, Default)]
struct Sofar<S> {
    read: S,
    /// The peer closed the stream (normally: it exited), or reading failed.
    closed: bool,
}

/// Why a wait on an [`Output`] ended without its condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unmet {
    /// The stream ended (normally: the peer exited).
    Exited,
    /// The deadline passed.
    TimedOut,
}

impl Unmet {
    pub fn as_str(self) -> &'static str {
        match self {
            Unmet::Exited => "exited",
            Unmet::TimedOut => "timed out",
        }
    }
}

impl<S> Output<S> {
    fn lock(&self) -> MutexGuard<'_, Sofar<S>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `f` on what was read so far.
    pub fn with<T>(&self, f: impl FnOnce(&mut S) -> T) -> T {
        f(&mut self.lock().read)
    }

    /// Waits until `met` holds of what was read, or the stream ends, or
    /// `deadline` passes.
    pub fn wait_until(&self, deadline: Instant, met: impl Fn(&S) -> bool) -> Result<(), Unmet> {
        let mut state = self.lock();
        loop {
            if met(&state.read) {
                return Ok(());
            }
            let now = Instant::now();
            if state.closed {
                return Err(Unmet::Exited);
            }
            if now >= deadline {
                return Err(Unmet::TimedOut);
            }
            state = self
                .changed
                .wait_timeout(state, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Adds to what was read, or marks the end, and tells the waiters.
    fn update(&self, f: impl FnOnce(&mut S), closed: bool) {
        let mut state = self.lock();
        f(&mut state.read);
        state.closed |= closed;
        drop(state);
        self.changed.notify_all();
    }
}

impl Output<TimedLines> {
    /// Appends `stdout` line by line until it ends; fails if reading does.
    pub fn read_lines(&self, stdout: impl Read) -> std::io::Result<()> {
        let result = BufReader::new(stdout).lines().try_for_each(|line| {
            let line = line?;
            self.update(|lines| lines.push((SystemTime::now(), line)), false);
            Ok(())
        });
        self.update(|_| {}, true);
        result
    }
}

impl Output<String> {
    /// Appends `stderr` line by line until it ends.
    pub fn read_text(&self, stderr: impl Read) {
        let mut reader = BufReader::new(stderr);
        let mut line = Vec::new();
        loop {
            line.clear();
            // Best effort: whatever was read before an error is still useful.
            let done = !matches!(reader.read_until(b'\n', &mut line), Ok(n) if n > 0);
            self.update(|text| text.push_str(&String::from_utf8_lossy(&line)), done);
            if done {
                return;
            }
        }
    }
}
