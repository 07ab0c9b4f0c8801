//! Room in a bounded queue: a put waits while the queue node holds its
//! maximum of items.

use std::time::Instant;

use super::Store;
use crate::client::Opts;
use crate::error::{Error, Result};
use crate::naming::is_item;
use crate::sync::Latch;

impl Store {
    /// Waits until the queue holds fewer than `max` items (counted afresh,
    /// queue items only), or the deadline passes; false then.
    pub(crate) fn wait_for_room(&self, max: usize, deadline: Option<Instant>) -> Result<bool> {
        loop {
            let opts = Opts::new().until(deadline);
            let (names, _, watch) = match self.client.watch_children(&self.path, &Latch::new(), opts) {
                Err(Error::NoNode { .. }) => return Ok(true),
                other => other?,
            };
            if names.iter().filter(|n| is_item(n)).count() < max {
                return Ok(true);
            }
            let _guard = self.client.wake_on_state_change(watch.latch());
            if !watch.latch().wait_until(deadline) {
                return Ok(false);
            }
        }
    }
}
