//! [`KazooEntry`]: an entry of a [`KazooLockingQueue`](super::KazooLockingQueue)
//! held under its lock.

use crate::client::{Op, Opts, Session, ZkClient};
use crate::error::{Error, Result};

/// An entry of a [`KazooLockingQueue`](super::KazooLockingQueue), held under
/// its lock `<path>/taken/<entry name>` until it is
/// [consumed](Self::consume) or [released](Self::release). Dropping it
/// releases it (the lock's delete is sent in the background); the lock also
/// vanishes with the client's session.
///
/// ```no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// use zk_queue::recipes::KazooLockingQueue;
/// let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
/// let queue = KazooLockingQueue::new(&client, "/py/work")?;
/// let entry = queue.take()?;
/// println!("{} holds {:?}", entry.name(), entry.data());
/// entry.consume()?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct KazooEntry {
    client: ZkClient,
    entry: String,
    lock: String,
    token: String,
    session: Session,
    data: Vec<u8>,
    /// Whether it was consumed or released.
    settled: bool,
}

impl KazooEntry {
    pub(super) fn new(
        client: &ZkClient,
        entry: String,
        lock: String,
        token: String,
        session: Session,
        data: Vec<u8>,
    ) -> KazooEntry {
        KazooEntry {
            client: client.clone(),
            entry,
            lock,
            token,
            session,
            data,
            settled: false,
        }
    }

    /// The item's bytes.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let queue = zk_queue::recipes::KazooLockingQueue::new(&client, "/py/work")?;
    /// let entry = queue.take()?;
    /// let text = String::from_utf8_lossy(entry.data());
    /// # Ok(())
    /// # }
    /// ```
    pub fn data(&self) -> &[u8] {
        &self.data
    }

    /// The entry's node name, `entry-<ppp>-<seq>`.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let queue = zk_queue::recipes::KazooLockingQueue::new(&client, "/py/work")?;
    /// let entry = queue.take()?;
    /// assert!(entry.name().starts_with("entry-"));
    /// # Ok(())
    /// # }
    /// ```
    pub fn name(&self) -> &str {
        crate::path::name(&self.entry)
    }

    /// Whether the lock is still this entry's: the session that created it
    /// is live, the server cannot have expired it yet (as every recipe's
    /// `is_held`), and the lock holds this take's token (kazoo's
    /// `holds_lock`).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let queue = zk_queue::recipes::KazooLockingQueue::new(&client, "/py/work")?;
    /// let entry = queue.take()?;
    /// assert!(entry.is_held()?);
    /// # Ok(())
    /// # }
    /// ```
    pub fn is_held(&self) -> Result<bool> {
        if !self.client.holds_session(self.session) {
            return Ok(false);
        }
        match self.client.get_data(&self.lock) {
            Ok((data, _)) => Ok(data == self.token.as_bytes() && self.client.holds_session(self.session)),
            Err(Error::NoNode { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Deletes the entry and its lock in one multi (kazoo's `consume()`),
    /// only in the session that holds the lock, once the lock was read back
    /// holding this take's token.
    ///
    /// # Errors
    /// [`Error::LeaseLost`] if the lock or the entry was gone (the session
    /// ended, say): nothing was deleted, and another consumer may take the
    /// entry. ZooKeeper errors once the retry policy gives up.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let queue = zk_queue::recipes::KazooLockingQueue::new(&client, "/py/work")?;
    /// let entry = queue.take()?;
    /// entry.consume()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn consume(mut self) -> Result<()> {
        // As kazoo's `consume`: first make sure the lock is still this take's
        // (a lock deleted by hand and taken by another holder is not).
        if !self.owns_lock()? {
            self.settled = true;
            return Err(self.lost());
        }
        self.settled = true;
        let ops = [Op::delete(&*self.entry, None), Op::delete(&*self.lock, None)];
        match self.client.multi_with(&ops, Opts::new().fenced(self.session)) {
            Ok(_) => Ok(()),
            Err(Error::MultiFailed { source, .. }) if source.is_no_node() => {
                // A retried multi whose first attempt was applied finds both gone.
                if self.is_gone(&self.entry)? && self.is_gone(&self.lock)? {
                    Ok(())
                } else {
                    Err(self.lost())
                }
            }
            Err(Error::SessionExpired) => Err(self.lost()),
            Err(e) => {
                self.settled = false;
                Err(e)
            }
        }
    }

    /// Deletes the lock, so the entry is taken again (kazoo's `release()`);
    /// a lock already gone (its session ended) is released too, and a lock
    /// that no longer holds this take's token is left alone.
    ///
    /// # Errors
    /// ZooKeeper errors once the retry policy gives up.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// # let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// # let queue = zk_queue::recipes::KazooLockingQueue::new(&client, "/py/work")?;
    /// let entry = queue.take()?;
    /// entry.release()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn release(mut self) -> Result<()> {
        if !self.owns_lock()? {
            // Gone with its session, or someone else's by now.
            self.settled = true;
            return Ok(());
        }
        match self
            .client
            .delete_with(&self.lock, None, Opts::new().fenced(self.session))
        {
            Ok(_) | Err(Error::NoNode { .. }) | Err(Error::SessionExpired) => {
                self.settled = true;
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// Whether the lock, read in the session that created it, holds this
    /// take's token.
    fn owns_lock(&self) -> Result<bool> {
        match self.client.get_data_with(&self.lock, Opts::new().fenced(self.session)) {
            Ok((data, _)) => Ok(data == self.token.as_bytes()),
            Err(Error::NoNode { .. }) | Err(Error::SessionExpired) => Ok(false),
            Err(e) => Err(e),
        }
    }

    fn is_gone(&self, path: &str) -> Result<bool> {
        Ok(self.client.exists(path)?.is_none())
    }

    fn lost(&self) -> Error {
        Error::LeaseLost {
            path: self.entry.clone(),
        }
    }
}

impl Drop for KazooEntry {
    fn drop(&mut self) {
        if !self.settled {
            self.client.delete_ephemeral_in_background(&self.lock, self.session);
        }
    }
}
