//! How a queue puts: its bound, background and coalesced puts, and the final flush.

use std::time::Duration;

use super::QueueBuilder;

impl<T: Send + 'static> QueueBuilder<T> {
    /// Bounds the queue: a put waits while it holds `max_items` items or more
    /// (counted afresh; several producers together may overshoot by up to one
    /// item each). Also makes puts foreground unless
    /// [`put_in_background`](Self::put_in_background) is set. Defaults to
    /// unbounded.
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

    /// Whether `put` returns once the item is handed to the queue's put
    /// thread (`true`) or once it is stored (`false`). Results of background
    /// puts, failures included, reach the put listeners;
    /// [`flush_timeout`](crate::Queue::flush_timeout) waits for them. Defaults to
    /// `true`, or `false` when [`max_items`](Self::max_items) is set.
    ///
    /// ``` no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = QueueBuilder::new(&client, "/jobs", StringSerializer)
    ///     .put_in_background(false) // `put` returns once the item is stored
    ///     .build_queue()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn put_in_background(mut self, background: bool) -> Self {
        self.puts.in_background = background;
        self.put_in_background_set = true;
        self
    }

    /// Whether single puts (`put`, `try_put`, `put_timeout`; the same
    /// priority or due time) made while the queue's put thread is writing
    /// are written together as one node, in Curator's multi-item frame (as
    /// [`put_multi`](crate::Queue::put_multi) writes, and Curator's consumers
    /// read). A queue that is not busy writes each put at once, as without
    /// coalescing. Each put still gets its own result (background puts in
    /// the put listeners, foreground ones from `put`, which waits for its
    /// node); one thread's items keep their order. Id queues are not
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
    /// finish. Defaults to 5 seconds; zero does not wait.
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
