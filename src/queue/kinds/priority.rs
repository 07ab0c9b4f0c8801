//! The put family of Curator's `DistributedPriorityQueue` (the kind [`Priority`]; its marker is in `markers`).

use std::time::Duration;

use crate::error::{Error, PutError, Result};
use crate::naming::priority_prefix;
use crate::queue::handle::{deadline_in, Queue};
use crate::queue::markers::Priority;

impl<T: Send + 'static> Queue<T, Priority> {
    /// Puts one item with its priority; otherwise as
    /// [`DistributedQueue::put`](crate::DistributedQueue::put).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = QueueBuilder::new(&client, "/tasks", StringSerializer).build_priority_queue(10)?;
    /// queue.put("job".to_string(), 5)?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn put(&self, item: T, priority: i32) -> Result<()> {
        self.put_one(&priority_prefix(priority), item, None)
            .map_err(Error::from)
    }

    /// Puts one item with its priority unless a bounded queue is full now; as
    /// [`DistributedQueue::try_put`](crate::DistributedQueue::try_put).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = QueueBuilder::new(&client, "/tasks", StringSerializer).build_priority_queue(10)?;
    /// if let Err(zk_queue::PutError::Full(job)) = queue.try_put("job".to_string(), 5) {
    ///     println!("full, {job} waits");
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn try_put(&self, item: T, priority: i32) -> std::result::Result<(), PutError<T>> {
        self.put_one(&priority_prefix(priority), item, Some(std::time::Instant::now()))
    }

    /// Puts one item with its priority, waiting at most `timeout`; as
    /// [`DistributedQueue::put_timeout`](crate::DistributedQueue::put_timeout).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = QueueBuilder::new(&client, "/tasks", StringSerializer).build_priority_queue(10)?;
    /// use std::time::Duration;
    /// queue.put_timeout("job".to_string(), 5, Duration::from_secs(5))?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn put_timeout(&self, item: T, priority: i32, timeout: Duration) -> std::result::Result<(), PutError<T>> {
        self.put_one(&priority_prefix(priority), item, deadline_in(timeout))
    }

    /// Puts several items in one node, with one priority; as
    /// [`DistributedQueue::put_multi`](crate::DistributedQueue::put_multi).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = QueueBuilder::new(&client, "/tasks", StringSerializer).build_priority_queue(10)?;
    /// queue.put_multi(vec!["a".to_string(), "b".to_string()], 5)?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn put_multi(&self, items: Vec<T>, priority: i32) -> Result<()> {
        self.put_many(&priority_prefix(priority), items, None)
            .map_err(Error::from)
    }

    /// [`put_multi`](Self::put_multi) with a deadline; as
    /// [`DistributedQueue::put_multi_timeout`](crate::DistributedQueue::put_multi_timeout).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use zk_queue::{QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = QueueBuilder::new(&client, "/tasks", StringSerializer).build_priority_queue(10)?;
    /// use std::time::Duration;
    /// let jobs = vec!["a".to_string(), "b".to_string()];
    /// queue.put_multi_timeout(jobs, 5, Duration::from_secs(5))?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn put_multi_timeout(
        &self,
        items: Vec<T>,
        priority: i32,
        timeout: Duration,
    ) -> std::result::Result<(), PutError<Vec<T>>> {
        self.put_many(&priority_prefix(priority), items, deadline_in(timeout))
    }
}
