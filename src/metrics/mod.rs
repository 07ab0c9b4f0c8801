//! Metrics of queues and clients, recorded through the [`metrics`] facade
//! (feature `metrics`): install any recorder (an exporter such as
//! `metrics-exporter-prometheus`) before building clients and queues, and
//! they report to it. Without the feature nothing of this is compiled.
//!
//! A queue registers its series with the recorder in force where it is
//! built (the global one, or one in scope through
//! [`with_local_recorder`](::metrics::with_local_recorder)), and a
//! client its connection series where it connects: a recorder installed
//! later sees nothing of them. Every series of a queue is there from its
//! start, at zero until something is counted. A client's request histograms
//! are registered at each operation's first request, with the global
//! recorder.
//!
//! # Names and labels
//! Label `queue` is the queue's path (as given to
//! [`QueueBuilder::new`](crate::QueueBuilder::new), below the client's
//! chroot; each shard of a [`ShardedQueue`](crate::ShardedQueue) has its
//! own); label `client` is the client's connect string. So there are as
//! many series as queues and connect strings a process uses, never one per
//! item or per request. Counts are of this process only, like
//! [`QueueStats`](crate::QueueStats). Handles of one queue in one process
//! (a producer and a consumer, say) add to the same counters, and clients
//! of one connect string likewise; a gauge shows what was set last, so
//! give all but one such handle a zero
//! [`metrics_interval`](crate::QueueBuilder::metrics_interval).
//!
//! | name | type | labels | what |
//! | --- | --- | --- | --- |
//! | `zk_queue_puts_total` | counter | `queue` | items stored (a `put_multi` of three counts three) |
//! | `zk_queue_put_failures_total` | counter | `queue` | items whose storing failed: a foreground put that returned the error, a background put the put listeners heard failed (a put refused before storing began, as a closed queue's, bad input, or a background put refused while no server answers, is not counted) |
//! | `zk_queue_puts_pending` | gauge | `queue` | puts handed to the put thread (background, or coalesced) and not finished (stored or failed), set as it changes; what a close would wait for |
//! | `zk_queue_takes_total` | counter | `queue` | records the consumer took and answered: acknowledged or failed (a record a pull taker released untouched is not counted) |
//! | `zk_queue_acknowledges_total` | counter | `queue` | records the consumer acknowledged (a callback returned `Ok`, or a pull delivery was acknowledged) |
//! | `zk_queue_consumer_errors_total` | counter | `queue` | records the consumer failed on: a callback returned an error or panicked, or a pull delivery was failed (`takes` minus `acknowledges`) |
//! | `zk_queue_requeues_total` | counter | `queue`, `attempt` | items requeued after a failed delivery; `attempt` is the delivery that failed: `1`, `2` or `3+` |
//! | `zk_queue_dead_letters_total` | counter | `queue` | items moved to the dead-letter path (failed too often, or undecodable) |
//! | `zk_queue_lease_losses_total` | counter | `queue` | items whose lock was lost before they were settled |
//! | `zk_queue_put_to_consume_seconds` | histogram | `queue` | per acknowledged record: from its item's first put (kept across requeues) to the acknowledgement; the put time is the one the item records, its node's creation by the server's clock, so clock skew between this host and ZooKeeper shifts it (a negative wait reads as 0) |
//! | `zk_queue_in_flight` | gauge, sampled | `queue` | items this process claimed and has not settled |
//! | `zk_queue_depth` | gauge, sampled | `queue` | the nodes in the queue (one `exists` of the queue node: its children count; a `put_multi` node is one) |
//! | `zk_queue_dead_letters_waiting` | gauge, sampled | `queue` | the nodes in the queue's dead-letter path (one `exists` of it), waiting for an operator; only for a queue with a dead-letter path |
//! | `zk_queue_client_connected` | gauge | `client` | 1 while connected, 0 while suspended or lost, and once closed |
//! | `zk_queue_client_reconnects_total` | counter | `client` | reconnections, to the same session or to a new one |
//! | `zk_queue_client_session_losses_total` | counter | `client` | sessions lost (expired, or authentication refused) |
//! | `zk_queue_client_request_seconds` | histogram | `client`, `operation` | each attempt of a request, from sending it to its answer or failure; `operation` is `create`, `delete`, `exists`, `get_data`, `get_children`, `multi`, ... |
//!
//! The sampled gauges are set by one thread per queue handle (each shard of
//! a sharded queue is one), named `zkq-metrics <path>`, at once when the
//! queue is built and then every
//! [`QueueBuilder::metrics_interval`](crate::QueueBuilder::metrics_interval)
//! (10 seconds by default; zero for no sampler and no gauges), until the
//! queue closes. Each sample costs one `exists` request (two with a
//! dead-letter path); while no server answers, the depth and the dead
//! letters waiting keep their last values. Everything else is recorded
//! where it happens, by the thread that does it.
//!
//! Histograms record seconds; how they are bucketed or summarized is the
//! exporter's choice (`metrics-exporter-prometheus` writes summaries unless
//! given buckets, see `examples/prometheus.rs`).
//!
//! ```
//! use zk_queue::metrics;
//! // Describes every metric (units and help texts) to the installed recorder.
//! metrics::describe();
//! assert_eq!(metrics::names::PUTS, "zk_queue_puts_total");
//! ```

#[cfg(feature = "metrics")]
#[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
pub mod names;
#[cfg(feature = "metrics")]
mod record;
#[cfg(feature = "metrics")]
pub(crate) use record::{ClientMetrics, QueueMetrics, Sampler};

#[cfg(not(feature = "metrics"))]
mod off;
#[cfg(not(feature = "metrics"))]
pub(crate) use off::{ClientMetrics, QueueMetrics, Sampler};

/// One sample of a queue's gauges, taken by the queue for its sampler
/// thread (metrics name none of the crate's types: they are fed plain
/// numbers).
#[derive(Clone, Copy, Debug)]
// Without the feature no sampler reads it.
#[cfg_attr(not(feature = "metrics"), allow(dead_code))]
pub(crate) struct Sample {
    /// Items this process claimed and has not settled.
    pub(crate) in_flight: u64,
    /// The nodes in the queue; `None` when they could not be counted (the
    /// gauge keeps its last value).
    pub(crate) depth: Option<u64>,
    /// The nodes in the dead-letter path; `None` without one, or when they
    /// could not be counted.
    pub(crate) dead_letters: Option<u64>,
}

/// Describes every metric of the [table](self) to the installed recorder: its
/// unit and help text (Prometheus' `# HELP` and `# TYPE` lines). Recording
/// works without it.
///
/// ```
/// zk_queue::metrics::describe();
/// ```
#[cfg(feature = "metrics")]
#[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
pub fn describe() {
    use ::metrics::{describe_counter, describe_gauge, describe_histogram, Unit};
    describe_counter!(names::PUTS, "Items stored in the queue.");
    describe_counter!(names::PUT_FAILURES, "Items whose storing failed.");
    describe_gauge!(names::PUTS_PENDING, "Puts handed to the put thread and not finished.");
    describe_counter!(names::TAKES, "Records the consumer took and answered.");
    describe_counter!(names::CONSUMER_ERRORS, "Records the consumer failed on.");
    describe_counter!(names::ACKS, "Records the consumer acknowledged.");
    describe_counter!(names::REQUEUES, "Items requeued after a failed delivery.");
    describe_counter!(names::DEAD_LETTERS, "Items moved to the dead-letter path.");
    describe_counter!(
        names::LEASE_LOSSES,
        "Items whose lock was lost before they were settled."
    );
    describe_histogram!(
        names::PUT_TO_CONSUME,
        Unit::Seconds,
        "From an item's first put to the acknowledgement of a record."
    );
    describe_gauge!(names::IN_FLIGHT, "Items claimed and not yet settled (sampled).");
    describe_gauge!(names::DEPTH, "Nodes in the queue (sampled).");
    describe_gauge!(
        names::DEAD_LETTERS_WAITING,
        "Nodes in the queue's dead-letter path (sampled)."
    );
    describe_gauge!(names::CLIENT_CONNECTED, "1 while the client is connected, else 0.");
    describe_counter!(names::CLIENT_RECONNECTS, "Reconnections of the client.");
    describe_counter!(names::CLIENT_SESSION_LOSSES, "Sessions the client lost.");
    describe_histogram!(
        names::CLIENT_REQUEST,
        Unit::Seconds,
        "Request attempts, from sending to the answer or failure."
    );
}
