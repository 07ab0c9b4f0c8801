//! The pull form of a consumer: plain threads take items from an
//! [`ItemReceiver`] and acknowledge each [`Delivery`].

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, SendTimeoutError, Sender, TryRecvError};
use parking_lot::Mutex;

use super::engine::POLL;
use super::{ConsumeError, ItemMeta, QueueConsumer};
use crate::error::{Error, Result};

/// Where a queue built with [`QueueBuilder::pull_consumer`](crate::QueueBuilder::pull_consumer)
/// delivers its items. Any number of threads may take from it.
///
/// Nothing is buffered in the receiver: an item is handed to a taker as it
/// is claimed. With a lock path, the queue holds at most `claim_window` leases
/// (items locked and not yet acknowledged) at once.
///
/// Passing faults (a lost connection, an expired session) are ridden out:
/// takers just wait. When the queue is denied access to its nodes
/// ([`Error::NotAuthorized`]: the nodes' ACL does not allow this client's
/// identities; or [`Error::AuthFailed`]), the next take returns that error
/// unless an item is ready by then; the queue keeps trying with back-off, so
/// taking again waits for the next item or the next such report. An item
/// delivered after a denial (access was given back) clears it.
///
/// ```no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// use std::time::Duration;
/// use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
/// let client = ZkClient::connect("127.0.0.1:2181")?;
/// let (builder, receiver) = QueueBuilder::new(&client, "/jobs", StringSerializer)
///     .lock_path("/jobs-locks")
///     .pull_consumer();
/// let queue = builder.build_queue()?;
/// while let Some(job) = receiver.take_timeout(Duration::from_secs(5))? {
///     println!("working on {}", *job);
///     job.ack(); // deleted from ZooKeeper now
/// }
/// # Ok(())
/// # }
/// ```
pub struct ItemReceiver<T> {
    deliveries: Receiver<Delivery<T>>,
    closing: Arc<AtomicBool>,
    denied: Arc<Mutex<Option<Denial>>>,
    errors: Receiver<Error>,
}

/// One item taken from an [`ItemReceiver`]. With a lock path, the item stays
/// in ZooKeeper, locked, until [`ack`](Self::ack) (then it is deleted) or
/// [`nack`](Self::nack) (then the queue's error mode applies, as if a
/// callback consumer had failed). Dropping a delivery without either is a
/// `nack`. Without a lock path the item was deleted before delivery, and
/// both do nothing.
///
/// ``` no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
/// # let client = ZkClient::connect("127.0.0.1:2181")?;
/// # let (builder, receiver) = QueueBuilder::new(&client, "/jobs", StringSerializer).lock_path("/jobs-locks").pull_consumer();
/// # let queue = builder.build_queue()?;
/// let delivery = receiver.take()?;
/// match delivery.parse::<u32>() {
///     Ok(n) => {
///         println!("job {n}");
///         delivery.ack();
///     }
///     Err(e) => delivery.nack(e),
/// }
/// # Ok(())
/// # }
/// ```
#[must_use = "a delivery that is dropped without `ack` is requeued"]
pub struct Delivery<T> {
    item: Option<T>,
    meta: ItemMeta,
    reply: Option<Sender<std::result::Result<(), ConsumeError>>>,
}

impl<T> Delivery<T> {
    /// The item.
    ///
    /// ``` no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// # let (builder, receiver) = QueueBuilder::new(&client, "/jobs", StringSerializer).lock_path("/jobs-locks").pull_consumer();
    /// # let queue = builder.build_queue()?;
    /// let delivery = receiver.take()?;
    /// println!("working on {}", delivery.item());
    /// delivery.ack();
    /// # Ok(())
    /// # }
    /// ```
    pub fn item(&self) -> &T {
        self.item.as_ref().expect("a delivery holds its item until consumed")
    }

    /// What the queue knows about the item: attempt, node name, priority,
    /// due time, id, put time.
    ///
    /// ``` no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// # let (builder, receiver) = QueueBuilder::new(&client, "/jobs", StringSerializer).lock_path("/jobs-locks").pull_consumer();
    /// # let queue = builder.build_queue()?;
    /// let delivery = receiver.take()?;
    /// println!("{}: attempt {}", delivery.meta().name(), delivery.meta().attempt());
    /// delivery.ack();
    /// # Ok(())
    /// # }
    /// ```
    pub fn meta(&self) -> &ItemMeta {
        &self.meta
    }

    /// Acknowledges the item (it was processed) and returns it.
    ///
    /// ``` no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// # let (builder, receiver) = QueueBuilder::new(&client, "/jobs", StringSerializer).lock_path("/jobs-locks").pull_consumer();
    /// # let queue = builder.build_queue()?;
    /// let delivery = receiver.take()?;
    /// println!("done with {}", *delivery);
    /// delivery.ack(); // the item is deleted now
    /// # Ok(())
    /// # }
    /// ```
    pub fn ack(mut self) -> T {
        self.answer(Ok(()));
        match self.item.take() {
            Some(item) => item,
            None => unreachable!("a delivery holds its item until acknowledged"),
        }
    }

    /// Reports that the item could not be processed.
    ///
    /// ``` no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// # let (builder, receiver) = QueueBuilder::new(&client, "/jobs", StringSerializer).lock_path("/jobs-locks").pull_consumer();
    /// # let queue = builder.build_queue()?;
    /// let delivery = receiver.take()?;
    /// delivery.nack("the printer is out of paper"); // requeued (the default error mode)
    /// # Ok(())
    /// # }
    /// ```
    pub fn nack(mut self, reason: impl Into<ConsumeError>) {
        self.answer(Err(reason.into()));
    }

    /// Gives the item back untouched: no attempt is counted and the error
    /// mode does not apply. With a lock path the item is unlocked where it
    /// is, to be taken again in its turn (by this or another consumer); of an
    /// item put with `put_multi`, the records not yet acknowledged go back
    /// to the end of the queue. Without a lock path the item was deleted
    /// before delivery, and releasing it loses it (logged).
    ///
    /// ``` no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// # let (builder, receiver) = QueueBuilder::new(&client, "/jobs", StringSerializer).lock_path("/jobs-locks").pull_consumer();
    /// # let queue = builder.build_queue()?;
    /// let delivery = receiver.take()?;
    /// // Shutting down before starting on it: someone else will.
    /// delivery.release();
    /// # Ok(())
    /// # }
    /// ```
    pub fn release(mut self) {
        self.answer(Err(Box::new(Released("the item was released"))));
    }

    fn answer(&mut self, outcome: std::result::Result<(), ConsumeError>) {
        if let Some(reply) = self.reply.take() {
            let _ = reply.send(outcome);
        }
    }
}

impl<T> std::ops::Deref for Delivery<T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.item()
    }
}

impl<T> Drop for Delivery<T> {
    fn drop(&mut self) {
        self.answer(Err("the delivery was dropped without an acknowledgement".into()));
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for Delivery<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Delivery")
            .field("item", &self.item)
            .field("meta", &self.meta)
            .finish()
    }
}

impl<T> ItemReceiver<T> {
    /// The errors the queue met outside a take, as they happen: a lost lease
    /// ([`Error::LeaseLost`]: an acknowledged item was not deleted because
    /// another consumer holds it now, and may process it again), an item
    /// moved to the dead-letter path or left in place
    /// ([`Error::CorruptItem`], [`Error::NotEmpty`]), a denial, a failure the
    /// queue retries. Nothing needs to read them; the latest 256 unread are
    /// kept, later ones dropped (and logged) until some are read.
    ///
    /// ``` no_run
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181").unwrap();
    /// let (builder, receiver) = QueueBuilder::new(&client, "/jobs", StringSerializer)
    ///     .lock_path("/jobs-locks")
    ///     .pull_consumer();
    /// let errors = receiver.errors();
    /// std::thread::spawn(move || {
    ///     for error in errors {
    ///         eprintln!("queue /jobs: {error}");
    ///     }
    /// });
    /// ```
    pub fn errors(&self) -> Receiver<Error> {
        self.errors.clone()
    }

    /// Waits for the next item.
    ///
    /// # Errors
    /// [`Error::QueueClosed`] once the queue is closed (or dropped);
    /// [`Error::NotAuthorized`] or [`Error::AuthFailed`] if the queue was
    /// denied access since the previous take returned and no item is ready
    /// (see [`ItemReceiver`]).
    ///
    /// ``` no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// # let (builder, receiver) = QueueBuilder::new(&client, "/jobs", StringSerializer).lock_path("/jobs-locks").pull_consumer();
    /// # let queue = builder.build_queue()?;
    /// loop {
    ///     match receiver.take() {
    ///         Ok(job) => println!("{}", job.ack()),
    ///         Err(zk_queue::Error::QueueClosed) => break,
    ///         Err(e) => return Err(e),
    ///     }
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn take(&self) -> Result<Delivery<T>> {
        self.take_until(None)?.ok_or(Error::QueueClosed)
    }

    /// Waits at most `timeout` for the next item; `None` if none came.
    /// Errors as for [`take`](Self::take).
    ///
    /// ``` no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// # let (builder, receiver) = QueueBuilder::new(&client, "/jobs", StringSerializer).lock_path("/jobs-locks").pull_consumer();
    /// # let queue = builder.build_queue()?;
    /// use std::time::Duration;
    /// match receiver.take_timeout(Duration::from_secs(1))? {
    ///     Some(job) => println!("done with {}", job.ack()),
    ///     None => println!("nothing within a second"),
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn take_timeout(&self, timeout: Duration) -> Result<Option<Delivery<T>>> {
        match Instant::now().checked_add(timeout) {
            Some(deadline) => self.take_until(Some(deadline)),
            None => self.take().map(Some),
        }
    }

    /// The next item if one is being offered right now. Errors as for
    /// [`take`](Self::take).
    ///
    /// ``` no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// # let (builder, receiver) = QueueBuilder::new(&client, "/jobs", StringSerializer).lock_path("/jobs-locks").pull_consumer();
    /// # let queue = builder.build_queue()?;
    /// if let Some(job) = receiver.try_take()? {
    ///     job.ack();
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn try_take(&self) -> Result<Option<Delivery<T>>> {
        self.take_until(Some(Instant::now()))
    }

    fn take_until(&self, deadline: Option<Instant>) -> Result<Option<Delivery<T>>> {
        loop {
            if self.closing.load(Ordering::Acquire) {
                return Err(Error::QueueClosed);
            }
            // An item ready now wins over an older denial.
            match self.deliveries.try_recv() {
                Ok(delivery) => return Ok(Some(delivery)),
                Err(TryRecvError::Disconnected) => return Err(Error::QueueClosed),
                Err(TryRecvError::Empty) => {}
            }
            if let Some(denied) = self.denied.lock().take() {
                return Err(denied.error);
            }
            let wait = match deadline {
                Some(d) => d.saturating_duration_since(Instant::now()).min(POLL),
                None => POLL,
            };
            match self.deliveries.recv_timeout(wait) {
                Ok(delivery) => return Ok(Some(delivery)),
                Err(RecvTimeoutError::Disconnected) => return Err(Error::QueueClosed),
                Err(RecvTimeoutError::Timeout) => {
                    if deadline.is_some_and(|d| Instant::now() >= d) {
                        return Ok(None);
                    }
                }
            }
        }
    }
}

impl<T> std::fmt::Debug for ItemReceiver<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ItemReceiver").finish_non_exhaustive()
    }
}

/// Why an item was given back without a failed attempt: released by its
/// taker, or never taken before the queue closed.
#[derive(Debug)]
pub(crate) struct Released(pub(crate) &'static str);

impl std::fmt::Display for Released {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

impl std::error::Error for Released {}

impl Released {
    /// Whether a consumer's error is a release rather than a failure.
    pub(crate) fn is(error: &ConsumeError) -> bool {
        error.is::<Released>()
    }
}

/// The consumer behind an [`ItemReceiver`]: hands each item to a taker and
/// returns the taker's answer.
pub(crate) struct PullConsumer<T> {
    deliveries: Sender<Delivery<T>>,
    closing: Arc<AtomicBool>,
    /// The latest denial not yet returned to a taker.
    denied: Arc<Mutex<Option<Denial>>>,
    /// Every error reported, for [`ItemReceiver::errors`].
    errors: Sender<Error>,
}

/// How many reported errors [`ItemReceiver::errors`] keeps unread.
const UNREAD_ERRORS: usize = 256;

/// A connected consumer and receiver.
pub(crate) fn channel<T>() -> (PullConsumer<T>, ItemReceiver<T>) {
    let (tx, rx) = crossbeam_channel::bounded(0);
    let closing = Arc::new(AtomicBool::new(false));
    let denied = Arc::new(Mutex::new(None));
    let (errors_tx, errors) = crossbeam_channel::bounded(UNREAD_ERRORS);
    (
        PullConsumer {
            deliveries: tx,
            closing: Arc::clone(&closing),
            denied: Arc::clone(&denied),
            errors: errors_tx,
        },
        ItemReceiver {
            deliveries: rx,
            closing,
            denied,
            errors,
        },
    )
}

/// A denial not yet returned to a taker.
struct Denial {
    error: Error,
    /// Met by a transaction (an acknowledge, a requeue or a dead-letter
    /// move), rather than by listing or claiming.
    in_transaction: bool,
}

/// A copy, for a taker, of an error that retrying cannot cure: this client
/// may not use the queue's nodes.
fn denial(error: &Error) -> Option<Error> {
    match error {
        Error::NotAuthorized { .. } | Error::AuthFailed => Some(error.clone()),
        Error::MultiFailed { source, .. } => denial(source),
        _ => None,
    }
}

impl<T: Send + 'static> QueueConsumer<T> for PullConsumer<T> {
    fn consume(&self, item: T) -> std::result::Result<(), ConsumeError> {
        self.consume_with_meta(item, &ItemMeta::new("", 0, 0))
    }

    fn consume_with_meta(&self, item: T, meta: &ItemMeta) -> std::result::Result<(), ConsumeError> {
        // The queue could list and claim this item, so an earlier denial of
        // those is over (one of an acknowledge or a move still stands).
        self.denied.lock().take_if(|d| !d.in_transaction);
        let (reply, answer) = crossbeam_channel::bounded(1);
        let mut delivery = Delivery {
            item: Some(item),
            meta: meta.clone(),
            reply: Some(reply),
        };
        loop {
            if self.closing.load(Ordering::Acquire) {
                delivery.reply.take();
                return Err(Box::new(Released("the queue closed before anyone took the item")));
            }
            match self.deliveries.send_timeout(delivery, POLL) {
                Ok(()) => break,
                Err(SendTimeoutError::Timeout(back)) => delivery = back,
                Err(SendTimeoutError::Disconnected(mut back)) => {
                    back.reply.take();
                    return Err("the item receiver was dropped".into());
                }
            }
        }
        answer
            .recv()
            .unwrap_or_else(|_| Err("the delivery vanished without an answer".into()))
    }

    fn error(&self, error: &Error) {
        if let Some(denied) = denial(error) {
            *self.denied.lock() = Some(Denial {
                error: denied,
                in_transaction: matches!(error, Error::MultiFailed { .. }),
            });
        }
        if self.errors.try_send(error.clone()).is_err() {
            log::debug!("item receiver: {UNREAD_ERRORS} errors unread; dropping: {error}");
        }
    }

    fn closing(&self) {
        self.closing.store(true, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reported_errors_reach_the_errors_channel_in_order() {
        let (consumer, receiver) = channel::<String>();
        let errors = receiver.errors();
        QueueConsumer::error(
            &consumer,
            &Error::LeaseLost {
                path: "/q/queue-1".into(),
            },
        );
        QueueConsumer::error(
            &consumer,
            &Error::NotEmpty {
                path: "/q/queue-2".into(),
            },
        );
        assert!(matches!(errors.try_recv(), Ok(Error::LeaseLost { path }) if path == "/q/queue-1"));
        assert!(matches!(errors.try_recv(), Ok(Error::NotEmpty { path }) if path == "/q/queue-2"));
        assert!(errors.try_recv().is_err());
        assert!(matches!(receiver.try_take(), Ok(None)), "neither is a denial");
        for _ in 0..UNREAD_ERRORS + 10 {
            QueueConsumer::error(&consumer, &Error::SessionExpired);
        }
        assert_eq!(errors.len(), UNREAD_ERRORS, "unread errors are bounded");
    }

    #[test]
    fn a_denial_is_returned_by_one_take_and_passing_faults_are_not() {
        let (consumer, receiver) = channel::<String>();
        QueueConsumer::error(&consumer, &Error::SessionExpired);
        assert!(matches!(receiver.try_take(), Ok(None)));
        QueueConsumer::error(&consumer, &Error::NotAuthorized { path: "/q".into() });
        assert!(matches!(receiver.try_take(), Err(Error::NotAuthorized { path }) if path == "/q"));
        assert!(matches!(receiver.try_take(), Ok(None)));
        let denied_ack = Error::MultiFailed {
            index: 1,
            source: Box::new(Error::NotAuthorized {
                path: "/q/queue-1".into(),
            }),
        };
        QueueConsumer::error(&consumer, &denied_ack);
        let waited = receiver.take_timeout(Duration::from_secs(5));
        assert!(matches!(waited, Err(Error::NotAuthorized { path }) if path == "/q/queue-1"));
    }

    /// Hands `item` over from another thread, as the queue does, and
    /// returns it with what a take says afterwards.
    fn deliver(consumer: PullConsumer<String>, receiver: &ItemReceiver<String>, item: &str) -> (String, Result<()>) {
        let item = item.to_string();
        let thread = std::thread::spawn(move || (consumer.consume(item).is_ok(), consumer));
        let delivery = receiver.deliveries.recv_timeout(Duration::from_secs(5)).unwrap();
        let got = delivery.ack();
        let (answered, _still_open) = thread.join().unwrap();
        assert!(answered, "the taker's answer reached the queue");
        (got, receiver.try_take().map(|none| assert!(none.is_none())))
    }

    #[test]
    fn a_delivered_item_clears_a_claim_denial_but_not_a_denied_acknowledge() {
        let (consumer, receiver) = channel::<String>();
        QueueConsumer::error(&consumer, &Error::NotAuthorized { path: "/q".into() });
        let (item, then) = deliver(consumer, &receiver, "a");
        assert_eq!(item, "a");
        assert!(then.is_ok(), "access came back: {then:?}");

        let (consumer, receiver) = channel::<String>();
        let denied_ack = Error::MultiFailed {
            index: 0,
            source: Box::new(Error::NotAuthorized {
                path: "/q/queue-1".into(),
            }),
        };
        QueueConsumer::error(&consumer, &denied_ack);
        let (item, then) = deliver(consumer, &receiver, "b");
        assert_eq!(item, "b");
        assert!(
            matches!(then, Err(Error::NotAuthorized { ref path }) if path == "/q/queue-1"),
            "the denied acknowledge is still told: {then:?}"
        );
    }
}
