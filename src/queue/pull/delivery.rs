//! One item taken from an [`ItemReceiver`](super::ItemReceiver), and the
//! answer its taker gives the queue.

use crossbeam_channel::Sender;

use crate::queue::{ConsumeError, ItemMeta};

/// One item taken from an [`ItemReceiver`](super::ItemReceiver). With a lock path, the item stays
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
    reply: Option<Reply>,
}

impl<T> Delivery<T> {
    /// A delivery of `item`, described by `meta`, whose answer goes to
    /// `answers` numbered `id`.
    pub(super) fn new(item: T, meta: ItemMeta, id: u64, answers: Sender<Answer>) -> Delivery<T> {
        Delivery {
            item: Some(item),
            meta,
            reply: Some(Reply { id, answers }),
        }
    }

    /// Withdraws a delivery no taker took: it answers nothing.
    pub(super) fn withdraw(mut self) {
        self.reply.take();
    }
}

/// Where a delivery's answer goes: the queue's dispatcher, with the number
/// it gave the delivery.
struct Reply {
    id: u64,
    answers: Sender<Answer>,
}

/// A taker's answer for the delivery numbered: acknowledged (`Ok`), or
/// failed, released or dropped.
pub(crate) type Answer = (u64, std::result::Result<(), ConsumeError>);

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
            // The dispatcher runs until every delivery it handed out is
            // answered, so this fails only if it panicked.
            let _ = reply.answers.send((reply.id, outcome));
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
