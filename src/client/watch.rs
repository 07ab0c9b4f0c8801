//! [`ChildWatch`]: a one-shot watch on a node's children that a thread can
//! wait on.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::batch::{node_reads, BatchResults};
use super::ops::{stat_of, unexpected};
use super::request::Opts;
use super::session::{Failure, Registration, WatchKind, WatchReg, Watches};
use super::wire::{Reply, Request};
use super::{Stat, ZkClient};
use crate::error::Result;
use crate::path;
use crate::sync::Latch;

/// A one-shot watch left by [`ZkClient::get_children_watch`](crate::ZkClient::get_children_watch).
///
/// It fires once, on the next change of the node's children or the node's
/// deletion, or when the session ends (it expired, or the client closed),
/// after which the children may have changed unseen. A disconnection does
/// not fire it: when the client reattaches the session it sets the watch on
/// the server again, and the server fires it for a change made while the
/// client was away. The reader thread only opens a latch; waiting happens on
/// the caller's thread. Dropping the watch removes the watcher; once no other
/// watch of the client is left on the node, the client also asks the server
/// to remove its watch there, without waiting for the answer.
///
/// ```no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// use std::time::Duration;
/// let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
/// client.ensure_path("/jobs")?;
/// let (children, _stat, watch) = client.get_children_watch("/jobs")?;
/// if children.is_empty() && watch.wait_timeout(Duration::from_secs(10)) {
///     println!("the children of /jobs changed");
/// }
/// # Ok(())
/// # }
/// ```
#[must_use = "a watch does nothing unless waited on"]
pub struct ChildWatch {
    latch: Latch,
    /// Removes the watch when dropped.
    _registration: Registration,
}

impl ChildWatch {
    /// Whether the watch has fired.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let (_, _, watch) = client.get_children_watch("/")?;
    /// println!("fired already: {}", watch.is_fired());
    /// # Ok(())
    /// # }
    /// ```
    pub fn is_fired(&self) -> bool {
        self.latch.wait_until(Some(Instant::now()))
    }

    /// Waits until the watch fires.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let (_, _, watch) = client.get_children_watch("/")?;
    /// watch.wait();
    /// # Ok(())
    /// # }
    /// ```
    pub fn wait(&self) {
        self.latch.wait_until(None);
    }

    /// Waits until the watch fires or `timeout` passes; returns whether it fired.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// use std::time::Duration;
    /// let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let (_, _, watch) = client.get_children_watch("/")?;
    /// let fired = watch.wait_timeout(Duration::from_millis(100));
    /// # Ok(())
    /// # }
    /// ```
    pub fn wait_timeout(&self, timeout: Duration) -> bool {
        self.latch.wait_until(Instant::now().checked_add(timeout))
    }

    /// The latch the watch opens, for waiting on it together with other wake-ups.
    pub(crate) fn latch(&self) -> &Latch {
        &self.latch
    }
}

impl std::fmt::Debug for ChildWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChildWatch").field("fired", &self.is_fired()).finish()
    }
}

/// A listing with its watch, and the nodes read with it (see
/// [`ZkClient::watch_children_reading`]).
pub(crate) struct Listing {
    pub(crate) children: Vec<String>,
    pub(crate) stat: Stat,
    pub(crate) watch: ChildWatch,
    /// The reads of the nodes asked for, in order; empty if none were read.
    pub(crate) read: BatchResults<(Vec<u8>, Stat)>,
}

impl ZkClient {
    /// The names of the node's children and its stat, plus a one-shot
    /// [`ChildWatch`] that fires on the next change of the children, the
    /// node's deletion, or a connection change.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let (names, _stat, watch) = client.get_children_watch("/jobs")?;
    /// if names.is_empty() {
    ///     watch.wait(); // until a child is added (or the connection changes)
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn get_children_watch(&self, path: &str) -> Result<(Vec<String>, Stat, ChildWatch)> {
        self.watch_children(path, &Latch::new(), Opts::new())
    }

    /// Like [`get_children_watch`](ZkClient::get_children_watch) as `opts`
    /// say, with a watch that opens `latch`, so one thread can wait on several
    /// watches at once.
    pub(crate) fn watch_children(
        &self,
        path: &str,
        latch: &Latch,
        opts: Opts<'_>,
    ) -> Result<(Vec<String>, Stat, ChildWatch)> {
        let listing = self.watch_children_reading(path, latch, opts, &[])?;
        Ok((listing.children, listing.stat, listing.watch))
    }

    /// Like [`watch_children`](ZkClient::watch_children), and reads the
    /// nodes `ahead` (those a caller expects to find listed) in one
    /// multi-read sent together with the listing, so their data comes in
    /// the listing's round trip. A node not read (missing, or created after
    /// its read) fails its own entry; a server without multi-reads, or paths
    /// that are not valid, read nothing.
    pub(crate) fn watch_children_reading(
        &self,
        path: &str,
        latch: &Latch,
        opts: Opts<'_>,
        ahead: &[String],
    ) -> Result<Listing> {
        path::validate(path)?;
        let may_read_ahead = !ahead.is_empty()
            && ahead.len() <= super::batch::MULTI_READ
            && ahead.iter().all(|p| path::validate(p).is_ok());
        let counters = &self.shared.counters;
        let watches: &Arc<Watches> = self.shared.link().watches();
        let (children, stat, id, answer) = self.run("get_children", opts, |deadline, fence| {
            let started = Instant::now();
            // Asked again each attempt: a server that refused a multi-read
            // (older than 3.6, which then drops the connection) is not sent
            // another.
            let read_ahead = may_read_ahead && !self.shared.no_multi_read.load(Ordering::Relaxed);
            let id = watches.next_id();
            let watch = WatchReg::OneShot {
                path: path.to_owned(),
                kind: WatchKind::Child,
                id,
                latch: latch.clone(),
            };
            let mut requests = Vec::with_capacity(2);
            if read_ahead {
                counters.count("get_data");
                requests.push((Request::MultiRead { paths: ahead }, None));
            }
            requests.push((Request::GetChildren { path, watch: true }, Some(watch)));
            // Both requests are written before either answer is awaited.
            let mut pending = self.shared.link().send(requests, fence, deadline).into_iter();
            let read = read_ahead.then(|| pending.next()).flatten();
            let listing = pending.next().ok_or(crate::error::Error::Closed)?;
            // The read's answer comes first: a refusal is noted before the
            // listing's fate is known.
            let answer = read.map(|read| self.reply("get_data", path, &read, deadline, started));
            if matches!(&answer, Some(Err(e)) if e.is_unimplemented()) {
                log::info!("the server does not support multi-reads; reading nodes one request each");
                self.shared.no_multi_read.store(true, Ordering::Relaxed);
            }
            let (children, stat) = match self.reply("get_children", path, &listing, deadline, started)? {
                Reply::Children { names, stat } => (names, stat),
                other => return Err(unexpected(other, path)),
            };
            Ok((children, stat, id, answer))
        })?;
        let mut read = Vec::new();
        if let Some(answer) = answer {
            node_reads(ahead, answer, &mut read);
        }
        Ok(Listing {
            children,
            stat,
            watch: ChildWatch {
                latch: latch.clone(),
                _registration: Registration::new(self.shared.link_weak(), path, id, false),
            },
            read,
        })
    }
}

/// A one-shot watch on a node's data left by [`ZkClient::watch_data`]: it
/// opens the caller's latch on the node's next change or deletion, or when
/// the session ends. Dropping it removes the watch, as [`ChildWatch`] does.
#[must_use = "a watch is removed when dropped"]
pub(crate) struct DataWatch {
    /// Removes the watch when dropped.
    _registration: Registration,
}

impl ZkClient {
    /// The node's data and stat (ZooKeeper's `getData` with a watch, as
    /// Curator's locks watch the node before theirs), and a watch that opens
    /// `latch` on the node's next change or deletion. A missing node is
    /// [`Error::NoNode`](crate::Error::NoNode) and leaves no watch.
    pub(crate) fn watch_data(&self, path: &str, latch: &Latch, opts: Opts<'_>) -> Result<(Vec<u8>, Stat, DataWatch)> {
        path::validate(path)?;
        let id = self.shared.link().watches().next_id();
        let request = || {
            let watch = WatchReg::OneShot {
                path: path.to_owned(),
                kind: WatchKind::Data,
                id,
                latch: latch.clone(),
            };
            (Request::GetData { path, watch: true }, Some(watch))
        };
        let (data, stat) = self.call("get_data", path, opts, request, |reply| match reply {
            Reply::Data { data, stat } => Ok((data, stat)),
            other => Err(unexpected(other, path)),
        })?;
        let watch = DataWatch {
            _registration: Registration::data(self.shared.link_weak(), path, id),
        };
        Ok((data, stat, watch))
    }

    /// Sets a one-shot watch on the data of `path`, a node that must exist,
    /// without waiting for the answer (ZooKeeper's `getData` with a watch,
    /// written and left): the watch opens `latch` on the node's next change
    /// or deletion, and so does an answer that does not set it (the node is
    /// gone, the request failed or could not be sent). Sent once, as `opts`
    /// fence it, waiting for a connection until their deadline at most.
    pub(crate) fn watch_data_unawaited(&self, path: &str, latch: &Latch, opts: Opts<'_>) -> DataWatch {
        self.watch_unawaited(path, latch, None, opts)
    }

    /// Sets a one-shot watch on the data of `path` without waiting for the
    /// answer, as [`watch_data_unawaited`](Self::watch_data_unawaited)
    /// does, that also sets `deleted` (before it opens `latch`) when the
    /// node's deletion fires it or the answer finds no node: so the waiter
    /// can tell a deletion from a change of the node's data, a request that
    /// failed, or the session's end.
    pub(crate) fn watch_deletion_unawaited(
        &self,
        path: &str,
        latch: &Latch,
        deleted: &Arc<AtomicBool>,
        opts: Opts<'_>,
    ) -> DataWatch {
        self.watch_unawaited(path, latch, Some(deleted), opts)
    }

    fn watch_unawaited(
        &self,
        path: &str,
        latch: &Latch,
        deleted: Option<&Arc<AtomicBool>>,
        opts: Opts<'_>,
    ) -> DataWatch {
        let id = self.shared.link().watches().next_id();
        let watch = DataWatch {
            _registration: Registration::data(self.shared.link_weak(), path, id),
        };
        if path::validate(path).is_err() {
            latch.open();
            return watch;
        }
        let started = Instant::now();
        let request_timeout = self.shared.config.request_timeout;
        let deadline = opts.deadline(started, request_timeout, self.shared.link().is_connected());
        self.shared.counters.count("get_data");
        let reg = match deleted {
            None => WatchReg::MustExist {
                path: path.to_owned(),
                id,
                latch: latch.clone(),
            },
            Some(deleted) => WatchReg::Deletion {
                path: path.to_owned(),
                id,
                latch: latch.clone(),
                deleted: Arc::clone(deleted),
            },
        };
        let request = Request::GetData { path, watch: true };
        let pending = self.send_one(request, Some(reg), opts.fence().map(|s| s.0), deadline);
        // A request that could not be sent failed at once, and set nothing;
        // one that could not be written by the deadline is as good as lost.
        match pending.wait(started) {
            Err(Failure::Timeout) if Instant::now() < deadline => {}
            Err(_) => latch.open(),
            Ok(_) => {}
        }
        watch
    }

    /// The node's stat, or `None` if it does not exist (ZooKeeper's `exists`
    /// with a watch, as Curator's barriers watch their nodes), and a watch
    /// that opens `latch` on the node's creation, next change or deletion.
    pub(crate) fn watch_exists(&self, path: &str, latch: &Latch, opts: Opts<'_>) -> Result<(Option<Stat>, DataWatch)> {
        path::validate(path)?;
        let id = self.shared.link().watches().next_id();
        let request = || {
            let watch = WatchReg::OneShot {
                path: path.to_owned(),
                kind: WatchKind::Exist,
                id,
                latch: latch.clone(),
            };
            (Request::Exists { path, watch: true }, Some(watch))
        };
        let stat = match self.call("exists", path, opts, request, stat_of) {
            Ok(stat) => Some(stat),
            Err(crate::Error::NoNode { .. }) => None,
            Err(e) => return Err(e),
        };
        // Removed from the registry as whichever kind the answer made it.
        let watch = DataWatch {
            _registration: Registration::data(self.shared.link_weak(), path, id),
        };
        Ok((stat, watch))
    }
}
