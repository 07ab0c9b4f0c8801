//! The state a queue's consumer engine shares with its handle: the queue's
//! node, kind and options, its consumer, its counters, and the engine's
//! start and stop. The put path is not here: a handle puts through its
//! `Producer` (`queue::put`), which writes through the `Store`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::pull::PullConsumer;
use super::stats::QueueCounters;
use super::{ErrorMode, QueueConsumer};
use crate::client::{Acl, ConnectionState, Opts, ZkClient};
use crate::codec::QueueSerializer;
use crate::error::{Error, Result};
use crate::naming::Kind;
use crate::sync::{Backoff, Gate};

/// The builder's settings but those of the put path (see `put::PutMode`).
#[derive(Clone, Debug)]
pub(in crate::queue) struct Options {
    pub(crate) lock_path: Option<String>,
    pub(crate) final_flush: Duration,
    pub(crate) consumer_threads: usize,
    pub(crate) claim_window: usize,
    pub(crate) rescan_interval: Duration,
    pub(crate) error_mode: ErrorMode,
    pub(crate) max_attempts: Option<u32>,
    /// The pause before a failed item is delivered again.
    pub(crate) redelivery_backoff: Backoff,
    /// A priority consumer's items per listing before it looks again.
    pub(crate) min_items_before_refresh: usize,
    pub(crate) dead_letter_path: Option<String>,
    pub(crate) acl: Vec<Acl>,
    /// Shared by the shards of a sharded queue: how many of their scanners
    /// may hold a whole listing at once.
    pub(crate) listing_gate: Option<Arc<Gate>>,
}

/// Who consumes a queue's items.
pub(in crate::queue) enum Consumer<T> {
    /// A callback, run by the queue's consumer threads.
    Callback(Arc<dyn QueueConsumer<T>>),
    /// The takers of an [`ItemReceiver`](super::ItemReceiver), served by the
    /// queue's dispatcher.
    Pull(Arc<PullConsumer<T>>),
}

impl<T> Clone for Consumer<T> {
    fn clone(&self) -> Self {
        match self {
            Consumer::Callback(callback) => Consumer::Callback(Arc::clone(callback)),
            Consumer::Pull(pull) => Consumer::Pull(Arc::clone(pull)),
        }
    }
}

impl<T: Send + 'static> Consumer<T> {
    /// Tells the consumer of an error met outside `consume`.
    pub(crate) fn error(&self, error: &Error) {
        match self {
            Consumer::Callback(callback) => guarded("error", || callback.error(error)),
            Consumer::Pull(pull) => pull.error(error),
        }
    }

    /// Tells the consumer of a connection-state change.
    pub(crate) fn state_changed(&self, state: ConnectionState) {
        if let Consumer::Callback(callback) = self {
            guarded("state_changed", || callback.state_changed(state));
        }
    }

    /// Tells the consumer that the queue is closing.
    pub(crate) fn closing(&self) {
        match self {
            Consumer::Callback(callback) => guarded("closing", || callback.closing()),
            Consumer::Pull(pull) => pull.closing(),
        }
    }
}

/// Runs a callback consumer's method `what`; a panic in it is logged.
fn guarded(what: &str, call: impl FnOnce()) {
    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(call)).is_err() {
        log::error!("a queue consumer panicked in {what}()");
    }
}

/// A queue's running consumer engine, as its core stops it.
pub(in crate::queue) trait Running: Send {
    /// Stops claiming, then waits until `deadline` for in-flight items.
    fn stop(self: Box<Self>, deadline: Instant);
}

/// One queue's node, settings, consumer and counters, shared by its handle
/// and the threads of its consumer engine.
pub(in crate::queue) struct Core<T> {
    pub(crate) client: ZkClient,
    pub(crate) path: String,
    pub(crate) kind: Kind,
    pub(crate) serializer: Arc<dyn QueueSerializer<T>>,
    pub(crate) consumer: Option<Consumer<T>>,
    pub(crate) options: Options,
    /// Shared with the handle's producer, which counts the puts.
    pub(crate) counters: Arc<QueueCounters>,
    engine: Mutex<Option<Box<dyn Running>>>,
    /// Samples the queue's gauges (feature `metrics`; nothing without it).
    sampler: Mutex<crate::metrics::Sampler>,
}

impl<T> Core<T> {
    /// Stops claiming and waits for in-flight items until `deadline`.
    pub(crate) fn stop(&self, deadline: Instant) {
        self.sampler.lock().stop();
        if let Some(engine) = self.engine.lock().take() {
            engine.stop(deadline);
        }
    }
}

impl<T: Send + 'static> Core<T> {
    pub(crate) fn new(
        client: ZkClient,
        path: String,
        kind: Kind,
        serializer: Arc<dyn QueueSerializer<T>>,
        consumer: Option<Consumer<T>>,
        options: Options,
        counters: Arc<QueueCounters>,
    ) -> Core<T> {
        Core {
            client,
            path,
            kind,
            serializer,
            consumer,
            options,
            counters,
            engine: Mutex::new(None),
            sampler: Mutex::new(Default::default()),
        }
    }

    /// Creates the queue's nodes and starts its consumer engine with
    /// `engine`, if it has a consumer; called once, by the builder, before
    /// any handle exists. If it fails, closing the queue stops the threads it
    /// started.
    pub(crate) fn start<E: Running + 'static>(
        self: &Arc<Self>,
        engine: impl FnOnce(Arc<Self>) -> Result<E>,
    ) -> Result<()> {
        self.ensure_nodes()?;
        *self.sampler.lock() = crate::metrics::Sampler::start(&self.counters.metrics, &self.path, self.sample());
        if self.consumer.is_some() {
            // `exists` is never ACL-checked: one read refuses a consumer that
            // could not take a single item now, instead of at its first scan.
            self.client.get_data(&self.path)?;
            *self.engine.lock() = Some(Box::new(engine(Arc::clone(self))?));
        }
        Ok(())
    }

    /// What the metrics sampler samples: the items in flight from the
    /// counters, and the depth and the dead letters waiting from one
    /// `exists` each of the queue node and the dead-letter path (their
    /// children counts, without a listing).
    fn sample(&self) -> impl Fn() -> crate::metrics::Sample + Send + 'static {
        let (client, path, counters) = (self.client.clone(), self.path.clone(), Arc::clone(&self.counters));
        let dead_letter_path = self.options.dead_letter_path.clone();
        let children = move |node: &str| match client.exists(node) {
            Ok(stat) => Some(stat.map_or(0, |s| u64::try_from(s.num_children).unwrap_or(0))),
            Err(e) => {
                log::debug!("{node}: children not counted for the metrics: {e}");
                None
            }
        };
        move || crate::metrics::Sample {
            in_flight: counters.snapshot().in_flight,
            depth: children(&path),
            dead_letters: dead_letter_path.as_deref().and_then(&children),
        }
    }

    /// Creates the queue node and the lock and dead-letter directories, if
    /// missing, with the queue's ACL.
    pub(crate) fn ensure_nodes(&self) -> Result<()> {
        let acl = &self.options.acl;
        self.client.ensure_path_with(&self.path, Opts::new().acl(acl))?;
        for other in [&self.options.lock_path, &self.options.dead_letter_path]
            .into_iter()
            .flatten()
        {
            self.client.ensure_path_with(other, Opts::new().acl(acl))?;
        }
        if self.consumer.is_some() {
            let paths = super::lock_record::RecordedPaths {
                lock_path: self.options.lock_path.clone(),
                dead_letter_path: self.options.dead_letter_path.clone(),
            };
            super::lock_record::record(&self.client, &self.path, &paths);
        }
        Ok(())
    }

    /// Tells the consumer of an error met outside `consume`.
    pub(crate) fn tell_error(&self, error: &Error) {
        if let Some(consumer) = &self.consumer {
            consumer.error(error);
        }
    }
}
