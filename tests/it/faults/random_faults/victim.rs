//! A killed worker and the pick-up of the nodes it held.

use std::time::Duration;

use zk_queue::ZkClient;

use crate::support::tally::Tally;
use crate::support::worker::WorkerConfig;
use crate::support::workload::wait_picked_up_after_kill;
use crate::support::Bound;

use super::KILL_PICKUP;

/// A killed worker, its last session, and when the signal went.
pub(super) struct Victim {
    pub(super) worker: usize,
    pub(super) session: i64,
    pub(super) killed_at: u64,
}

impl Victim {
    /// Waits until the server expired the victim's session and every node
    /// it had begun was begun again (see [`wait_picked_up_after_kill`]);
    /// asserts that each node it held begun and unfinished when it died was
    /// (or it is lost), and within [`KILL_PICKUP`] and its margin. Returns how
    /// long after the kill each node was begun again (µs), and how many nodes
    /// it held unfinished.
    pub(super) fn picked_up(
        &self,
        round: usize,
        dir: &std::path::Path,
        direct: &ZkClient,
        config: &WorkerConfig,
    ) -> (Vec<u64>, usize) {
        let Victim {
            worker,
            session,
            killed_at,
        } = *self;
        let marker = config.session_marker(session);
        let pickups = wait_picked_up_after_kill(dir, direct, &config.queue, &marker, worker, killed_at);
        let tally = Tally::read(dir);
        let log = &tally.workers[&worker];
        let unfinished = log
            .sessions
            .last()
            .map(|s| log.unfinished_nodes(*s))
            .unwrap_or_default();
        let lost: Vec<&String> = unfinished
            .iter()
            .filter(|node| !pickups.iter().any(|(p, _)| p == *node))
            .collect();
        assert!(
            lost.is_empty(),
            "round {round}: kill of worker {worker}: nodes it held begun and unfinished when it died were never begun \
             again, so they are lost: {lost:?} (begun again, µs after the kill: {pickups:?})"
        );
        assert_in_time(round, &format!("the kill of worker {worker}"), &pickups, KILL_PICKUP);
        (pickups.into_iter().map(|(_, p)| p).collect(), unfinished.len())
    }
}

/// Asserts that each node of `pickups` ((node, µs after `after`)) was begun
/// again within `bound` and its load margin.
pub(super) fn assert_in_time(round: usize, after: &str, pickups: &[(String, u64)], bound: Duration) {
    let bound = Bound::across_processes(bound);
    let late: Vec<&(String, u64)> = pickups
        .iter()
        .filter(|(_, p)| !bound.holds(Duration::from_micros(*p)))
        .collect();
    assert!(
        late.is_empty(),
        "round {round}: nodes begun again later after {after} than {bound} ((node, µs after it)): {late:?}"
    );
}
