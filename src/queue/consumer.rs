//! What a queue calls: the consumer of items and the listener of puts.

use crate::client::ConnectionState;
use crate::error::Error;
use crate::queue::ItemMeta;

/// The error a consumer returns for an item it could not process.
///
/// ```
/// use zk_queue::ConsumeError;
/// fn handle(job: String) -> Result<(), ConsumeError> {
///     let n: u32 = job.parse()?; // any error type converts
///     if n == 0 {
///         return Err("zero is not a job".into());
///     }
///     Ok(())
/// }
/// assert!(handle("7".into()).is_ok());
/// assert!(handle("x".into()).is_err() && handle("0".into()).is_err());
/// ```
pub type ConsumeError = Box<dyn std::error::Error + Send + Sync>;

/// Processes the items of a queue; given to [`QueueBuilder::consumer`](crate::QueueBuilder::consumer).
///
/// `consume` runs on one of the queue's consumer threads, never on a
/// ZooKeeper thread. What an `Err` means depends on the queue's mode: with a
/// lock path the item is requeued or deleted (see [`ErrorMode`]); without
/// one the item was already deleted, and the error is logged.
///
/// A closure `Fn(T) -> Result<(), ConsumeError>` is a consumer; a closure
/// that also wants the item's [`ItemMeta`] goes to
/// [`QueueBuilder::consumer_with_meta`](crate::QueueBuilder::consumer_with_meta).
///
/// ```
/// use zk_queue::{ConnectionState, ConsumeError, QueueConsumer};
///
/// struct Printer;
/// impl QueueConsumer<String> for Printer {
///     fn consume(&self, item: String) -> Result<(), ConsumeError> {
///         println!("{item}");
///         Ok(())
///     }
///     fn state_changed(&self, state: ConnectionState) {
///         println!("connection: {state:?}");
///     }
/// }
///
/// // Or simply a closure:
/// let consumer = |item: String| -> Result<(), ConsumeError> { println!("{item}"); Ok(()) };
/// # fn takes<C: QueueConsumer<String>>(_: C) {}
/// # takes(Printer);
/// # takes(consumer);
/// ```
pub trait QueueConsumer<T>: Send + Sync + 'static {
    /// Processes one item.
    fn consume(&self, item: T) -> Result<(), ConsumeError>;

    /// Processes one item knowing its metadata (attempt, node name,
    /// priority, due time, id, put time): what the queue calls. Defaults to
    /// [`consume`](Self::consume); override it to read the metadata.
    ///
    /// ```
    /// use zk_queue::{ConsumeError, ItemMeta, QueueConsumer};
    ///
    /// struct Patient;
    /// impl QueueConsumer<String> for Patient {
    ///     fn consume(&self, item: String) -> Result<(), ConsumeError> {
    ///         println!("{item}");
    ///         Ok(())
    ///     }
    ///     fn consume_with_meta(&self, item: String, meta: &ItemMeta) -> Result<(), ConsumeError> {
    ///         if meta.attempt() > 1 {
    ///             println!("trying {} again ({})", meta.name(), meta.attempt());
    ///         }
    ///         self.consume(item)
    ///     }
    /// }
    /// # fn takes<C: QueueConsumer<String>>(_: C) {}
    /// # takes(Patient);
    /// ```
    fn consume_with_meta(&self, item: T, _meta: &ItemMeta) -> Result<(), ConsumeError> {
        self.consume(item)
    }

    /// Told of every connection-state change while the queue runs (really
    /// called, unlike Curator's). Defaults to doing nothing.
    fn state_changed(&self, _state: ConnectionState) {}

    /// Told of errors the queue met outside `consume`: a lost lease, an item
    /// moved to the dead-letter path, a ZooKeeper failure it will retry.
    /// Defaults to doing nothing (the queue also logs them).
    fn error(&self, _error: &Error) {}

    /// Told that the queue is closing, before it waits for items being
    /// consumed; a consumer blocked on something of its own may give up.
    /// Defaults to doing nothing.
    fn closing(&self) {}
}

impl<T, F> QueueConsumer<T> for F
where
    F: Fn(T) -> Result<(), ConsumeError> + Send + Sync + 'static,
{
    fn consume(&self, item: T) -> Result<(), ConsumeError> {
        self(item)
    }
}

/// A closure that reads each item's metadata, as a consumer (see
/// [`QueueBuilder::consumer_with_meta`](crate::QueueBuilder::consumer_with_meta)).
pub(crate) struct WithMeta<F>(pub(crate) F);

impl<T, F> QueueConsumer<T> for WithMeta<F>
where
    F: Fn(T, &ItemMeta) -> Result<(), ConsumeError> + Send + Sync + 'static,
{
    fn consume(&self, _item: T) -> Result<(), ConsumeError> {
        // The queue always calls `consume_with_meta`; nothing else can reach
        // this private type.
        Err("this consumer needs the item's metadata".into())
    }

    fn consume_with_meta(&self, item: T, meta: &ItemMeta) -> Result<(), ConsumeError> {
        (self.0)(item, meta)
    }
}

/// Told of the outcome of puts; added with
/// [`DistributedQueue::add_put_listener`](crate::DistributedQueue::add_put_listener).
///
/// Called on the thread that made the put (foreground) or on the queue's put
/// thread (background), never on a ZooKeeper thread. Every method defaults to
/// doing nothing.
///
/// ```
/// use zk_queue::{Error, PutListener};
/// struct Log;
/// impl PutListener<String> for Log {
///     fn put_completed(&self, items: &[String]) {
///         println!("stored {} item(s)", items.len());
///     }
///     fn put_failed(&self, items: &[String], error: &Error) {
///         eprintln!("could not store {items:?}: {error}");
///     }
/// }
/// ```
pub trait PutListener<T>: Send + Sync + 'static {
    /// The items (one, or all of a `put_multi`) are stored in one node.
    fn put_completed(&self, _items: &[T]) {}
    /// The items could not be stored.
    fn put_failed(&self, _items: &[T], _error: &Error) {}
}

/// What a lock-safe queue does with an item whose consumer returned an error.
///
/// ```
/// assert_eq!(zk_queue::ErrorMode::default(), zk_queue::ErrorMode::Requeue);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorMode {
    /// Put the item back atomically (one multi), keeping its priority, delay
    /// or id; records already consumed are not delivered again. After
    /// `max_attempts` it moves to the dead-letter path.
    #[default]
    Requeue,
    /// Log the error, deliver the item's remaining records, and delete it.
    Delete,
}
