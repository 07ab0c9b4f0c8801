//! The put path of a queue, between its handle and its [`Store`]: a put is
//! checked (the queue open, the items serialized and framed, the node not
//! too large, room in a bounded queue), then stored in the caller's thread
//! or handed to the put thread, and its outcome reported.
//!
//! The layers, top-down: the handle (`queue::handle`, whose kinds name the
//! node prefix) calls [`Producer::put`]; the producer stores a [`Put`]
//! itself or hands it to the put thread (`thread`), which batches puts into
//! pipelined multis and, with coalescing, gathers single records into
//! multi-item nodes (`coalesce`); both write through the [`Store`]
//! (`queue::store`), the one layer that sends the creates. How each put
//! ended goes to `outcomes`: the put listeners, the counters, the count
//! of background puts a flush waits for, and the failure of a background
//! put that the next put or flush reports. Nothing here sees the consumer
//! engine.
//!
//! Every put has a deadline for storing: a foreground put its caller's
//! (see [`Producer::put`]), a background one the client's request timeout
//! after it was accepted. So no put is stored long after anyone could hear
//! of it, and a put that cannot be stored fails by then.

mod coalesce;
mod outcomes;
mod thread;

use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use self::coalesce::Payload;
use self::outcomes::Outcomes;
use self::thread::Putter;
use super::stats::QueueCounters;
use super::store::{Put, Store};
use super::PutListener;
use crate::client::{Opts, DEADLINE_GRACE, TRY_WAIT};
use crate::codec::{encode_frame, QueueSerializer};
use crate::error::{Error, PutError, Result};
use crate::naming::Kind;
use crate::path;

/// How a queue's puts go out: the builder's put settings.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PutMode {
    /// A bounded queue's most items.
    pub(crate) max_items: Option<usize>,
    /// Puts are stored by the put thread, the caller not waiting.
    pub(crate) in_background: bool,
    /// Single puts are coalesced into multi-item nodes, the put thread
    /// waiting this long for more after the first (`None`: not coalesced).
    pub(crate) coalesce: Option<Duration>,
}

#[derive(Debug, PartialEq, Eq)]
enum Life {
    /// Being started by the builder, which holds the only handle.
    Starting,
    Started,
    Stopped,
}

/// The put side of one queue handle.
pub(crate) struct Producer<T> {
    store: Arc<Store>,
    outcomes: Arc<Outcomes<T>>,
    serializer: Arc<dyn QueueSerializer<T>>,
    /// The queue's kind: an id queue's puts are never coalesced.
    kind: Kind,
    mode: PutMode,
    life: Mutex<Life>,
    putter: Mutex<Option<Putter<T>>>,
}

/// Counts a put as ended when dropped, unless disarmed.
struct EndsOnDrop<'a>(Option<&'a AtomicU64>);

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

impl<T> Producer<T> {
    /// Stops accepting puts: `None` if it had stopped already, otherwise
    /// whether it had started.
    pub(crate) fn shut(&self) -> Option<bool> {
        match std::mem::replace(&mut *self.life.lock(), Life::Stopped) {
            Life::Stopped => None,
            was => Some(was == Life::Started),
        }
    }

    /// After [`shut`](Self::shut): waits for the background puts of a
    /// started producer and stops the put thread, by `deadline`. Returns how
    /// many puts were still pending then.
    pub(crate) fn finish(&self, started: bool, deadline: Instant) -> u64 {
        let mut puts_pending = 0;
        if started && !self.outcomes.wait_pending(Some(deadline)) {
            puts_pending = u64::try_from(self.outcomes.pending()).unwrap_or(u64::MAX);
            log::warn!(
                "queue {}: {puts_pending} background puts still pending at the close deadline; \
                 they are stored only if this process lives until they are (at most a request timeout \
                 after each was accepted)",
                self.store.path()
            );
        }
        if let Some(putter) = self.putter.lock().take() {
            putter.stop(deadline);
        }
        puts_pending
    }

    /// Drops the put listeners, once the queue is closed.
    pub(crate) fn forget_listeners(&self) {
        self.outcomes.clear_listeners();
    }

    /// Waits until every background put has finished; false at `deadline`,
    /// and false (once) if a background put failed since the last put or
    /// flush that reported one.
    pub(crate) fn flush(&self, deadline: Option<Instant>) -> bool {
        let finished = self.outcomes.wait_pending(deadline);
        let failed = self.outcomes.take_unreported();
        finished && failed.is_none()
    }

    /// Waits until every background put has finished; false at `deadline`.
    /// Reports no failure (a sharded queue waits so to count its shards).
    pub(crate) fn settle(&self, deadline: Option<Instant>) -> bool {
        self.outcomes.wait_pending(deadline)
    }

    pub(crate) fn add_listener(&self, listener: Arc<dyn PutListener<T>>) {
        self.outcomes.add_listener(listener);
    }
}

impl<T: Send + 'static> Producer<T> {
    /// A producer of items of `kind` into `store`, counting in `counters`.
    pub(crate) fn new(
        store: Store,
        serializer: Arc<dyn QueueSerializer<T>>,
        kind: Kind,
        mode: PutMode,
        counters: Arc<QueueCounters>,
    ) -> Producer<T> {
        Producer {
            store: Arc::new(store),
            outcomes: Arc::new(Outcomes::new(counters)),
            serializer,
            kind,
            mode,
            life: Mutex::new(Life::Starting),
            putter: Mutex::new(None),
        }
    }

    /// Reads the floor and starts the put thread (for background or
    /// coalesced puts); puts are accepted from then on. Called once, by the
    /// builder, once the queue's nodes exist.
    pub(crate) fn start(&self) -> Result<()> {
        let mut life = self.life.lock();
        // Known before the first put, so that a first put whose reply is lost
        // can be read back (see `store`).
        self.store.read_floor(Opts::new());
        if self.mode.in_background || self.mode.coalesce.is_some() {
            let linger = self.mode.coalesce.unwrap_or_default();
            let putter = Putter::start(Arc::clone(&self.store), Arc::clone(&self.outcomes), linger)?;
            *self.putter.lock() = Some(putter);
        }
        *life = Life::Started;
        Ok(())
    }

    /// Stores the items of `batch` in one node named `<path>/<prefix><seq>`.
    /// A bounded queue that stays full until the deadline gives the batch
    /// back, untouched.
    ///
    /// In the foreground, storing gives up at `deadline`, but not within a
    /// second of finding room (so a put that does not wait, or found room at
    /// its deadline, may wait that long for a server); without a deadline,
    /// one request timeout after finding room. While no server can be
    /// reached it fails then with [`Error::Unreachable`].
    ///
    /// In the background, a put is refused at once with
    /// [`Error::Unreachable`] while the client has been unable to reach a
    /// server for longer than its request timeout, and with the error of an
    /// earlier background put that failed, once, if no put or flush has
    /// reported it yet.
    pub(crate) fn put<B>(
        &self,
        prefix: &str,
        batch: B,
        deadline: Option<Instant>,
    ) -> std::result::Result<(), PutError<B>>
    where
        B: AsRef<[T]> + Into<Vec<T>>,
    {
        let started = Instant::now();
        // A put refused before it is stored or handed to the put thread has
        // ended too (a sharded queue reckons its shards by puts ended).
        let unsent = EndsOnDrop(Some(&self.outcomes.counters().puts_ended));
        if *self.life.lock() != Life::Started {
            return Err(Error::QueueClosed.into());
        }
        if self.mode.in_background {
            self.may_hand_over()?;
        }
        let mut records = self.records(batch.as_ref())?;
        let frame = encode_frame(records.iter().map(Vec::as_slice)).map_err(Error::encoding)?;
        let put = Put::new(path::join(self.store.path(), prefix), frame);
        self.store.check_size(&put.node_prefix, &put.data)?;
        if let Some(max) = self.mode.max_items {
            if !self.store.wait_for_room(max, deadline)? {
                return Err(PutError::Full(batch));
            }
        }
        let items = batch.into();
        unsent.disarm();
        let store_by = self.store_deadline(deadline);
        let guard = self.putter.lock();
        let Some(putter) = guard.as_ref() else {
            drop(guard);
            return self.store_now(&put, &items, store_by).map_err(Into::into);
        };
        // A single item of a kind whose nodes may hold several goes into a
        // node with others put meanwhile.
        let coalesce = self.mode.coalesce.is_some() && self.kind != Kind::Id && records.len() == 1;
        let payload = match records.pop().filter(|_| coalesce) {
            Some(record) => Payload::Record {
                node_prefix: put.node_prefix,
                record,
            },
            None => Payload::Node(put),
        };
        self.outcomes.handed_over();
        if self.mode.in_background {
            let accepted = Instant::now();
            putter.submit(
                payload,
                items,
                accepted.checked_add(self.store.client().request_timeout()),
                None,
            );
            return Ok(());
        }
        // Coalesced, in the foreground: wait for the node's result.
        let (done, result) = crossbeam_channel::bounded(1);
        putter.submit(payload, items, store_by, Some(done));
        // Other threads' puts join the node meanwhile.
        drop(guard);
        // The put thread answers by the node's deadline, or a second later
        // while a connected server is answering; waiting longer only guards
        // against a put thread that is gone.
        let answer_by = store_by.and_then(|d| d.checked_add(DEADLINE_GRACE * 2));
        let waited = match answer_by {
            Some(answer_by) => result.recv_deadline(answer_by).map_err(|e| match e {
                crossbeam_channel::RecvTimeoutError::Timeout => Error::Timeout {
                    operation: "put",
                    after: started.elapsed(),
                },
                crossbeam_channel::RecvTimeoutError::Disconnected => Error::Closed,
            }),
            None => result.recv().map_err(|_| Error::Closed),
        };
        waited??;
        Ok(())
    }

    /// Whether a background put may be handed to the put thread: not while
    /// the client has been unable to reach a server for longer than its
    /// request timeout, and not (once) while an earlier background put's
    /// failure has not been reported by a put or a flush.
    fn may_hand_over(&self) -> Result<()> {
        if let Some(failed) = self.outcomes.take_unreported() {
            return Err(failed);
        }
        let client = self.store.client();
        if let Some(down) = client.unreachable_for().filter(|down| *down > client.request_timeout()) {
            return Err(client.unreachable(down));
        }
        Ok(())
    }

    /// When a foreground put that has room now gives up storing, for a
    /// caller whose deadline is `deadline`: see [`put`](Self::put). `None`
    /// (no deadline) only if the request timeout is too large to add.
    fn store_deadline(&self, deadline: Option<Instant>) -> Option<Instant> {
        let now = Instant::now();
        match deadline {
            Some(deadline) => Some(
                now.checked_add(TRY_WAIT)
                    .map_or(deadline, |soonest| deadline.max(soonest)),
            ),
            None => now.checked_add(self.store.client().request_timeout()),
        }
    }

    /// The items serialized, one record each.
    fn records(&self, items: &[T]) -> Result<Vec<Vec<u8>>> {
        let mut records: Vec<Vec<u8>> = Vec::with_capacity(items.len());
        for item in items {
            let bytes = self
                .serializer
                .serialize(item)
                .map_err(|e| Error::Serialization { source: Arc::new(e) })?;
            records.push(bytes);
        }
        Ok(records)
    }

    /// Stores one node in the caller's thread and reports how it ended.
    fn store_now(&self, put: &Put, items: &[T], deadline: Option<Instant>) -> Result<()> {
        let result = self
            .store
            .store(std::slice::from_ref(put), deadline)
            .pop()
            .unwrap_or(Err(Error::Closed));
        self.outcomes.report(items, result.as_ref().map(|_| ()));
        QueueCounters::bump(&self.outcomes.counters().puts_ended);
        result
    }
}
