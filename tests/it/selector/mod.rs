//! `LeaderSelector` against a real server: turns, close, panics and
//! requeueing (`turns`), leadership under session expiry and node loss
//! (`faults`), and one election shared with Curator's `LeaderSelector` in
//! Java (`curator`).

mod curator;
mod faults;
mod turns;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use zk_queue::recipes::{LeaderContext, LeaderSelector};
use zk_queue::ZkClient;

use crate::support::ledger::Ledger;
use crate::support::sightings::Sightings;
use crate::support::Stop;

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
/// `selectors` lead at once, counting in `seen` the samples that saw each
/// lead; returns those counts.
fn never_two(selectors: &[&LeaderSelector], stop: &Stop, seen: &Sightings) -> Vec<u64> {
    // Whether each leads, and in which term: the term read before and
    // after, so that a term that began between the two reads is not
    // mistaken for the one read.
    let sample = || -> Vec<(bool, u64)> {
        selectors
            .iter()
            .map(|s| {
                let term = s.terms();
                (s.has_leadership() && s.terms() == term, term)
            })
            .collect()
    };
    loop {
        // One last sample once stopped: what the test saw when it stopped
        // the checker is sampled too, however late this thread ran.
        let stopping = stop.stopped();
        // Two rounds: a participant that leads at both in the same term
        // led all the time between its two reads; every first read comes
        // before every second, so two such participants led at one moment.
        // (A single round would see a hand-off between two reads as two
        // leaders when this thread is preempted between them.)
        let (first, second) = (sample(), sample());
        let leading: Vec<bool> = first
            .iter()
            .zip(&second)
            .map(|(a, b)| a.0 && b.0 && a.1 == b.1)
            .collect();
        let ids: Vec<String> = selectors
            .iter()
            .zip(&leading)
            .filter(|(_, l)| **l)
            .map(|(s, _)| format!("{} (term {}, {:?})", s.id(), s.terms(), s.state()))
            .collect();
        assert!(ids.len() <= 1, "two participants lead at once: {ids:?}");
        for (n, leads) in first.iter().enumerate() {
            seen.saw(n, leads.0);
        }
        if stopping {
            return seen.counts();
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}
