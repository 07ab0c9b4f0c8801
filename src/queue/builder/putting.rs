//! How a queue puts: its bound, background and coalesced puts, and the final flush.

use std::time::Duration;

use super::QueueBuilder;

impl<T: Send + 'static> QueueBuilder<T> {
    /// Bounds the queue: a put waits while it holds `max_items` items or more
    /// (counted afresh; several producers together may overshoot by up to one
    /// item each). Defaults to unbounded.
    ///
    /// ``` no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = QueueBuilder::new(&client, "/jobs", StringSerializer).max_items(100).build_queue()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn max_items(mut self, max_items: usize) -> Self {
        self.puts.max_items = Some(max_items);
        self
    }

    /// Whether `put` returns once the item is stored (`false`) or once it is
    /// accepted by the queue's put thread (`true`), which stores it by the
    /// client's request timeout after accepting it, or fails.
    ///
    /// In the background, `Ok` only means accepted, and:
    /// - a put is refused at once with [`Error::Unreachable`](crate::Error::Unreachable)
    ///   while the client has been unable to reach a server for longer than
    ///   its request timeout;
    /// - a put that cannot be stored by its deadline (accepted, plus the
    ///   request timeout) is reported to the put listeners
    ///   ([`put_failed`](crate::PutListener::put_failed)), and the next
    ///   put or [`flush_timeout`](crate::Queue::flush_timeout) reports it
    ///   too, once: that put returns the failure's error and puts nothing,
    ///   or that flush returns `false`;
    /// - puts still pending when the handle is closed or dropped are logged
    ///   at WARN with their count and returned in
    ///   [`CloseReport::puts_pending`](crate::CloseReport::puts_pending): a
    ///   process that exits then loses them.
    ///
    /// Defaults to `false`: `Ok` from every put means stored.
    ///
    /// ``` no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = QueueBuilder::new(&client, "/events", StringSerializer)
    ///     .put_in_background(true) // `Ok` from `put` means accepted, not stored
    ///     .build_queue()?;
    /// queue.put("clicked".to_string())?;
    /// if !queue.flush_timeout(std::time::Duration::from_secs(5)) {
    ///     eprintln!("some puts are pending, or failed");
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn put_in_background(mut self, background: bool) -> Self {
        self.puts.in_background = background;
        self
    }

    /// Whether single puts (`put`, `try_put`, `put_timeout`; the same
    /// priority or due time) made while the queue's put thread is writing
    /// are written together as one node, in Curator's multi-item frame (as
    /// [`put_multi`](crate::Queue::put_multi) writes, and Curator's consumers
    /// read). A queue that is not busy writes each put at once, as without
    /// coalescing. Each put still gets its own result (background puts in
    /// the put listeners, foreground ones from `put`, which waits for its
    /// node, by its deadline); one thread's items keep their order. Alone
    /// it keeps puts in the foreground; with
    /// [`put_in_background`](Self::put_in_background) the put thread
    /// coalesces background puts. Id queues are not
    /// coalesced: an id names one item. What it changes for consumers: a
    /// node holds several items, so a lock-safe consumer's lock, a requeue
    /// and a crash concern the node's remaining items together. A node holds
    /// at most 1,024 items and 256 KiB. Defaults to `false`.
    ///
    /// ``` no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = QueueBuilder::new(&client, "/events", StringSerializer).coalesce_puts(true).build_queue()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn coalesce_puts(mut self, coalesce: bool) -> Self {
        self.puts.coalesce = coalesce.then(|| self.puts.coalesce.unwrap_or_default());
        self
    }

    /// With [`coalesce_puts`](Self::coalesce_puts), how long the put thread
    /// waits after a put for others to join its node: more items per node,
    /// each put up to `linger` later. Defaults to zero: nothing waits, and
    /// items gather only while a write is in flight. Turns coalescing on.
    ///
    /// ``` no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// use std::time::Duration;
    /// let queue = QueueBuilder::new(&client, "/events", StringSerializer)
    ///     .coalesce_linger(Duration::from_millis(2))
    ///     .build_queue()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn coalesce_linger(mut self, linger: Duration) -> Self {
        self.puts.coalesce = Some(linger);
        self
    }

    /// How long `close` waits for background puts and in-flight items to
    /// finish; background puts still pending then are logged at WARN and
    /// counted in the close report. Defaults to 5 seconds; zero does not
    /// wait.
    ///
    /// ``` no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// use std::time::Duration;
    /// let queue = QueueBuilder::new(&client, "/jobs", StringSerializer).final_flush(Duration::from_secs(30)).build_queue()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn final_flush(mut self, time: Duration) -> Self {
        self.options.final_flush = time;
        self
    }
}
