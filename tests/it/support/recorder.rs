//! A queue consumer that records what it consumed, for assertions.

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use zk_queue::{ConnectionState, ConsumeError, Error, QueueConsumer};

/// Records consumed items; optionally fails chosen deliveries.
#[derive(Clone, Default)]
pub struct Recorder {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    items: Mutex<Vec<String>>,
    deliveries: Mutex<Vec<String>>,
    states: Mutex<Vec<ConnectionState>>,
    errors: Mutex<Vec<String>>,
    changed: Condvar,
    /// Deliveries (0-based, counted over all items) that fail.
    fail: Mutex<Option<FailRule>>,
    delay: Mutex<Duration>,
    /// While set, each delivery waits ([`Recorder::held`]).
    held: Mutex<bool>,
    released: Condvar,
}

type FailRule = Box<dyn FnMut(&str, usize) -> bool + Send>;

impl Recorder {
    pub fn new() -> Recorder {
        Recorder::default()
    }

    /// Fails the deliveries for which `rule(item, delivery_index)` is true.
    pub fn failing(self, rule: impl FnMut(&str, usize) -> bool + Send + 'static) -> Recorder {
        *self.inner.fail.lock() = Some(Box::new(rule));
        self
    }

    /// Sleeps this long in each delivery.
    pub fn slow(self, delay: Duration) -> Recorder {
        *self.inner.delay.lock() = delay;
        self
    }

    /// Holds every delivery until [`release`](Self::release): a lock-safe
    /// queue keeps the items it delivered meanwhile.
    pub fn held(self) -> Recorder {
        *self.inner.held.lock() = true;
        self
    }

    /// Lets held deliveries, and every later one, go on.
    pub fn release(&self) {
        *self.inner.held.lock() = false;
        self.inner.released.notify_all();
    }

    /// Items consumed successfully, in order.
    pub fn items(&self) -> Vec<String> {
        self.inner.items.lock().clone()
    }

    /// Every delivery, failed ones included, in order.
    pub fn deliveries(&self) -> Vec<String> {
        self.inner.deliveries.lock().clone()
    }

    pub fn states(&self) -> Vec<ConnectionState> {
        self.inner.states.lock().clone()
    }

    pub fn errors(&self) -> Vec<String> {
        self.inner.errors.lock().clone()
    }

    /// Waits until `n` items were consumed successfully; panics after `within`.
    pub fn wait_for(&self, n: usize, within: Duration) -> Vec<String> {
        let deadline = Instant::now() + within;
        let mut items = self.inner.items.lock();
        while items.len() < n {
            if self.inner.changed.wait_until(&mut items, deadline).timed_out() {
                panic!("{} of {n} items within {within:?}: {:?}", items.len(), *items);
            }
        }
        items.clone()
    }

    /// Waits until `predicate` holds for the deliveries; panics after `within`.
    pub fn wait_until(&self, within: Duration, mut predicate: impl FnMut(&Recorder) -> bool) {
        let deadline = Instant::now() + within;
        while !predicate(self) {
            assert!(
                Instant::now() < deadline,
                "condition not met within {within:?}; deliveries {:?}",
                self.deliveries()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl QueueConsumer<String> for Recorder {
    fn consume(&self, item: String) -> Result<(), ConsumeError> {
        let mut held = self.inner.held.lock();
        while *held {
            self.inner.released.wait(&mut held);
        }
        drop(held);
        let delay = *self.inner.delay.lock();
        if !delay.is_zero() {
            std::thread::sleep(delay);
        }
        let index = {
            let mut deliveries = self.inner.deliveries.lock();
            deliveries.push(item.clone());
            deliveries.len() - 1
        };
        if self.inner.fail.lock().as_mut().is_some_and(|fail| fail(&item, index)) {
            return Err(format!("failing delivery {index} of {item}").into());
        }
        self.inner.items.lock().push(item);
        self.inner.changed.notify_all();
        Ok(())
    }

    fn state_changed(&self, state: ConnectionState) {
        self.inner.states.lock().push(state);
    }

    fn error(&self, error: &Error) {
        self.inner.errors.lock().push(error.to_string());
    }
}
