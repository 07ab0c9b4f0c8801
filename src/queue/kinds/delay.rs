//! The put family of Curator's `DistributedDelayQueue` (the kind [`Delay`]; its marker is in `markers`).

use std::time::Duration;

use crate::error::{Error, PutError, Result};
use crate::naming::delay_prefix;
use crate::queue::handle::{deadline_in, Queue};
use crate::queue::markers::Delay;
use crate::queue::DeliverAt;

impl<T: Send + 'static> Queue<T, Delay> {
    /// Puts one item with its deliver at; otherwise as
    /// [`DistributedQueue::put`](crate::DistributedQueue::put).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use std::time::{Duration, SystemTime};
    /// # use zk_queue::{DeliverAt, QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = QueueBuilder::new(&client, "/reminders", StringSerializer).build_delay_queue()?;
    /// let soon = DeliverAt::from(SystemTime::now() + Duration::from_secs(60));
    /// queue.put("job".to_string(), soon)?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn put(&self, item: T, deliver_at: DeliverAt) -> Result<()> {
        self.put_one(&delay_prefix(deliver_at.epoch_millis()), item, None)
            .map_err(Error::from)
    }

    /// Puts one item with its deliver at unless a bounded queue is full now; as
    /// [`DistributedQueue::try_put`](crate::DistributedQueue::try_put).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use std::time::{Duration, SystemTime};
    /// # use zk_queue::{DeliverAt, QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = QueueBuilder::new(&client, "/reminders", StringSerializer).build_delay_queue()?;
    /// let soon = DeliverAt::from(SystemTime::now() + Duration::from_secs(60));
    /// if let Err(zk_queue::PutError::Full(job)) = queue.try_put("job".to_string(), soon) {
    ///     println!("full, {job} waits");
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn try_put(&self, item: T, deliver_at: DeliverAt) -> std::result::Result<(), PutError<T>> {
        self.put_one(
            &delay_prefix(deliver_at.epoch_millis()),
            item,
            Some(std::time::Instant::now()),
        )
    }

    /// Puts one item with its deliver at, waiting at most `timeout`; as
    /// [`DistributedQueue::put_timeout`](crate::DistributedQueue::put_timeout).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use std::time::{Duration, SystemTime};
    /// # use zk_queue::{DeliverAt, QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = QueueBuilder::new(&client, "/reminders", StringSerializer).build_delay_queue()?;
    /// let soon = DeliverAt::from(SystemTime::now() + Duration::from_secs(60));
    /// queue.put_timeout("job".to_string(), soon, Duration::from_secs(5))?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn put_timeout(
        &self,
        item: T,
        deliver_at: DeliverAt,
        timeout: Duration,
    ) -> std::result::Result<(), PutError<T>> {
        self.put_one(&delay_prefix(deliver_at.epoch_millis()), item, deadline_in(timeout))
    }

    /// Puts several items in one node, with one deliver at; as
    /// [`DistributedQueue::put_multi`](crate::DistributedQueue::put_multi).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use std::time::{Duration, SystemTime};
    /// # use zk_queue::{DeliverAt, QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = QueueBuilder::new(&client, "/reminders", StringSerializer).build_delay_queue()?;
    /// let soon = DeliverAt::from(SystemTime::now() + Duration::from_secs(60));
    /// queue.put_multi(vec!["a".to_string(), "b".to_string()], soon)?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn put_multi(&self, items: Vec<T>, deliver_at: DeliverAt) -> Result<()> {
        self.put_many(&delay_prefix(deliver_at.epoch_millis()), items, None)
            .map_err(Error::from)
    }

    /// [`put_multi`](Self::put_multi) with a deadline; as
    /// [`DistributedQueue::put_multi_timeout`](crate::DistributedQueue::put_multi_timeout).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # use std::time::{Duration, SystemTime};
    /// # use zk_queue::{DeliverAt, QueueBuilder, StringSerializer, ZkClient};
    /// # let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = QueueBuilder::new(&client, "/reminders", StringSerializer).build_delay_queue()?;
    /// let soon = DeliverAt::from(SystemTime::now() + Duration::from_secs(60));
    /// let jobs = vec!["a".to_string(), "b".to_string()];
    /// queue.put_multi_timeout(jobs, soon, Duration::from_secs(5))?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn put_multi_timeout(
        &self,
        items: Vec<T>,
        deliver_at: DeliverAt,
        timeout: Duration,
    ) -> std::result::Result<(), PutError<Vec<T>>> {
        self.put_many(&delay_prefix(deliver_at.epoch_millis()), items, deadline_in(timeout))
    }
}
