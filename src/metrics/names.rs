//! The names of the metrics this crate records; see the
//! [module documentation](super) for their labels and meaning. They follow
//! Prometheus' conventions: counters end in `_total`, histograms in their
//! unit.
//!
//! ```
//! use zk_queue::metrics::names;
//! let counters = [names::PUTS, names::PUT_FAILURES, names::TAKES, names::ACKS, names::CONSUMER_ERRORS,
//!     names::REQUEUES, names::DEAD_LETTERS, names::LEASE_LOSSES, names::CLIENT_RECONNECTS,
//!     names::CLIENT_SESSION_LOSSES];
//! assert!(counters.iter().all(|name| name.starts_with("zk_queue_") && name.ends_with("_total")));
//! assert!([names::PUT_TO_CONSUME, names::CLIENT_REQUEST].iter().all(|name| name.ends_with("_seconds")));
//! ```

/// Counter: items stored in a queue by this process (a `put_multi` of three
/// counts three). Label `queue`.
pub const PUTS: &str = "zk_queue_puts_total";
/// Counter: items whose storing failed (a foreground put that returned
/// the error, a background put the put listeners heard failed); a put
/// refused before storing began is not counted. Label `queue`.
pub const PUT_FAILURES: &str = "zk_queue_put_failures_total";
/// Gauge: puts handed to the put thread (background, or coalesced) and
/// not finished (stored or failed), set as it changes. Label `queue`.
pub const PUTS_PENDING: &str = "zk_queue_puts_pending";
/// Counter: records this process's consumer took and answered (acknowledged
/// or failed); a record released untouched is not counted. Label `queue`.
pub const TAKES: &str = "zk_queue_takes_total";
/// Counter: records the consumer acknowledged (a callback returned `Ok`, or
/// a pull delivery was acknowledged). Label `queue`.
pub const ACKS: &str = "zk_queue_acknowledges_total";
/// Counter: records the consumer failed on (a callback returned an error or
/// panicked, or a pull delivery was failed). Label `queue`.
pub const CONSUMER_ERRORS: &str = "zk_queue_consumer_errors_total";
/// Counter: items requeued after a failed delivery. Labels `queue` and
/// `attempt` (the delivery that failed: `1`, `2` or `3+`).
pub const REQUEUES: &str = "zk_queue_requeues_total";
/// Counter: items moved to the dead-letter path. Label `queue`.
pub const DEAD_LETTERS: &str = "zk_queue_dead_letters_total";
/// Counter: items whose lock was lost before they were settled. Label
/// `queue`.
pub const LEASE_LOSSES: &str = "zk_queue_lease_losses_total";
/// Histogram, seconds: from an item's first put to the acknowledgement of
/// each of its records. Label `queue`.
pub const PUT_TO_CONSUME: &str = "zk_queue_put_to_consume_seconds";
/// Gauge, sampled: items claimed by this process and not yet settled.
/// Label `queue`.
pub const IN_FLIGHT: &str = "zk_queue_in_flight";
/// Gauge, sampled: the nodes in the queue. Label `queue`.
pub const DEPTH: &str = "zk_queue_depth";
/// Gauge, sampled: the nodes in the queue's dead-letter path, waiting for
/// an operator (only for a queue with a dead-letter path). Label `queue`.
pub const DEAD_LETTERS_WAITING: &str = "zk_queue_dead_letters_waiting";
/// Gauge: 1 while the client is connected, 0 while it is not (and once
/// closed). Label `client`.
pub const CLIENT_CONNECTED: &str = "zk_queue_client_connected";
/// Counter: reconnections, to the same session or a new one. Label
/// `client`.
pub const CLIENT_RECONNECTS: &str = "zk_queue_client_reconnects_total";
/// Counter: sessions lost (expired, or refused authentication). Label
/// `client`.
pub const CLIENT_SESSION_LOSSES: &str = "zk_queue_client_session_losses_total";
/// Histogram, seconds: from sending a request to its answer (or failure),
/// each attempt. Labels `client` and `operation`.
pub const CLIENT_REQUEST: &str = "zk_queue_client_request_seconds";
