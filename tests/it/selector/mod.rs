//! `LeaderSelector` against a real server: turns, close, panics and
//! requeueing (`turns`), leadership under session expiry and node loss
//! (`faults`), and one election shared with Curator's `LeaderSelector` in
//! Java (`curator`).

mod curator;
mod faults;
mod turns;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use zk_queue::recipes::{LeaderContext, LeaderSelector};
use zk_queue::ZkClient;

use crate::support::ledger::Ledger;

/// The longest wait for anything these tests wait on.
const WAIT: Duration = Duration::from_secs(30);

/// When each term of one participant began and ended, and whether its
/// closure saw the loss (`lost` disconnected) before the end.
#[derive(Clone, Default)]
struct Terms(Arc<Mutex<Vec<Term>>>);

#[derive(Clone, Copy, Debug)]
struct Term {
    began: Instant,
    ended: Instant,
    /// When the context reported the loss, if it did.
    lost_at: Option<Instant>,
    /// Whether the context said it led when the term began (it may have
    /// lost leadership already).
    led: bool,
    token: u64,
}

impl Terms {
    fn all(&self) -> Vec<Term> {
        self.0.lock().unwrap().clone()
    }
}

/// A closure that leads for up to `hold` per term (less if leadership is
/// lost first), writing `enter/exit <id>.<n>` to `ledger` and each term to
/// the returned [`Terms`].
fn ledger_lead(
    ledger: &Arc<Ledger>,
    id: &str,
    hold: Duration,
) -> (impl FnMut(&LeaderContext<'_>) + Send + 'static, Terms) {
    let (ledger, id, terms) = (Arc::clone(ledger), id.to_owned(), Terms::default());
    let record = terms.clone();
    let mut n = 0;
    let lead = move |leader: &LeaderContext<'_>| {
        let began = Instant::now();
        n += 1;
        let who = format!("{id}.{n}");
        ledger.enter(&who);
        let led = leader.is_leader();
        let lost = leader.lost();
        let lost_at = match lost.recv_timeout(hold) {
            Err(crossbeam_channel::RecvTimeoutError::Disconnected) => Some(Instant::now()),
            _ => None,
        };
        ledger.exit(&who);
        record.0.lock().unwrap().push(Term {
            began,
            ended: Instant::now(),
            lost_at,
            led,
            token: leader.token(),
        });
    };
    (lead, terms)
}

/// A selector on `path` for `client` as `id`, leading `hold` per term into
/// `ledger`.
fn selector(client: &ZkClient, path: &str, id: &str, hold: Duration, ledger: &Arc<Ledger>) -> (LeaderSelector, Terms) {
    let (lead, terms) = ledger_lead(ledger, id, hold);
    let selector = LeaderSelector::builder(client, path, lead).id(id).build().unwrap();
    (selector, terms)
}

/// Checks, about every millisecond until `stop` is set, that no two of
/// `selectors` lead at once; returns how many times each was seen leading.
fn never_two(selectors: &[&LeaderSelector], stop: &AtomicBool) -> Vec<u64> {
    let mut seen = vec![0; selectors.len()];
    loop {
        // One last sample once stopped: what the test saw when it stopped
        // the checker is sampled too, however late this thread ran.
        let stopping = stop.load(Ordering::Acquire);
        let leading: Vec<bool> = selectors.iter().map(|s| s.has_leadership()).collect();
        let ids: Vec<&str> = selectors
            .iter()
            .zip(&leading)
            .filter(|(_, l)| **l)
            .map(|(s, _)| s.id())
            .collect();
        assert!(ids.len() <= 1, "two participants lead at once: {ids:?}");
        for (count, leads) in seen.iter_mut().zip(leading) {
            *count += u64::from(leads);
        }
        if stopping {
            return seen;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}
