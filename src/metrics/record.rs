//! With the `metrics` feature: a queue's and a client's handles into the
//! `metrics` facade's recorder, registered once with their labels, and the
//! sampler thread of a queue's gauges.

use std::collections::HashMap;
use std::time::{Duration, Instant, SystemTime};

use crossbeam_channel::{RecvTimeoutError, Sender};
use metrics::{counter, gauge, histogram, Counter, Gauge, Histogram};
use parking_lot::RwLock;

use super::{names, Sample};

/// The attempt label of a requeue: `1`, `2` or `3+`, so that the series
/// stay three whatever the queue's `max_attempts`.
pub(crate) fn attempt_label(attempt: u32) -> &'static str {
    match attempt {
        0 | 1 => "1",
        2 => "2",
        _ => "3+",
    }
}

/// One queue's counters and histogram, labelled with its path, and how often
/// its gauges are sampled.
#[derive(Debug)]
pub(crate) struct QueueMetrics {
    interval: Duration,
    puts: Counter,
    put_failures: Counter,
    puts_pending: Gauge,
    takes: Counter,
    consumer_errors: Counter,
    acks: Counter,
    requeues: [Counter; 3],
    dead_letters: Counter,
    lease_losses: Counter,
    put_to_consume: Histogram,
}

impl Default for QueueMetrics {
    /// Handles that record nothing (counters of a queue not built by the
    /// builder, in unit tests).
    fn default() -> QueueMetrics {
        QueueMetrics {
            interval: Duration::ZERO,
            puts: Counter::noop(),
            put_failures: Counter::noop(),
            puts_pending: Gauge::noop(),
            takes: Counter::noop(),
            consumer_errors: Counter::noop(),
            acks: Counter::noop(),
            requeues: [Counter::noop(), Counter::noop(), Counter::noop()],
            dead_letters: Counter::noop(),
            lease_losses: Counter::noop(),
            put_to_consume: Histogram::noop(),
        }
    }
}

impl QueueMetrics {
    /// The handles of queue `path`, from the recorder installed now; its
    /// gauges sampled every `interval` (never if zero).
    pub(crate) fn new(path: &str, interval: Duration) -> QueueMetrics {
        let queue = [("queue", path.to_owned())];
        let requeue = |attempt: u32| {
            let labels = [queue[0].clone(), ("attempt", attempt_label(attempt).to_owned())];
            counter!(names::REQUEUES, &labels)
        };
        QueueMetrics {
            interval,
            puts: counter!(names::PUTS, &queue),
            put_failures: counter!(names::PUT_FAILURES, &queue),
            puts_pending: gauge!(names::PUTS_PENDING, &queue),
            takes: counter!(names::TAKES, &queue),
            consumer_errors: counter!(names::CONSUMER_ERRORS, &queue),
            acks: counter!(names::ACKS, &queue),
            requeues: [requeue(1), requeue(2), requeue(3)],
            dead_letters: counter!(names::DEAD_LETTERS, &queue),
            lease_losses: counter!(names::LEASE_LOSSES, &queue),
            put_to_consume: histogram!(names::PUT_TO_CONSUME, &queue),
        }
    }

    /// `items` stored.
    pub(crate) fn put(&self, items: usize) {
        self.puts.increment(u64::try_from(items).unwrap_or(u64::MAX));
    }

    /// `items` whose put failed.
    pub(crate) fn put_failed(&self, items: usize) {
        self.put_failures.increment(u64::try_from(items).unwrap_or(u64::MAX));
    }

    /// `pending` puts are handed to the put thread and not finished.
    pub(crate) fn puts_pending(&self, pending: usize) {
        self.puts_pending.set(pending as f64);
    }

    /// A record the consumer answered: acknowledged, or failed; an
    /// acknowledged one records how long ago it was first put.
    pub(crate) fn taken(&self, acknowledged: bool, put_at: SystemTime) {
        self.takes.increment(1);
        if !acknowledged {
            self.consumer_errors.increment(1);
        }
        if acknowledged {
            self.acks.increment(1);
            // A put clock ahead of ours reads as no wait at all.
            let waited = SystemTime::now().duration_since(put_at).unwrap_or_default();
            self.put_to_consume.record(waited.as_secs_f64());
        }
    }

    /// An item requeued after its delivery number `attempt` failed.
    pub(crate) fn requeued(&self, attempt: u32) {
        let slot = match attempt_label(attempt) {
            "1" => 0,
            "2" => 1,
            _ => 2,
        };
        self.requeues[slot].increment(1);
    }

    /// An item moved to the dead-letter path.
    pub(crate) fn dead_lettered(&self) {
        self.dead_letters.increment(1);
    }

    /// A lease (an item's lock) lost before the item was settled.
    pub(crate) fn lease_lost(&self) {
        self.lease_losses.increment(1);
    }
}

/// The thread that samples a queue's depth and items in flight every
/// interval, until stopped.
#[derive(Debug, Default)]
pub(crate) struct Sampler {
    stop: Option<Sender<()>>,
}

impl Sampler {
    /// Starts sampling the queue at `path` at its metrics' interval (not at
    /// all if it is zero): each sample is what `sample` returns.
    pub(crate) fn start(metrics: &QueueMetrics, path: &str, sample: impl Fn() -> Sample + Send + 'static) -> Sampler {
        let interval = metrics.interval;
        if interval.is_zero() {
            return Sampler::default();
        }
        let (stop, stopped) = crossbeam_channel::bounded::<()>(0);
        let gauges = Gauges::new(path);
        let name = format!("zkq-metrics {path}");
        let sampling = move || loop {
            gauges.set(sample());
            match stopped.recv_timeout(interval) {
                Err(RecvTimeoutError::Timeout) => {}
                _ => return,
            }
        };
        match std::thread::Builder::new().name(name).spawn(sampling) {
            Ok(_) => Sampler { stop: Some(stop) },
            Err(e) => {
                log::warn!("no metrics sampler (cannot start a thread: {e})");
                Sampler::default()
            }
        }
    }

    /// Stops the thread; it ends after its current sample, if it is taking
    /// one (within the client's request timeout).
    pub(crate) fn stop(&mut self) {
        self.stop = None;
    }
}

/// A queue's sampled gauges.
struct Gauges {
    depth: Gauge,
    in_flight: Gauge,
    dead_letters: Gauge,
}

impl Gauges {
    fn new(path: &str) -> Gauges {
        let queue = [("queue", path.to_owned())];
        Gauges {
            depth: gauge!(names::DEPTH, &queue),
            in_flight: gauge!(names::IN_FLIGHT, &queue),
            dead_letters: gauge!(names::DEAD_LETTERS_WAITING, &queue),
        }
    }

    /// Sets the gauges to `sample`; a count not read leaves its gauge as it
    /// was.
    fn set(&self, sample: Sample) {
        self.in_flight.set(sample.in_flight as f64);
        if let Some(depth) = sample.depth {
            self.depth.set(depth as f64);
        }
        if let Some(dead_letters) = sample.dead_letters {
            self.dead_letters.set(dead_letters as f64);
        }
    }
}

/// One client's handles, labelled with its connect string.
#[derive(Debug)]
pub(crate) struct ClientMetrics {
    connected: Gauge,
    reconnects: Counter,
    session_losses: Counter,
    client: String,
    /// The request histogram of each operation met so far (a dozen at most:
    /// operations are the client's own names).
    requests: RwLock<HashMap<&'static str, Histogram>>,
}

impl ClientMetrics {
    /// The handles of a client of `connect_string`, from the recorder
    /// installed now; the connection gauge is set once it
    /// [`connected`](Self::connected).
    pub(crate) fn new(connect_string: &str) -> ClientMetrics {
        let client = [("client", connect_string.to_owned())];
        ClientMetrics {
            connected: gauge!(names::CLIENT_CONNECTED, &client),
            reconnects: counter!(names::CLIENT_RECONNECTS, &client),
            session_losses: counter!(names::CLIENT_SESSION_LOSSES, &client),
            client: connect_string.to_owned(),
            requests: RwLock::new(HashMap::new()),
        }
    }

    /// The client's connection is up (`true`) or not.
    pub(crate) fn connected(&self, connected: bool) {
        self.connected.set(f64::from(u8::from(connected)));
    }

    /// The client reconnected, to its session or to a new one.
    pub(crate) fn reconnected(&self) {
        self.reconnects.increment(1);
    }

    /// The client's session was lost.
    pub(crate) fn session_lost(&self) {
        self.session_losses.increment(1);
    }

    /// The client closed.
    pub(crate) fn closed(&self) {
        self.connected.set(0.0);
    }

    /// A request of `operation` sent at `started` was answered (or failed).
    pub(crate) fn answered(&self, operation: &'static str, started: Instant) {
        let seconds = started.elapsed().as_secs_f64();
        if let Some(histogram) = self.requests.read().get(operation) {
            return histogram.record(seconds);
        }
        let labels = [("client", self.client.clone()), ("operation", operation.to_owned())];
        let histogram = histogram!(names::CLIENT_REQUEST, &labels);
        histogram.record(seconds);
        self.requests.write().insert(operation, histogram);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requeue_attempts_fall_in_three_labels() {
        let labels: Vec<_> = [1, 2, 3, 4, 99, u32::MAX].into_iter().map(attempt_label).collect();
        assert_eq!(labels, ["1", "2", "3+", "3+", "3+", "3+"]);
    }
}
