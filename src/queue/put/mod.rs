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
//! ended goes to `outcomes`: the put listeners, the counters, and the count
//! of background puts a flush waits for. Nothing here sees the consumer
//! engine.

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
use crate::client::Opts;
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
            log::info!(
                "queue {}: {puts_pending} background puts still pending at the close deadline",
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

    /// Waits until every background put has finished; false at `deadline`.
    pub(crate) fn flush(&self, deadline: Option<Instant>) -> bool {
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
        let unsent = EndsOnDrop(Some(&self.outcomes.counters().puts_ended));
        if *self.life.lock() != Life::Started {
            return Err(Error::QueueClosed.into());
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
        let guard = self.putter.lock();
        let Some(putter) = guard.as_ref() else {
            drop(guard);
            return self.store_now(&put, &items, deadline).map_err(Into::into);
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
