//! [`SimpleQueue::put_all`]: a batch of items sent at once.

use super::{SimpleQueue, ITEM_PREFIX, MAX_RECREATES};
use crate::client::{BatchResults, CreateMode, Opts};
use crate::error::{Error, Result};
use crate::path;

impl SimpleQueue {
    /// Appends several items, one node each, with multis of creates (up to
    /// 64 items a transaction, the multis pipelined, so a batch takes a few
    /// round trips and server commits instead of one per item) and
    /// returns each item's result, in order: the path of its node, or why it
    /// was not stored. ZooKeeper applies one session's requests in order, so
    /// the items get increasing sequence numbers in the slice's order.
    /// Creates the queue node if missing, as [`put`](Self::put) does, and
    /// then sends the items that found it missing again.
    ///
    /// Unlike `put`, an item is sent once: one that failed with a connection
    /// error ([`Error::is_retryable`]) has an unknown outcome and may have
    /// been stored (with every item of its multi, or none of them). Sending it again (with `put`) may store it twice, as
    /// `put`'s own retries may.
    ///
    /// # Errors
    /// The outer `Err` only when nothing could be sent ([`Error::Closed`]);
    /// [`Error::ItemTooLarge`] fails its own entry before sending.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let queue = zk_queue::SimpleQueue::new(&client, "/jobs")?;
    /// let results = queue.put_all(&[b"a".as_slice(), b"b".as_slice()])?;
    /// for result in &results {
    ///     if let Err(e) = result {
    ///         eprintln!("not stored: {e}");
    ///     }
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn put_all<I: AsRef<[u8]>>(&self, items: &[I]) -> Result<BatchResults<String>> {
        let prefix = path::join(&self.dir, ITEM_PREFIX);
        let mut results: BatchResults<String> = items
            .iter()
            .map(|_| Err(Error::NoNode { path: self.dir.clone() }))
            .collect();
        let mut pending: Vec<usize> = (0..items.len()).collect();
        for attempt in 0..MAX_RECREATES {
            if pending.is_empty() {
                break;
            }
            if attempt > 0 {
                self.ensure_dir(Opts::new())?;
            }
            let nodes: Vec<(String, Vec<u8>)> = pending
                .iter()
                .map(|&i| (prefix.clone(), items[i].as_ref().to_vec()))
                .collect();
            let opts = Opts::new().mode(CreateMode::PersistentSequential).acl(&self.acl);
            let created = self.client.create_in_multis_with(&nodes, opts)?;
            let mut missing = Vec::new();
            for (i, result) in pending.into_iter().zip(created.results) {
                match result {
                    Err(Error::NoNode { .. }) => missing.push(i),
                    other => results[i] = other,
                }
            }
            pending = missing;
        }
        Ok(results)
    }
}
