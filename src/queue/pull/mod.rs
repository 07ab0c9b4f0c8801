//! The pull form of a consumer: plain threads take items from an
//! [`ItemReceiver`] and acknowledge each [`Delivery`].

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, TryRecvError};
use parking_lot::Mutex;

mod consumer;
mod delivery;

pub(crate) use self::consumer::PullConsumer;
use self::consumer::{Denial, UNREAD_ERRORS};
pub use self::delivery::Delivery;
pub(crate) use self::delivery::Released;
use super::poll::POLL;
use crate::client::WeakClient;
use crate::error::{Error, Result};

/// Where a queue built with [`QueueBuilder::pull_consumer`](crate::QueueBuilder::pull_consumer)
/// delivers its items.
///
/// # Threads
///
/// `ItemReceiver` is `Clone`, `Send` and `Sync`: share it by reference or
/// clone it into each thread; every clone takes from the same queue. Nothing
/// is buffered in the receiver: an item is handed to a taker as it is
/// claimed, in queue order.
///
/// # Outstanding deliveries
///
/// A delivery is *outstanding* from the moment a take returns it until it
/// is acknowledged, nacked, released or dropped. Up to `claim_window`
/// (see [`QueueBuilder::claim_window`](crate::QueueBuilder::claim_window),
/// default 64) may be outstanding at once, spread over any number of threads,
/// and a thread may hold several. A take beyond that waits until one of them
/// is settled ([`take_timeout`](Self::take_timeout) returns `None` at its
/// deadline, [`try_take`](Self::try_take) at once), so a single thread that
/// takes `claim_window + 1` deliveries without settling any waits for ever.
/// [`consumer_threads`](crate::QueueBuilder::consumer_threads) does not apply:
/// the takers are the threads. With a lock path every outstanding delivery
/// holds its lease, and the queue holds at most `claim_window` leases at once.
///
/// # Dropping the receiver
///
/// Once every clone of the receiver is dropped, no taker can come again:
/// the queue stops consuming (it claims nothing more, logging one WARN), and
/// with a lock path the items it had claimed go back unlocked, without a
/// failed attempt, for other consumers. Puts and [`stats`](crate::Queue::stats)
/// still work until the queue is closed.
///
/// # Faults
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
/// // Four threads share the receiver; each may hold several deliveries.
/// std::thread::scope(|s| {
///     for _ in 0..4 {
///         s.spawn(|| -> Result<(), zk_queue::Error> {
///             while let Some(job) = receiver.take_timeout(Duration::from_secs(5))? {
///                 println!("working on {}", *job);
///                 job.ack(); // deleted from ZooKeeper now
///             }
///             Ok(())
///         });
///     }
/// });
/// # Ok(())
/// # }
/// ```
pub struct ItemReceiver<T> {
    deliveries: Receiver<Delivery<T>>,
    closing: Arc<AtomicBool>,
    denied: Arc<Mutex<Option<Denial>>>,
    errors: Receiver<Error>,
    /// Takes (of every clone) waiting for an item now.
    waiting: Arc<AtomicUsize>,
    /// The queue's client, asked whether a server can be reached.
    client: WeakClient,
}

/// Counts one waiting take for as long as it lives.
struct Waiting<'a>(&'a AtomicUsize);

impl<'a> Waiting<'a> {
    fn start(count: &'a AtomicUsize) -> Waiting<'a> {
        count.fetch_add(1, Ordering::AcqRel);
        Waiting(count)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
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

    /// Waits for the next item; with `claim_window` deliveries outstanding,
    /// until one of them is settled (see [`ItemReceiver`]).
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

    /// Waits at most `timeout` for the next item; `None` if none came
    /// (none was ready, or `claim_window` deliveries stayed outstanding).
    /// Errors as for [`take`](Self::take), and
    /// [`Error::Unreachable`] if no item came while no server could be
    /// reached at the deadline: an empty queue and an ensemble out of reach
    /// are told apart, as on every handle.
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

    /// The next item if one is being offered right now (never while
    /// `claim_window` deliveries are outstanding); never waits. Errors as
    /// for [`take_timeout`](Self::take_timeout).
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

    /// How many takes (through this receiver or any clone) are waiting for
    /// an item right now: they found none ready and wait for the next, or
    /// for a settled delivery when `claim_window` are outstanding. A take
    /// counts from its first wait until it returns. For monitoring, and for
    /// tests that act once a taker waits.
    ///
    /// ``` no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let (builder, receiver) = QueueBuilder::new(&client, "/jobs", StringSerializer).pull_consumer();
    /// let _queue = builder.build_queue()?;
    /// println!("{} workers idle", receiver.waiting_takers());
    /// # Ok(())
    /// # }
    /// ```
    pub fn waiting_takers(&self) -> usize {
        self.waiting.load(Ordering::Acquire)
    }

    fn take_until(&self, deadline: Option<Instant>) -> Result<Option<Delivery<T>>> {
        let started = Instant::now();
        let mut waiting = None;
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
            if waiting.is_none() && !wait.is_zero() {
                waiting = Some(Waiting::start(&self.waiting));
            }
            match self.deliveries.recv_timeout(wait) {
                Ok(delivery) => return Ok(Some(delivery)),
                Err(RecvTimeoutError::Disconnected) => return Err(Error::QueueClosed),
                Err(RecvTimeoutError::Timeout) => {
                    if deadline.is_some_and(|d| Instant::now() >= d) {
                        return self.nothing_by_the_deadline(started);
                    }
                }
            }
        }
    }
}

impl<T> ItemReceiver<T> {
    /// What a take that got no item by its deadline returns: `None` (nothing
    /// came in time), or, while no server can be reached, the error that
    /// says so, as every handle's timed call does.
    fn nothing_by_the_deadline(&self, started: Instant) -> Result<Option<Delivery<T>>> {
        match self.client.upgrade() {
            Some(client) if !client.is_closed() && !client.state().is_connected() => {
                Err(client.unreachable(started.elapsed()))
            }
            _ => Ok(None),
        }
    }
}

impl<T> Clone for ItemReceiver<T> {
    /// Another handle on the same receiver: the clones take from the same
    /// queue, share the outstanding-delivery window, and read the same
    /// [`errors`](Self::errors) (each error goes to one reader).
    ///
    /// ``` no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// # let (builder, receiver) = QueueBuilder::new(&client, "/jobs", StringSerializer).lock_path("/jobs-locks").pull_consumer();
    /// # let queue = builder.build_queue()?;
    /// let worker = receiver.clone();
    /// let handle = std::thread::spawn(move || -> Result<(), zk_queue::Error> {
    ///     let job = worker.take()?;
    ///     println!("{}", job.ack());
    ///     Ok(())
    /// });
    /// let job = receiver.take()?; // both threads hold a delivery at once
    /// job.ack();
    /// handle.join().expect("the worker panicked")?;
    /// # Ok(())
    /// # }
    /// ```
    fn clone(&self) -> Self {
        ItemReceiver {
            deliveries: self.deliveries.clone(),
            closing: Arc::clone(&self.closing),
            denied: Arc::clone(&self.denied),
            errors: self.errors.clone(),
            waiting: Arc::clone(&self.waiting),
            client: self.client.clone(),
        }
    }
}

impl<T> std::fmt::Debug for ItemReceiver<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ItemReceiver").finish_non_exhaustive()
    }
}

/// A connected consumer and receiver.
pub(crate) fn channel<T>(client: WeakClient) -> (PullConsumer<T>, ItemReceiver<T>) {
    // A rendezvous: nothing waits in the channel, so an item is delivered
    // only to a taker that asked for it, and in the dispatcher's order.
    let (tx, rx) = crossbeam_channel::bounded(0);
    let closing = Arc::new(AtomicBool::new(false));
    let denied = Arc::new(Mutex::new(None));
    let (errors_tx, errors) = crossbeam_channel::bounded(UNREAD_ERRORS);
    (
        PullConsumer {
            deliveries: tx,
            answers: crossbeam_channel::unbounded(),
            closing: Arc::clone(&closing),
            denied: Arc::clone(&denied),
            errors: errors_tx,
        },
        ItemReceiver {
            deliveries: rx,
            closing,
            denied,
            errors,
            waiting: Arc::new(AtomicUsize::new(0)),
            client,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::ItemMeta;

    #[test]
    fn a_receiver_can_be_shared_between_threads() {
        fn shareable<R: Clone + Send + Sync + 'static>() {}
        shareable::<ItemReceiver<String>>();
        fn sendable<D: Send + 'static>() {}
        sendable::<Delivery<String>>();
    }

    #[test]
    fn a_take_counts_as_waiting_from_its_first_wait_until_it_returns() {
        let (consumer, receiver) = channel::<String>(WeakClient::detached());
        assert!(matches!(receiver.try_take(), Ok(None)));
        assert_eq!(receiver.waiting_takers(), 0, "a try_take never waits");
        let taker = receiver.clone();
        let thread = std::thread::spawn(move || taker.take_timeout(Duration::from_secs(30)).map(|d| d.is_some()));
        let deadline = Instant::now() + Duration::from_secs(10);
        while receiver.waiting_takers() == 0 {
            assert!(Instant::now() < deadline, "the take never counted as waiting");
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(receiver.waiting_takers(), 1);
        drop(consumer); // the queue goes: the take returns
        assert!(matches!(thread.join(), Ok(Err(Error::QueueClosed))));
        assert_eq!(receiver.waiting_takers(), 0);
    }

    #[test]
    fn reported_errors_reach_the_errors_channel_in_order() {
        let (consumer, receiver) = channel::<String>(WeakClient::detached());
        let errors = receiver.errors();
        consumer.error(&Error::LeaseLost {
            path: "/q/queue-1".into(),
        });
        consumer.error(&Error::NotEmpty {
            path: "/q/queue-2".into(),
        });
        assert!(matches!(errors.try_recv(), Ok(Error::LeaseLost { path }) if path == "/q/queue-1"));
        assert!(matches!(errors.try_recv(), Ok(Error::NotEmpty { path }) if path == "/q/queue-2"));
        assert!(errors.try_recv().is_err());
        assert!(matches!(receiver.try_take(), Ok(None)), "neither is a denial");
        for _ in 0..UNREAD_ERRORS + 10 {
            consumer.error(&Error::SessionExpired);
        }
        assert_eq!(errors.len(), UNREAD_ERRORS, "unread errors are bounded");
    }

    #[test]
    fn a_denial_is_returned_by_one_take_and_passing_faults_are_not() {
        let (consumer, receiver) = channel::<String>(WeakClient::detached());
        consumer.error(&Error::SessionExpired);
        assert!(matches!(receiver.try_take(), Ok(None)));
        consumer.error(&Error::NotAuthorized { path: "/q".into() });
        assert!(matches!(receiver.try_take(), Err(Error::NotAuthorized { path }) if path == "/q"));
        assert!(matches!(receiver.try_take(), Ok(None)));
        let denied_ack = Error::MultiFailed {
            index: 1,
            source: Box::new(Error::NotAuthorized {
                path: "/q/queue-1".into(),
            }),
        };
        consumer.error(&denied_ack);
        let waited = receiver.take_timeout(Duration::from_secs(5));
        assert!(matches!(waited, Err(Error::NotAuthorized { path }) if path == "/q/queue-1"));
    }

    /// Hands `item` over from another thread, as the dispatcher does, and
    /// returns it with what a take says afterwards.
    fn deliver(consumer: PullConsumer<String>, receiver: &ItemReceiver<String>, item: &str) -> (String, Result<()>) {
        let item = item.to_string();
        let thread = std::thread::spawn(move || {
            let sent = consumer
                .deliveries()
                .send(consumer.delivery(7, item, ItemMeta::new("queue-0000000007", 0, 0)));
            (sent.is_ok(), consumer)
        });
        let delivery = receiver.deliveries.recv_timeout(Duration::from_secs(5)).unwrap();
        let got = delivery.ack();
        let (sent, consumer) = thread.join().unwrap();
        assert!(sent);
        let answer = consumer.answers().try_recv();
        assert!(
            matches!(answer, Ok((7, Ok(())))),
            "the taker's answer reached the queue"
        );
        (got, receiver.try_take().map(|none| assert!(none.is_none())))
    }

    #[test]
    fn a_delivered_item_clears_a_claim_denial_but_not_a_denied_acknowledge() {
        let (consumer, receiver) = channel::<String>(WeakClient::detached());
        consumer.error(&Error::NotAuthorized { path: "/q".into() });
        let (item, then) = deliver(consumer, &receiver, "a");
        assert_eq!(item, "a");
        assert!(then.is_ok(), "access came back: {then:?}");

        let (consumer, receiver) = channel::<String>(WeakClient::detached());
        let denied_ack = Error::MultiFailed {
            index: 0,
            source: Box::new(Error::NotAuthorized {
                path: "/q/queue-1".into(),
            }),
        };
        consumer.error(&denied_ack);
        let (item, then) = deliver(consumer, &receiver, "b");
        assert_eq!(item, "b");
        assert!(
            matches!(then, Err(Error::NotAuthorized { ref path }) if path == "/q/queue-1"),
            "the denied acknowledge is still told: {then:?}"
        );
    }
}
