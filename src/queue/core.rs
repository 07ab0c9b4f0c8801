//! The state every queue kind shares: options, lifecycle, and the put path.

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex, RwLock};

use super::engine::Engine;
use super::pull::PullConsumer;
use super::put::{Payload, Putter};
use super::stats::{CloseReport, QueueCounters};
use super::store::{Floor, Put};
use super::{ErrorMode, PutListener, QueueConsumer};
use crate::client::{Acl, ConnectionState, Opts, ZkClient};
use crate::codec::{encode_frame, QueueSerializer};
use crate::error::{Error, PutError, Result};
use crate::naming::{is_item, Kind};
use crate::path;
use crate::sync::{Backoff, Gate, Latch};

/// The builder's settings.
#[derive(Clone, Debug)]
pub(crate) struct Options {
    pub(crate) lock_path: Option<String>,
    pub(crate) max_items: Option<usize>,
    pub(crate) put_in_background: bool,
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
    /// Single puts are coalesced into multi-item nodes, the put thread
    /// waiting this long for more after the first (`None`: not coalesced).
    pub(crate) coalesce: Option<Duration>,
    /// Shared by the shards of a sharded queue: how many of their scanners
    /// may hold a whole listing at once.
    pub(crate) listing_gate: Option<Arc<Gate>>,
}

/// Who consumes a queue's items.
pub(crate) enum Consumer<T> {
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

#[derive(Debug, PartialEq, Eq)]
enum Life {
    /// Being started by the builder, which holds the only handle.
    Starting,
    Started,
    Stopped,
}

pub(crate) struct Core<T> {
    pub(crate) client: ZkClient,
    pub(crate) path: String,
    pub(crate) kind: Kind,
    pub(crate) serializer: Arc<dyn QueueSerializer<T>>,
    pub(crate) consumer: Option<Consumer<T>>,
    pub(crate) options: Options,
    listeners: RwLock<Vec<Arc<dyn PutListener<T>>>>,
    life: Mutex<Life>,
    /// Puts handed to the put thread and not finished yet.
    pending: Mutex<usize>,
    pending_done: Condvar,
    putter: Mutex<Option<Putter<T>>>,
    engine: Mutex<Option<Engine>>,
    pub(crate) counters: QueueCounters,
    /// A lower bound for the sequence of this producer's next item.
    pub(crate) floor: Floor,
}

/// Counts a put as ended when dropped, unless disarmed.
struct EndsOnDrop<'a>(Option<&'a std::sync::atomic::AtomicU64>);

impl EndsOnDrop<'_> {
    fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for EndsOnDrop<'_> {
    fn drop(&mut self) {
        if let Some(counter) = self.0 {
            QueueCounters::bump(counter);
        }
    }
}

impl<T> Core<T> {
    /// Flushes puts, stops claiming, waits for in-flight items, all within
    /// the final-flush time.
    pub(crate) fn close(&self, deadline: Instant) -> CloseReport {
        let was = std::mem::replace(&mut *self.life.lock(), Life::Stopped);
        if was == Life::Stopped {
            return CloseReport::default();
        }
        let before = self.counters.snapshot();
        // A queue whose start failed has no puts to wait for, but may have
        // threads to stop.
        let mut puts_pending = 0;
        if was == Life::Started && !self.wait_pending(Some(deadline)) {
            puts_pending = u64::try_from(*self.pending.lock()).unwrap_or(u64::MAX);
            log::info!(
                "queue {}: {puts_pending} background puts still pending at the close deadline",
                self.path
            );
        }
        if let Some(putter) = self.putter.lock().take() {
            putter.stop(deadline);
        }
        if let Some(engine) = self.engine.lock().take() {
            engine.stop(deadline);
        }
        self.listeners.write().clear();
        let report = CloseReport::between(&before, &self.counters.snapshot(), puts_pending);
        log::info!("queue {} closed: {report:?}", self.path);
        report
    }

    /// Called by the put thread when a background put has finished.
    pub(crate) fn put_finished(&self) {
        QueueCounters::bump(&self.counters.puts_ended);
        let mut pending = self.pending.lock();
        *pending = pending.saturating_sub(1);
        if *pending == 0 {
            self.pending_done.notify_all();
        }
    }

    /// Waits until no background put is pending; false at the deadline.
    pub(crate) fn wait_pending(&self, deadline: Option<Instant>) -> bool {
        let mut pending = self.pending.lock();
        while *pending > 0 {
            match deadline {
                Some(d) => {
                    if self.pending_done.wait_until(&mut pending, d).timed_out() {
                        return *pending == 0;
                    }
                }
                None => self.pending_done.wait(&mut pending),
            }
        }
        true
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
    ) -> Core<T> {
        Core {
            client,
            path,
            kind,
            serializer,
            consumer,
            options,
            listeners: RwLock::new(Vec::new()),
            life: Mutex::new(Life::Starting),
            pending: Mutex::new(0),
            pending_done: Condvar::new(),
            putter: Mutex::new(None),
            engine: Mutex::new(None),
            counters: QueueCounters::default(),
            floor: Floor::default(),
        }
    }

    /// Creates the queue's nodes and starts its threads; called once, by the
    /// builder, before any handle exists. If it fails, closing the queue
    /// stops the threads it started.
    pub(crate) fn start(self: &Arc<Self>) -> Result<()> {
        let mut life = self.life.lock();
        self.ensure_nodes()?;
        if self.consumer.is_some() {
            // `exists` is never ACL-checked: one read refuses a consumer that
            // could not take a single item now, instead of at its first scan.
            self.client.get_data(&self.path)?;
        }
        // Known before the first put, so that a first put whose reply is lost
        // can be read back (see `store`).
        self.read_floor(Opts::new());
        if self.options.put_in_background || self.options.coalesce.is_some() {
            let linger = self.options.coalesce.unwrap_or_default();
            *self.putter.lock() = Some(Putter::start(Arc::clone(self), linger)?);
        }
        if self.consumer.is_some() {
            *self.engine.lock() = Some(Engine::start(Arc::clone(self))?);
        }
        *life = Life::Started;
        log::info!("queue {} started", self.path);
        Ok(())
    }

    pub(crate) fn ensure_nodes(&self) -> Result<()> {
        let acl = &self.options.acl;
        self.client.ensure_path_with(&self.path, Opts::new().acl(acl))?;
        for other in [&self.options.lock_path, &self.options.dead_letter_path]
            .into_iter()
            .flatten()
        {
            self.client.ensure_path_with(other, Opts::new().acl(acl))?;
        }
        if let (Some(lock_path), Some(_)) = (&self.options.lock_path, &self.consumer) {
            super::lock_record::record(&self.client, &self.path, lock_path);
        }
        Ok(())
    }

    /// Tells the consumer of an error met outside `consume`.
    pub(crate) fn tell_error(&self, error: &Error) {
        if let Some(consumer) = &self.consumer {
            consumer.error(error);
        }
    }

    pub(crate) fn add_listener(&self, listener: Arc<dyn PutListener<T>>) {
        self.listeners.write().push(listener);
    }

    /// Stores the items of `batch` in one node named `<path>/<prefix><seq>`.
    /// A bounded queue that stays full until the deadline gives the batch
    /// back, untouched.
    pub(crate) fn put<B>(
        &self,
        prefix: &str,
        batch: B,
        deadline: Option<Instant>,
    ) -> std::result::Result<(), PutError<B>>
    where
        B: AsRef<[T]> + Into<Vec<T>>,
    {
        // A put refused before it is stored or handed to the put thread has
        // ended too (a sharded queue reckons its shards by puts ended).
        let unsent = EndsOnDrop(Some(&self.counters.puts_ended));
        if *self.life.lock() != Life::Started {
            return Err(Error::QueueClosed.into());
        }
        let mut records: Vec<Vec<u8>> = Vec::with_capacity(batch.as_ref().len());
        for item in batch.as_ref() {
            let bytes = self
                .serializer
                .serialize(item)
                .map_err(|e| Error::Serialization { source: Arc::new(e) })?;
            records.push(bytes);
        }
        let frame = encode_frame(records.iter().map(Vec::as_slice)).map_err(Error::encoding)?;
        let put = Put::new(path::join(&self.path, prefix), frame);
        self.client
            .check_create_size(&put.node_prefix, put.data.len(), &self.options.acl)?;
        if let Some(max) = self.options.max_items {
            if !self.wait_for_space(max, deadline)? {
                return Err(PutError::Full(batch));
            }
        }
        let items = batch.into();
        unsent.disarm();
        let guard = self.putter.lock();
        let Some(putter) = guard.as_ref() else {
            drop(guard);
            let result = self
                .store(std::slice::from_ref(&put), deadline)
                .pop()
                .unwrap_or(Err(Error::Closed));
            self.report(&items, result.as_ref().map(|_| ()));
            QueueCounters::bump(&self.counters.puts_ended);
            result?;
            return Ok(());
        };
        // A single item of a kind whose nodes may hold several goes into a
        // node with others put meanwhile.
        let coalesce = self.options.coalesce.is_some() && self.kind != Kind::Id && records.len() == 1;
        let payload = match records.pop().filter(|_| coalesce) {
            Some(record) => Payload::Record {
                node_prefix: put.node_prefix,
                record,
            },
            None => Payload::Node(put),
        };
        *self.pending.lock() += 1;
        if self.options.put_in_background {
            putter.submit(payload, items, None);
            return Ok(());
        }
        // Coalesced, in the foreground: wait for the node's result.
        let (done, result) = crossbeam_channel::bounded(1);
        putter.submit(payload, items, Some(done));
        // Other threads' puts join the node meanwhile.
        drop(guard);
        let started = Instant::now();
        let waited = match deadline {
            Some(deadline) => result.recv_deadline(deadline).map_err(|_| Error::Timeout {
                operation: "put",
                after: started.elapsed(),
            }),
            None => result.recv().map_err(|_| Error::Closed),
        };
        waited??;
        Ok(())
    }

    /// Tells the put listeners how a put ended.
    pub(crate) fn report(&self, items: &[T], result: std::result::Result<(), &Error>) {
        let counter = match result {
            Ok(()) => &self.counters.puts,
            Err(_) => &self.counters.put_failures,
        };
        QueueCounters::add(counter, items.len());
        for listener in self.listeners.read().iter() {
            let call = std::panic::AssertUnwindSafe(|| match result {
                Ok(()) => listener.put_completed(items),
                Err(e) => listener.put_failed(items, e),
            });
            if std::panic::catch_unwind(call).is_err() {
                log::error!("a put listener panicked");
            }
        }
    }

    /// The age of the item next in line; see `oldest_age` on the handles.
    pub(crate) fn oldest_age(&self) -> Result<Option<Duration>> {
        let mut names = match self.client.get_children(&self.path) {
            Ok((names, _)) => names,
            Err(Error::NoNode { .. }) => return Ok(None),
            Err(e) => return Err(e),
        };
        names.retain(|n| is_item(n));
        self.kind.sort(&mut names);
        for name in names {
            // The head may be consumed meanwhile: look at the next one then.
            if let Some(stat) = self.client.exists(&path::join(&self.path, &name))? {
                let age = super::DeliverAt::now().epoch_millis() - stat.ctime;
                return Ok(Some(Duration::from_millis(age.max(0).unsigned_abs())));
            }
        }
        Ok(None)
    }

    /// Waits until the queue holds fewer than `max` items (counted afresh,
    /// queue items only), or the deadline passes.
    fn wait_for_space(&self, max: usize, deadline: Option<Instant>) -> Result<bool> {
        loop {
            let opts = Opts::new().until(deadline);
            let (names, _, watch) = match self.client.watch_children(&self.path, &Latch::new(), opts) {
                Err(Error::NoNode { .. }) => return Ok(true),
                other => other?,
            };
            if names.iter().filter(|n| is_item(n)).count() < max {
                return Ok(true);
            }
            let _guard = self.client.wake_on_state_change(watch.latch());
            if !watch.latch().wait_until(deadline) {
                return Ok(false);
            }
        }
    }
}
