//! Threads that can be joined within a deadline.

use std::thread::JoinHandle;
use std::time::Instant;

use super::Latch;

/// A named thread whose end can be awaited with a deadline: a close that
/// must return in time joins it if it ends in time, and otherwise leaves it
/// to finish on its own.
pub(crate) struct Joiner {
    handle: JoinHandle<()>,
    /// Opened when the thread's body returns or panics.
    ended: Latch,
}

/// Opens its latch when dropped, so a panicking body opens it too.
struct OpenOnDrop(Latch);

impl Drop for OpenOnDrop {
    fn drop(&mut self) {
        self.0.open();
    }
}

impl Joiner {
    /// Starts `body` on a thread named `name`.
    pub(crate) fn spawn(name: &str, body: impl FnOnce() + Send + 'static) -> std::io::Result<Joiner> {
        let ended = Latch::new();
        let opener = OpenOnDrop(ended.clone());
        let handle = std::thread::Builder::new().name(name.into()).spawn(move || {
            let _opener = opener;
            body();
        })?;
        Ok(Joiner { handle, ended })
    }

    /// The thread.
    pub(crate) fn thread(&self) -> &std::thread::Thread {
        self.handle.thread()
    }

    /// Joins the thread if it ends by `deadline` (`None`: waits for it).
    /// Returns whether it ended; a panic is logged as the thread's `what`.
    /// A thread still running at the deadline is left to end on its own.
    pub(crate) fn join_until(self, deadline: Option<Instant>, what: &str) -> bool {
        if !self.ended.wait_until(deadline) {
            log::debug!("the {what} thread is still running at the deadline; it ends on its own");
            return false;
        }
        if self.handle.join().is_err() {
            log::error!("the {what} thread panicked");
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_thread_that_ends_in_time_is_joined() {
        let thread = Joiner::spawn("test-quick", || {}).unwrap();
        assert!(thread.join_until(Some(Instant::now() + Duration::from_secs(10)), "quick"));
    }

    #[test]
    fn a_thread_still_running_at_the_deadline_is_left_running() {
        let (release, wait) = crossbeam_channel::bounded::<()>(0);
        let thread = Joiner::spawn("test-slow", move || {
            let _ = wait.recv();
        })
        .unwrap();
        let started = Instant::now();
        assert!(!thread.join_until(Some(started + Duration::from_millis(50)), "slow"));
        assert!(started.elapsed() < Duration::from_secs(5));
        drop(release);
    }

    #[test]
    fn a_panicking_thread_counts_as_ended() {
        let thread = Joiner::spawn("test-panic", || panic!("on purpose")).unwrap();
        assert!(thread.join_until(Some(Instant::now() + Duration::from_secs(10)), "panicking"));
    }
}
