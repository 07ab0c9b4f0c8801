//! A latency run's put-to-consume latency in parts, as the benchmark sees it
//! from outside the library: how late each put began, the put call, and the
//! time after it; and the items over 10 ms, grouped into episodes.

use std::time::Duration;

use serde::Serialize;

use super::util::{percentile_ms, Requests};

/// A put-to-consume latency counts in the tail above this.
const TAIL: Duration = Duration::from_millis(10);

/// Tail items whose due times are closer than this are one episode.
const EPISODE_GAP: Duration = Duration::from_millis(20);

/// Episodes listed per run (the first ones).
const EPISODES_SHOWN: usize = 20;

/// A run's put-to-consume latency in parts, seen from outside the library:
/// each item's latency is how late its put began after the item was due,
/// plus the put call, plus the time from the put's return to the consumer's
/// call with the item.
#[derive(Debug, Serialize)]
pub struct TailSplit {
    /// How late the producer began a put after its due time (its wake-up).
    pub late_p99_ms: Option<f64>,
    pub late_max_ms: Option<f64>,
    /// How long a put call took (a background put returns once its create
    /// is sent).
    pub put_p99_ms: Option<f64>,
    pub put_max_ms: Option<f64>,
    /// From a put's return to the consumer's call: the server's commit, the
    /// consumer's wake-up, its claim and its window.
    pub after_put_p50_ms: Option<f64>,
    pub after_put_p99_ms: Option<f64>,
    pub after_put_max_ms: Option<f64>,
    /// Items whose latency was over 10 ms.
    pub over_10ms: usize,
    /// Those items in episodes (due times less than 20 ms apart), the first
    /// 20 in order of due time.
    pub episodes: Vec<Episode>,
    /// Episodes not listed.
    pub episodes_left_off: usize,
    /// The consumer's client's requests per item (a rescan shows in
    /// `get_children`).
    pub consumer_requests_per_item: Requests,
}

/// Consecutive tail items.
#[derive(Debug, Serialize)]
pub struct Episode {
    /// The first item's due time, ms after the schedule's start.
    pub start_ms: f64,
    /// From the first item's due time to the last's.
    pub span_ms: f64,
    pub items: usize,
    /// The worst latency in it.
    pub max_ms: f64,
    /// The worst of its producer's parts (late start plus put call).
    pub max_producer_ms: f64,
}

/// The split of every item's latency: `dues`, `calls` (put began and
/// returned) and `arrivals` hold each item's times, by index.
pub fn split(dues: &[u64], calls: &[(u64, u64)], arrivals: &[u64]) -> TailSplit {
    let mut late = Vec::with_capacity(dues.len());
    let mut put = Vec::with_capacity(dues.len());
    let mut after = Vec::with_capacity(dues.len());
    let mut episodes: Vec<Episode> = Vec::new();
    let mut over = 0;
    let mut last_tail: Option<u64> = None;
    let first_due = dues.first().copied().unwrap_or(0);
    let ms = |ns: u64| ns as f64 / 1e6;
    for ((&due, &(began, returned)), &arrived) in dues.iter().zip(calls).zip(arrivals) {
        let (item_late, item_put) = (began.saturating_sub(due), returned.saturating_sub(began));
        late.push(item_late);
        put.push(item_put);
        after.push(arrived.saturating_sub(returned));
        let latency = arrived.saturating_sub(due);
        if latency <= TAIL.as_nanos() as u64 {
            continue;
        }
        over += 1;
        let joins = last_tail.is_some_and(|t| due - t < EPISODE_GAP.as_nanos() as u64);
        last_tail = Some(due);
        match episodes.last_mut() {
            Some(e) if joins => {
                e.span_ms = ms(due - first_due) - e.start_ms;
                e.items += 1;
                e.max_ms = e.max_ms.max(ms(latency));
                e.max_producer_ms = e.max_producer_ms.max(ms(item_late + item_put));
            }
            _ => episodes.push(Episode {
                start_ms: ms(due - first_due),
                span_ms: 0.0,
                items: 1,
                max_ms: ms(latency),
                max_producer_ms: ms(item_late + item_put),
            }),
        }
    }
    for values in [&mut late, &mut put, &mut after] {
        values.sort_unstable();
    }
    let left_off = episodes.len().saturating_sub(EPISODES_SHOWN);
    episodes.truncate(EPISODES_SHOWN);
    TailSplit {
        late_p99_ms: percentile_ms(&late, 99.0),
        late_max_ms: percentile_ms(&late, 100.0),
        put_p99_ms: percentile_ms(&put, 99.0),
        put_max_ms: percentile_ms(&put, 100.0),
        after_put_p50_ms: percentile_ms(&after, 50.0),
        after_put_p99_ms: percentile_ms(&after, 99.0),
        after_put_max_ms: percentile_ms(&after, 100.0),
        over_10ms: over,
        episodes,
        episodes_left_off: left_off,
        consumer_requests_per_item: Requests::default(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn tail_items_are_grouped_into_episodes_by_due_time() {
        const MS: u64 = 1_000_000;
        // 100 items due every 2 ms; each put begins 0.1 ms late and takes
        // 0.1 ms; items 3 to 5 wait 15 ms after their put, item 60 waits
        // 30 ms, of which 20 before its put began.
        let dues: Vec<u64> = (0..100).map(|i| 1_000 * MS + 2 * i * MS).collect();
        let mut calls: Vec<(u64, u64)> = dues.iter().map(|&d| (d + MS / 10, d + MS / 5)).collect();
        calls[60] = (dues[60] + 20 * MS, dues[60] + 20 * MS + MS / 10);
        let arrivals: Vec<u64> = (0..100)
            .map(|i| match i {
                3..=5 => calls[i].1 + 15 * MS,
                60 => calls[i].1 + 10 * MS,
                _ => calls[i].1 + MS,
            })
            .collect();
        let split = super::split(&dues, &calls, &arrivals);
        assert_eq!(split.over_10ms, 4);
        assert_eq!(split.episodes.len(), 2);
        let (first, second) = (&split.episodes[0], &split.episodes[1]);
        assert_eq!((first.start_ms, first.span_ms, first.items), (6.0, 4.0, 3));
        assert!((first.max_ms - 15.2).abs() < 1e-9, "{}", first.max_ms);
        assert_eq!((second.start_ms, second.items), (120.0, 1));
        assert!(
            (second.max_producer_ms - 20.1).abs() < 1e-9,
            "{}",
            second.max_producer_ms
        );
        assert_eq!(split.late_max_ms, Some(20.0));
        assert_eq!(split.after_put_max_ms, Some(15.0));
    }
}
