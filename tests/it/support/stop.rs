//! The flag that tells a test's threads to stop.
//!
//! A `thread::scope` joins its threads before it passes a panic on: a test
//! whose assertion fails while its threads loop until told to stop would
//! wait for them for ever. [`Stop::on_drop`] tells them also then.

use std::sync::atomic::{AtomicBool, Ordering};

/// Set once, read by every thread that loops until the test is over.
#[derive(Default)]
pub struct Stop(AtomicBool);

impl Stop {
    pub fn new() -> Stop {
        Stop::default()
    }

    pub fn stop(&self) {
        self.0.store(true, Ordering::Release);
    }

    pub fn stopped(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }

    /// A guard that stops when dropped: at the end of the scope, and on a
    /// panic alike.
    pub fn on_drop(&self) -> StopOnDrop<'_> {
        StopOnDrop(self)
    }
}

/// Stops its [`Stop`] when dropped.
pub struct StopOnDrop<'a>(&'a Stop);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.stop();
    }
}
