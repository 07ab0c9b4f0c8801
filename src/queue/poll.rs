//! How often the queue's waiting threads look up from a wait.

use std::time::Duration;

/// How often a blocked hand-off or state wait of the consumer engine checks
/// for shutdown, and a pull receiver's waiting take for a denial or a close.
pub(in crate::queue) const POLL: Duration = Duration::from_millis(100);
