//! What a queue handle has done since it started: counters kept by the put
//! path and the consumer engine, read as a [`QueueStats`] snapshot.

use std::sync::atomic::{AtomicU64, Ordering};

/// A snapshot of one queue handle's counters, from
/// [`DistributedQueue::stats`](crate::DistributedQueue::stats) and the same
/// method of the other kinds.
///
/// Counts are of this handle only (not of other processes sharing the queue)
/// and start at zero when the handle is built. Items are counted one by one:
/// a `put_multi` of three items counts three puts, and each of its records
/// counts when consumed.
///
/// ```
/// use zk_queue::QueueStats;
/// let stats = QueueStats::default();
/// assert_eq!((stats.puts, stats.consumed, stats.in_flight), (0, 0, 0));
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueStats {
    /// Items this handle stored in the queue.
    pub puts: u64,
    /// Items whose store failed after `put` accepted them (a put listener's
    /// `put_failed`; for background puts, reported once more by the next
    /// put or flush).
    pub put_failures: u64,
    /// Puts sent again because their create's reply was lost and the
    /// read-back did not find their item: either the create was not applied,
    /// or a consumer had already taken the item, which is then stored twice.
    /// So this bounds the duplicates lost put replies caused.
    pub puts_resent: u64,
    /// Queue nodes this handle's consumer claimed and handed to a worker:
    /// deleted (without a lock path) or locked (with one).
    pub claimed: u64,
    /// Records the consumer processed successfully.
    pub consumed: u64,
    /// Records the consumer failed on (returned an error or panicked).
    pub consumer_errors: u64,
    /// Records given back untouched, without a failed attempt: released by
    /// a pull consumer's taker ([`Delivery::release`](crate::Delivery::release)),
    /// or not taken by anyone before a pull consumer closed.
    pub released: u64,
    /// Items put back in the queue after a consumer error.
    pub requeued: u64,
    /// Items moved to the dead-letter path (failed too often, or
    /// undecodable).
    pub dead_lettered: u64,
    /// Items whose lock was lost before they were settled (acknowledged,
    /// requeued or dead-lettered); another consumer gets them.
    pub lease_lost: u64,
    /// Items someone else deleted while this handle's lock-safe consumer held
    /// them (see [`Error::ItemRemoved`](crate::Error::ItemRemoved)): nothing
    /// was left to acknowledge, requeue or move, and the lock was released.
    pub removed_while_held: u64,
    /// Claimed nodes not yet settled, now.
    pub in_flight: u64,
    /// Items this handle's consumer tried to claim but found taken or
    /// locked by another consumer first: claims lost to competition (each
    /// cost a request for nothing).
    pub claims_lost: u64,
}

impl QueueStats {
    /// The two snapshots added up, field by field (the shards of a
    /// sharded queue).
    pub(crate) fn plus(self, other: &QueueStats) -> QueueStats {
        QueueStats {
            puts: self.puts + other.puts,
            put_failures: self.put_failures + other.put_failures,
            puts_resent: self.puts_resent + other.puts_resent,
            claimed: self.claimed + other.claimed,
            consumed: self.consumed + other.consumed,
            consumer_errors: self.consumer_errors + other.consumer_errors,
            released: self.released + other.released,
            requeued: self.requeued + other.requeued,
            dead_lettered: self.dead_lettered + other.dead_lettered,
            lease_lost: self.lease_lost + other.lease_lost,
            removed_while_held: self.removed_while_held + other.removed_while_held,
            in_flight: self.in_flight + other.in_flight,
            claims_lost: self.claims_lost + other.claims_lost,
        }
    }
}

/// What closing a queue did, from [`Queue::close`](crate::Queue::close)
/// and [`Queue::close_timeout`](crate::Queue::close_timeout). Records are
/// counted one by one, as in [`QueueStats`].
///
/// ```no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
/// # let client = ZkClient::connect("127.0.0.1:2181")?;
/// # let queue = QueueBuilder::new(&client, "/jobs", StringSerializer).build_queue()?;
/// let report = queue.close();
/// if !report.is_complete() {
///     eprintln!(
///         "closed with {} items still being consumed and {} puts pending",
///         report.still_running, report.puts_pending
///     );
/// }
/// # Ok(())
/// # }
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CloseReport {
    /// Background puts not finished (stored or failed) by the deadline,
    /// also logged at WARN. The put thread goes on storing each until its
    /// deadline (a request timeout after it was accepted), after `close`
    /// returned and without telling the put listeners; a process that exits
    /// first loses them.
    pub puts_pending: u64,
    /// Records whose consumption finished while the queue closed
    /// (successfully or not; see [`QueueStats`] for which).
    pub finished: u64,
    /// Records given back untouched while the queue closed: items a pull
    /// consumer had claimed but no caller had taken, unlocked (with a lock
    /// path) without a failed attempt.
    pub released: u64,
    /// Claimed items still being consumed when the deadline passed. They
    /// finish on their own threads; with a lock path their locks go when
    /// they do (or with the session).
    pub still_running: u64,
}

impl CloseReport {
    /// Whether everything finished by the deadline: no put pending, no item
    /// still being consumed.
    ///
    /// ```
    /// assert!(zk_queue::CloseReport::default().is_complete());
    /// ```
    pub fn is_complete(&self) -> bool {
        self.puts_pending == 0 && self.still_running == 0
    }

    /// The report of a close that began with `before` and ended with
    /// `after`, with `puts_pending` puts left at the deadline.
    pub(crate) fn between(before: &QueueStats, after: &QueueStats, puts_pending: u64) -> CloseReport {
        let done = |s: &QueueStats| s.consumed + s.consumer_errors;
        CloseReport {
            puts_pending,
            finished: done(after).saturating_sub(done(before)),
            released: after.released.saturating_sub(before.released),
            still_running: after.in_flight,
        }
    }
}

/// The live counters behind [`QueueStats`].
#[derive(Debug, Default)]
pub(crate) struct QueueCounters {
    pub(crate) puts: AtomicU64,
    pub(crate) put_failures: AtomicU64,
    pub(crate) puts_resent: AtomicU64,
    /// Put calls whose put ended (stored or failed; several coalesced into
    /// one node count each), for a sharded queue's reckoning of its shards.
    pub(crate) puts_ended: AtomicU64,
    pub(crate) claimed: AtomicU64,
    /// Claimed nodes that are settled, for `in_flight`.
    pub(crate) settled: AtomicU64,
    pub(crate) consumed: AtomicU64,
    pub(crate) consumer_errors: AtomicU64,
    pub(crate) released: AtomicU64,
    pub(crate) requeued: AtomicU64,
    pub(crate) dead_lettered: AtomicU64,
    pub(crate) lease_lost: AtomicU64,
    pub(crate) removed_while_held: AtomicU64,
    pub(crate) claims_lost: AtomicU64,
    /// The same events, for the installed metrics recorder (feature
    /// `metrics`; nothing without it).
    pub(crate) metrics: crate::metrics::QueueMetrics,
}

impl QueueCounters {
    /// The counters of the queue at `path`, whose metrics' gauges are
    /// sampled every `metrics_interval` (feature `metrics`).
    #[cfg(feature = "metrics")]
    pub(crate) fn for_queue(path: &str, metrics_interval: std::time::Duration) -> QueueCounters {
        QueueCounters {
            metrics: crate::metrics::QueueMetrics::new(path, metrics_interval),
            ..QueueCounters::default()
        }
    }

    /// Adds `n` to a counter.
    pub(crate) fn add(counter: &AtomicU64, n: usize) {
        counter.fetch_add(u64::try_from(n).unwrap_or(u64::MAX), Ordering::Relaxed);
    }

    /// Adds one to a counter.
    pub(crate) fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self) -> QueueStats {
        let get = |counter: &AtomicU64| counter.load(Ordering::SeqCst);
        // Settled before claimed: an item is claimed before it is settled, so
        // the difference cannot go below zero.
        let settled = get(&self.settled);
        let claimed = get(&self.claimed);
        QueueStats {
            puts: get(&self.puts),
            put_failures: get(&self.put_failures),
            puts_resent: get(&self.puts_resent),
            claimed,
            consumed: get(&self.consumed),
            consumer_errors: get(&self.consumer_errors),
            released: get(&self.released),
            requeued: get(&self.requeued),
            dead_lettered: get(&self.dead_lettered),
            lease_lost: get(&self.lease_lost),
            removed_while_held: get(&self.removed_while_held),
            in_flight: claimed.saturating_sub(settled),
            claims_lost: get(&self.claims_lost),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_reads_every_counter() {
        let counters = QueueCounters::default();
        assert_eq!(counters.snapshot(), QueueStats::default());
        QueueCounters::add(&counters.puts, 3);
        QueueCounters::bump(&counters.put_failures);
        QueueCounters::add(&counters.puts_resent, 2);
        QueueCounters::add(&counters.claimed, 4);
        QueueCounters::bump(&counters.settled);
        QueueCounters::add(&counters.consumed, 5);
        QueueCounters::bump(&counters.consumer_errors);
        QueueCounters::add(&counters.released, 6);
        QueueCounters::bump(&counters.requeued);
        QueueCounters::bump(&counters.dead_lettered);
        QueueCounters::bump(&counters.lease_lost);
        QueueCounters::add(&counters.removed_while_held, 7);
        QueueCounters::add(&counters.claims_lost, 8);
        let stats = counters.snapshot();
        assert_eq!(
            stats,
            QueueStats {
                puts: 3,
                put_failures: 1,
                puts_resent: 2,
                claimed: 4,
                consumed: 5,
                consumer_errors: 1,
                released: 6,
                requeued: 1,
                dead_lettered: 1,
                lease_lost: 1,
                removed_while_held: 7,
                in_flight: 3,
                claims_lost: 8,
            }
        );
    }
}
