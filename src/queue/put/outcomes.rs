//! How puts end: the put listeners and counters told of each outcome, the
//! background puts not finished yet, which a flush or a close waits for,
//! and the first background failure no caller has heard of yet, which the
//! next put or flush reports.

use std::sync::Arc;
use std::time::Instant;

use parking_lot::{Condvar, Mutex, RwLock};

use crate::error::Error;
use crate::queue::stats::QueueCounters;
use crate::queue::PutListener;

/// Where the outcome of every put goes; shared by the callers and the put
/// thread.
pub(super) struct Outcomes<T> {
    listeners: RwLock<Vec<Arc<dyn PutListener<T>>>>,
    counters: Arc<QueueCounters>,
    /// Puts handed to the put thread and not finished yet.
    pending: Mutex<usize>,
    pending_done: Condvar,
    /// The first background put failure since the last one a put or a
    /// flush reported.
    unheard: Mutex<Option<Error>>,
}

impl<T> Outcomes<T> {
    pub(super) fn new(counters: Arc<QueueCounters>) -> Outcomes<T> {
        Outcomes {
            listeners: RwLock::new(Vec::new()),
            counters,
            pending: Mutex::new(0),
            pending_done: Condvar::new(),
            unheard: Mutex::new(None),
        }
    }

    /// The counters of the queue the puts go to.
    pub(super) fn counters(&self) -> &QueueCounters {
        &self.counters
    }

    pub(super) fn add_listener(&self, listener: Arc<dyn PutListener<T>>) {
        self.listeners.write().push(listener);
    }

    /// Drops the listeners: a closed queue tells no one.
    pub(super) fn clear_listeners(&self) {
        self.listeners.write().clear();
    }

    /// A put is handed to the put thread.
    pub(super) fn handed_over(&self) {
        let mut pending = self.pending.lock();
        *pending += 1;
        self.counters.metrics.puts_pending(*pending);
    }

    /// A background put failed: the next put or flush reports it, unless an
    /// earlier failure is still to be reported.
    pub(super) fn failed_unheard(&self, error: &Error) {
        self.unheard.lock().get_or_insert_with(|| error.clone());
    }

    /// The background failure to report now, if any; reported once.
    pub(super) fn take_unreported(&self) -> Option<Error> {
        self.unheard.lock().take()
    }

    /// Called by the put thread when a put handed to it has finished.
    pub(super) fn finished(&self) {
        QueueCounters::bump(&self.counters.puts_ended);
        let mut pending = self.pending.lock();
        *pending = pending.saturating_sub(1);
        self.counters.metrics.puts_pending(*pending);
        if *pending == 0 {
            self.pending_done.notify_all();
        }
    }

    /// How many puts handed to the put thread have not finished.
    pub(super) fn pending(&self) -> usize {
        *self.pending.lock()
    }

    /// Waits until no put handed to the put thread is pending; false at the
    /// deadline.
    pub(super) fn wait_pending(&self, deadline: Option<Instant>) -> bool {
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

impl<T: Send + 'static> Outcomes<T> {
    /// Tells the put listeners how a put ended.
    pub(super) fn report(&self, items: &[T], result: std::result::Result<(), &Error>) {
        let counter = match result {
            Ok(()) => &self.counters.puts,
            Err(_) => &self.counters.put_failures,
        };
        QueueCounters::add(counter, items.len());
        match result {
            Ok(()) => self.counters.metrics.put(items.len()),
            Err(_) => self.counters.metrics.put_failed(items.len()),
        }
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
}
