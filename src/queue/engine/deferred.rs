//! Items backing off after a failure, as this consumer found them: each
//! requeued node records when it is due again (its not-before time, by the
//! requeuing consumer's clock), and this consumer reads that once per node,
//! then skips the node without reading it again until it is due, and wakes
//! its scanner for the earliest one.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::queue::DeliverAt;

/// Node names of items not due yet, with their not-before times (epoch
/// milliseconds).
pub(super) struct Deferred {
    due: Mutex<HashMap<String, i64>>,
}

impl Deferred {
    pub(super) fn new() -> Deferred {
        Deferred {
            due: Mutex::new(HashMap::new()),
        }
    }

    /// If `not_before` is still to come, remembers that item `name` is not
    /// due before then and returns true.
    pub(super) fn defer(&self, name: &str, not_before: Option<i64>) -> bool {
        match not_before {
            Some(at) if at > now_ms() => {
                log::debug!("{name} backs off until {at} (epoch ms)");
                self.due.lock().insert(name.to_owned(), at);
                true
            }
            _ => false,
        }
    }

    /// Whether item `name` is known not to be due yet; one that came due is
    /// forgotten.
    pub(super) fn holds_back(&self, name: &str) -> bool {
        let mut due = self.due.lock();
        match due.get(name) {
            Some(at) if *at > now_ms() => true,
            Some(_) => {
                due.remove(name);
                false
            }
            None => false,
        }
    }

    /// Forgets the items not among `listed` (taken by another consumer).
    pub(super) fn keep_only(&self, listed: &HashSet<&str>) {
        self.due.lock().retain(|name, _| listed.contains(name.as_str()));
    }

    /// When the earliest item remembered comes due.
    pub(super) fn next_due(&self) -> Option<Instant> {
        let earliest = self.due.lock().values().copied().min()?;
        let wait = u64::try_from(earliest.saturating_sub(now_ms())).unwrap_or(0);
        Instant::now().checked_add(Duration::from_millis(wait))
    }
}

fn now_ms() -> i64 {
    DeliverAt::now().epoch_millis()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_are_held_back_until_due_then_forgotten() {
        let deferred = Deferred::new();
        assert!(!deferred.defer("past", Some(now_ms() - 1)));
        assert!(!deferred.defer("none", None));
        assert!(deferred.defer("soon", Some(now_ms() + 150)));
        assert!(deferred.defer("later", Some(now_ms() + 60_000)));
        assert!(deferred.holds_back("soon") && deferred.holds_back("later"));
        assert!(!deferred.holds_back("past"));
        let wake = deferred.next_due().expect("a wake-up");
        assert!(wake <= Instant::now() + Duration::from_millis(150));
        while Instant::now() < wake + Duration::from_millis(5) {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(!deferred.holds_back("soon"), "due now");
        deferred.keep_only(&HashSet::from(["soon"]));
        assert!(!deferred.holds_back("later"), "no longer listed");
        assert_eq!(deferred.next_due(), None);
    }
}
