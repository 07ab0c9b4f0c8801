//! Counts of the requests a client has sent, and how long it waited for
//! their answers.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// How many requests of each kind a [`ZkClient`](crate::ZkClient) has sent,
/// retries included, since it connected (all clones share the counts), and
/// how long it had a request in flight.
///
/// ```no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
/// client.exists("/")?;
/// assert_eq!(client.stats().exists, 1);
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClientStats {
    /// Creates.
    pub create: u64,
    /// Deletes.
    pub delete: u64,
    /// Existence checks.
    pub exists: u64,
    /// Data reads (a multi-read of many nodes is one).
    pub get_data: u64,
    /// Data writes.
    pub set_data: u64,
    /// Children listings, with or without a watch.
    pub get_children: u64,
    /// Multi transactions.
    pub multi: u64,
    /// Anything else (authentication, ACL reads and writes).
    pub other: u64,
    /// How long, in all, at least one request was in flight: written and
    /// not yet answered (or failed). Pipelined requests overlap, so this is
    /// the time the client spent waiting on a server, not a sum of round
    /// trips; beside a run's length it tells how much of the run was
    /// bounded by the server's answers. A period still going on is counted
    /// once it ends.
    pub waiting: Duration,
}

impl ClientStats {
    /// Every request counted, of every kind.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// client.exists("/")?;
    /// assert!(client.stats().total() >= 1);
    /// # Ok(())
    /// # }
    /// ```
    pub fn total(&self) -> u64 {
        self.create
            + self.delete
            + self.exists
            + self.get_data
            + self.set_data
            + self.get_children
            + self.multi
            + self.other
    }
}

/// The live counters behind [`ClientStats`].
#[derive(Debug, Default)]
pub(crate) struct Counters([AtomicU64; 8]);

const NAMES: [&str; 7] = [
    "create",
    "delete",
    "exists",
    "get_data",
    "set_data",
    "get_children",
    "multi",
];

impl Counters {
    /// Counts one request of `operation`.
    pub(crate) fn count(&self, operation: &str) {
        let slot = NAMES.iter().position(|n| *n == operation).unwrap_or(NAMES.len());
        self.0[slot].fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self) -> ClientStats {
        let v = |i: usize| self.0[i].load(Ordering::Relaxed);
        ClientStats {
            create: v(0),
            delete: v(1),
            exists: v(2),
            get_data: v(3),
            set_data: v(4),
            get_children: v(5),
            multi: v(6),
            other: v(7),
            waiting: Duration::ZERO,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_land_in_their_own_slot() {
        let c = Counters::default();
        for op in ["create", "delete", "delete", "get_children", "add_auth"] {
            c.count(op);
        }
        let s = c.snapshot();
        assert_eq!((s.create, s.delete, s.get_children, s.other, s.multi), (1, 2, 1, 1, 0));
    }
}
