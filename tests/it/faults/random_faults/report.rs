//! What a run did, and the checks of it at its end.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::support::leases::LeaseReport;
use crate::support::tally::{Charges, Cost, Faults};
use crate::support::workload::SplitMix64;

use super::{plan, Fault, WINDOW};

/// What a run did; printed through `Debug`.
#[derive(Debug)]
#[allow(dead_code)]
pub(super) struct Report {
    pub(super) seed: u64,
    pub(super) rounds: usize,
    pub(super) ensemble: bool,
    /// The faults the seed plans, by kind.
    pub(super) planned: BTreeMap<Fault, usize>,
    /// The faults seen to fire, by kind.
    pub(super) fired: BTreeMap<Fault, usize>,
    pub(super) items: usize,
    pub(super) nodes_with_several_items: usize,
    pub(super) lost: usize,
    pub(super) duplicates: usize,
    /// Deliveries again of nodes a killed or expired consumer gave up.
    pub(super) redeliveries: usize,
    /// Nodes given up, all charged to faults.
    pub(super) given_up: usize,
    /// The most nodes one fault cost one worker.
    pub(super) most_per_fault: usize,
    /// Faults that cost nodes, and the nodes they cost.
    pub(super) charged: BTreeMap<String, usize>,
    pub(super) stored_twice: usize,
    pub(super) kills: usize,
    /// Kills whose victim held begun, unfinished work when it died.
    pub(super) kills_mid_item: usize,
    pub(super) sessions_lost: usize,
    pub(super) leases_lost: usize,
    pub(super) most_leases_held: usize,
    pub(super) puts_tried_again: usize,
    pub(super) puts_resent: usize,
    /// From a kill to the next delivery of each node the victim had begun and
    /// not acknowledged: count, p50 and max, in milliseconds.
    pub(super) pickup_after_kill_ms: (usize, u64, u64),
    /// What each of those may take: [`KILL_PICKUP`] and its load margin.
    pub(super) pickup_after_kill_allowed: Duration,
    /// From the heal of a session-expiring blackhole to the next delivery of
    /// each node given up with the expired sessions: count, p50 and max, in
    /// milliseconds.
    pub(super) pickup_after_expiry_ms: (usize, u64, u64),
    /// What each of those may take: [`EXPIRY_PICKUP`] and its load margin.
    pub(super) pickup_after_expiry_allowed: Duration,
    pub(super) elapsed: Duration,
}

pub(super) fn p50_max_ms(mut micros: Vec<u64>) -> (usize, u64, u64) {
    micros.sort_unstable();
    match micros.last() {
        None => (0, 0, 0),
        Some(max) => (micros.len(), micros[micros.len() / 2] / 1000, max / 1000),
    }
}

/// The faults the seed plans for a run, by kind: drawn again from the seed,
/// apart from the run's own count of the faults it saw fire.
pub(super) fn planned(seed: u64, rounds: usize, ensemble: bool) -> BTreeMap<Fault, usize> {
    let mut planned = BTreeMap::new();
    for fault in plan(&mut SplitMix64::new(seed), rounds, ensemble) {
        *planned.entry(fault).or_default() += 1;
    }
    planned
}

/// The nodes the faults cost, by the kind of fault charged: kills or expiries.
pub(super) fn charged(charges: &Charges, faults: &Faults) -> BTreeMap<String, usize> {
    let mut charged: BTreeMap<String, usize> = BTreeMap::new();
    for ((f, _), nodes) in &charges.nodes {
        let kind = match faults.0[*f].cost {
            Cost::Kill { .. } => "kills",
            _ => "expiries",
        };
        *charged.entry(kind.to_owned()).or_default() += nodes.len();
    }
    charged
}

/// Asserts that the faults seen to fire are those planned, that the kills
/// cost some node delivered again, and that no consumer held more leases than
/// its window.
pub(super) fn assert_report(report: &Report, sampled: &LeaseReport) {
    assert_eq!(
        report.fired, report.planned,
        "the faults seen to fire (left) are not those the seed plans (right)"
    );
    let kill_cost = report.charged.get("kills").copied().unwrap_or(0);
    assert!(
        report.kills == 0 || kill_cost > 0,
        "the {} kills together cost no node delivered again ({} of them mid-item): no kill was seen to land on \
         work begun",
        report.kills,
        report.kills_mid_item
    );
    assert!(
        sampled.most <= WINDOW,
        "session {:x} held {} leases at once: {:?} ({} samples)",
        sampled.most_by,
        sampled.most,
        sampled.most_names,
        sampled.samples
    );
}
