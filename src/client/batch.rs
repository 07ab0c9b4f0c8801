//! Pipelined batches: many requests in flight at once, one wait for all.
//!
//! ZooKeeper answers the requests of one session in order, and a server
//! commits many pipelined writes per disk sync, so a batch runs several times
//! faster than the same requests one after another. Each request of a batch
//! gets its own result; a batch is not a transaction (see
//! [`ZkClient::multi`] for that).

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::time::Instant;

use super::multi::{check_op, results};
use super::ops::{created, unexpected};
use super::session::Pending;
use super::wire::{Reply, Request};
use super::{CreateMode, Op, Opts, Stat, ZkClient};
use crate::error::{Error, Result};
use crate::path;

/// The per-request results of a pipelined batch, in request order.
///
/// ``` no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// use zk_queue::{ZkClient, client::{BatchResults, CreateMode}};
/// let client = ZkClient::connect("127.0.0.1:2181")?;
/// let nodes = vec![("/jobs/a".to_string(), b"1".to_vec()), ("/jobs/b".to_string(), b"2".to_vec())];
/// let results: BatchResults<String> = client.create_many(&nodes, CreateMode::Persistent)?;
/// for (node, result) in nodes.iter().zip(&results) {
///     if let Err(e) = result {
///         eprintln!("{}: {e}", node.0);
///     }
/// }
/// # Ok(())
/// # }
/// ```
pub type BatchResults<T> = Vec<Result<T>>;

/// Requests in flight at once within a batch, at most. A larger batch keeps
/// between three quarters of this and all of it in flight: it is sent in
/// [`SLICES`] slices per window, each with its own deadline, the next one as
/// soon as the oldest is answered, so the server never runs dry between
/// windows.
const WINDOW: usize = 1_000;

/// Slices a window is sent in.
const SLICES: usize = 4;

/// Nodes per multi-read request.
pub(crate) const MULTI_READ: usize = 64;

impl ZkClient {
    /// Creates many nodes with the default ACL, pipelined, and returns each
    /// create's result (the created path), in order.
    ///
    /// Results are per request; a request that failed is not retried (a
    /// connection loss leaves its outcome unknown). Invalid paths and
    /// oversized data fail their own entry without sending it.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// use zk_queue::{ZkClient, client::CreateMode};
    /// let client = ZkClient::connect("127.0.0.1:2181")?;
    /// client.ensure_path("/batch")?;
    /// let nodes: Vec<(String, Vec<u8>)> = (0..100).map(|i| ("/batch/n-".to_string(), vec![i])).collect();
    /// let created = client.create_many(&nodes, CreateMode::PersistentSequential)?;
    /// assert!(created.iter().all(|r| r.is_ok()));
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// The outer `Err` only when no request could be sent: [`Error::Closed`].
    pub fn create_many(&self, nodes: &[(String, Vec<u8>)], mode: CreateMode) -> Result<BatchResults<String>> {
        let created = self.create_many_with(nodes, Opts::new().mode(mode))?;
        Ok(created.into_iter().map(|r| r.map(|(path, _)| path)).collect())
    }

    /// [`create_many`](Self::create_many) with the mode and ACL of `opts`,
    /// returning each created node's path and stat.
    pub(crate) fn create_many_with(
        &self,
        nodes: &[(String, Vec<u8>)],
        opts: Opts<'_>,
    ) -> Result<BatchResults<(String, Stat)>> {
        let (mode, acl) = (opts.create_mode(), opts.acl_or(self.default_acl()));
        let check = |node: &(String, Vec<u8>)| {
            path::validate(&node.0)?;
            self.check_create_size(&node.0, node.1.len(), acl)
        };
        self.batch(
            "create",
            opts,
            nodes,
            check,
            |node| Request::Create {
                path: &node.0,
                data: &node.1,
                acl,
                mode,
            },
            |node, reply| created(reply, &node.0),
        )
    }

    /// Stats of many nodes (`None` where a node does not exist), pipelined;
    /// per-request results, in order.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let paths = vec!["/a".to_string(), "/b".to_string()];
    /// for (path, stat) in paths.iter().zip(client.exists_many(&paths)?) {
    ///     println!("{path}: {}", if matches!(stat, Ok(Some(_))) { "exists" } else { "missing or failed" });
    /// }
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// The outer `Err` only when no request could be sent: [`Error::Closed`].
    pub fn exists_many(&self, paths: &[String]) -> Result<BatchResults<Option<Stat>>> {
        self.exists_many_with(paths, Opts::new())
    }

    /// [`exists_many`](Self::exists_many) with options (a deadline, say).
    pub(crate) fn exists_many_with(&self, paths: &[String], opts: Opts<'_>) -> Result<BatchResults<Option<Stat>>> {
        self.batch(
            "exists",
            opts,
            paths,
            |p| path::validate(p),
            |p| Request::Exists { path: p, watch: false },
            |p, reply| match reply {
                Reply::Stat(stat) => Ok(Some(stat)),
                other => Err(unexpected(other, p)),
            },
        )
        .map(|results| {
            results
                .into_iter()
                .map(|r| match r {
                    Err(Error::NoNode { .. }) => Ok(None),
                    other => other,
                })
                .collect()
        })
    }

    /// Many [`multi`](Self::multi) transactions, pipelined: each is applied
    /// whole or not at all, and is not retried; per-transaction results, in
    /// order (a failed transaction's error names its first failing op, as
    /// `multi`'s does).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// use zk_queue::{ZkClient, client::Op};
    /// let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let multis = vec![
    ///     vec![Op::check("/jobs", 0), Op::delete("/jobs/a", None)],
    ///     vec![Op::check("/jobs", 0), Op::delete("/jobs/b", None)],
    /// ];
    /// for result in client.multi_many(&multis)? {
    ///     if let Err(e) = result {
    ///         eprintln!("not applied: {e}");
    ///     }
    /// }
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// The outer `Err` only when no request could be sent: [`Error::Closed`].
    pub fn multi_many(&self, multis: &[Vec<Op>]) -> Result<BatchResults<()>> {
        self.multi_many_with(multis, Opts::new())
    }

    /// Many multis, pipelined, each sent as `opts` say (fenced to a session,
    /// see [`Opts::fenced`]); per-multi results, in order.
    pub(crate) fn multi_many_with(&self, multis: &[Vec<Op>], opts: Opts<'_>) -> Result<BatchResults<()>> {
        let default_acl = self.default_acl();
        let check = |ops: &Vec<Op>| {
            ops.iter().try_for_each(check_op)?;
            self.check_multi_size(ops, default_acl)
        };
        self.batch(
            "multi",
            opts,
            multis,
            check,
            |ops| Request::Multi { ops, default_acl },
            |ops, reply| results(reply, ops).map(|_| ()),
        )
    }

    /// Deletes many nodes (each only at its version, if given), pipelined;
    /// per-request results, in order.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let (names, _) = client.get_children("/batch")?;
    /// let nodes: Vec<(String, Option<i32>)> = names.iter().map(|n| (format!("/batch/{n}"), None)).collect();
    /// let deleted = client.delete_many(&nodes)?;
    /// println!("{} deleted", deleted.iter().filter(|r| r.is_ok()).count());
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// The outer `Err` only when no request could be sent: [`Error::Closed`].
    pub fn delete_many(&self, nodes: &[(String, Option<i32>)]) -> Result<BatchResults<()>> {
        self.delete_many_with(nodes, Opts::new())
    }

    /// [`delete_many`](Self::delete_many) as `opts` say.
    pub(crate) fn delete_many_with(&self, nodes: &[(String, Option<i32>)], opts: Opts<'_>) -> Result<BatchResults<()>> {
        self.batch(
            "delete",
            opts,
            nodes,
            |node| path::validate(&node.0),
            |node| Request::Delete {
                path: &node.0,
                version: node.1.unwrap_or(-1),
            },
            |_, _| Ok(()),
        )
    }

    /// Reads many nodes' data and stats, pipelined; per-request results, in order.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let paths = vec!["/a".to_string(), "/b".to_string()];
    /// for (path, read) in paths.iter().zip(client.get_data_many(&paths)?) {
    ///     println!("{path}: {:?}", read.map(|(data, _)| data.len()));
    /// }
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// The outer `Err` only when no request could be sent: [`Error::Closed`].
    pub fn get_data_many(&self, paths: &[String]) -> Result<BatchResults<(Vec<u8>, Stat)>> {
        self.get_data_many_with(paths, Opts::new())
    }

    /// [`get_data_many`](Self::get_data_many) as `opts` say.
    pub(crate) fn get_data_many_with(&self, paths: &[String], opts: Opts<'_>) -> Result<BatchResults<(Vec<u8>, Stat)>> {
        self.batch(
            "get_data",
            opts,
            paths,
            |p| path::validate(p),
            |p| Request::GetData { path: p, watch: false },
            |p, reply| match reply {
                Reply::Data { data, stat } => Ok((data, stat)),
                other => Err(unexpected(other, p)),
            },
        )
    }

    /// Reads many nodes' data and stats, as `opts` say, with as few requests
    /// as the server allows: multi-reads, or on a server without them (it is
    /// asked once per client) and for a client built
    /// [without them](super::ZkClientBuilder::without_multi_read), pipelined
    /// reads. Per-node results, in order.
    pub(crate) fn read_many_with(&self, paths: &[String], opts: Opts<'_>) -> Result<BatchResults<(Vec<u8>, Stat)>> {
        self.read_many_sized_with(paths, MULTI_READ, opts)
    }

    /// Reads many nodes as [`read_many_with`](Self::read_many_with) does,
    /// with up to `per_request` nodes in a multi-read: more than
    /// [`MULTI_READ`] where some of the nodes are known to be tiny (a lock
    /// read beside each item), so a request still carries no more data.
    pub(crate) fn read_many_sized_with(
        &self,
        paths: &[String],
        per_request: usize,
        opts: Opts<'_>,
    ) -> Result<BatchResults<(Vec<u8>, Stat)>> {
        if !self.shared.no_multi_read.load(Ordering::Relaxed) {
            let results = self.get_data_multi_with(paths, per_request.max(1), opts)?;
            if !results.iter().any(|r| matches!(r, Err(e) if e.is_unimplemented())) {
                return Ok(results);
            }
            log::info!("the server does not support multi-reads; reading nodes one request each");
            self.shared.no_multi_read.store(true, Ordering::Relaxed);
        }
        self.get_data_many_with(paths, opts)
    }

    /// Stats of many nodes (`None` where a node does not exist), as
    /// [`exists_many`](Self::exists_many) gives them, read as
    /// [`read_many_with`](Self::read_many_with) reads nodes, so with
    /// multi-reads where the server has them; where this client may not
    /// read a node, with existence checks, which need no permission.
    pub(crate) fn stats_many(&self, paths: &[String]) -> Result<BatchResults<Option<Stat>>> {
        let reads = self.read_many_with(paths, Opts::new())?;
        if reads.iter().any(|r| matches!(r, Err(Error::NotAuthorized { .. }))) {
            return self.exists_many(paths);
        }
        Ok(reads
            .into_iter()
            .map(|r| match r {
                Ok((_, stat)) => Ok(Some(stat)),
                Err(Error::NoNode { .. }) => Ok(None),
                Err(e) => Err(e),
            })
            .collect())
    }

    /// Reads many nodes' data and stats with multi-read requests (ZooKeeper
    /// 3.6 and later), up to `per_request` nodes each, pipelined:
    /// per-node results, in order, as
    /// [`get_data_many`](Self::get_data_many) gives them for a fraction of
    /// the server's work per node. A request that fails fails each of its
    /// nodes with its error; a server without multi-reads fails them with
    /// [`Error::ZooKeeper`] (unimplemented).
    fn get_data_multi_with(
        &self,
        paths: &[String],
        per_request: usize,
        opts: Opts<'_>,
    ) -> Result<BatchResults<(Vec<u8>, Stat)>> {
        let chunks: Vec<&[String]> = paths.chunks(per_request).collect();
        let answers = self.batch(
            "get_data",
            opts,
            &chunks,
            |chunk| chunk.iter().try_for_each(|p| path::validate(p)),
            |chunk| Request::MultiRead { paths: chunk },
            |_, reply| Ok(reply),
        )?;
        let mut results = Vec::with_capacity(paths.len());
        for (chunk, answer) in chunks.into_iter().zip(answers) {
            node_reads(chunk, answer, &mut results);
        }
        Ok(results)
    }

    /// Runs one request per entry, at most a window in flight: a slice's
    /// requests are written together, and each slice's answers are awaited
    /// within one request timeout from its sending; the next slice goes out
    /// once the oldest in flight is answered. A batch is never retried; fenced by `opts` to a
    /// session, it is sent only in that session, and in any other every
    /// entry fails with [`Error::SessionExpired`].
    pub(super) fn batch<'a, I, T>(
        &self,
        operation: &'static str,
        opts: Opts<'_>,
        entries: &'a [I],
        check: impl Fn(&'a I) -> Result<()>,
        request: impl Fn(&'a I) -> Request<'a>,
        read: impl Fn(&'a I, Reply) -> Result<T>,
    ) -> Result<BatchResults<T>> {
        if self.is_closed() {
            return Err(Error::Closed);
        }
        let fence = opts.fence().map(|session| session.0);
        // Each slice is sent with its own deadline; the next one goes out as
        // soon as the oldest one in flight is answered.
        let send = |slice: &'a [I]| {
            let started = Instant::now();
            let deadline = self.sent_once_deadline(opts, started);
            let checked: Vec<Result<()>> = slice.iter().map(&check).collect();
            let requests = slice
                .iter()
                .zip(&checked)
                .filter(|(_, checked)| checked.is_ok())
                .map(|(entry, _)| {
                    self.shared.counters.count(operation);
                    (request(entry), None)
                })
                .collect();
            let pending = self.shared.link().send(requests, fence, deadline);
            InFlight {
                slice,
                checked,
                pending,
                started,
                deadline,
            }
        };
        let mut slices = entries.chunks(WINDOW / SLICES);
        let mut in_flight: VecDeque<InFlight<'a, I>> = slices.by_ref().take(SLICES).map(&send).collect();
        let mut results = Vec::with_capacity(entries.len());
        while let Some(oldest) = in_flight.pop_front() {
            let mut pending = oldest.pending.into_iter();
            for (entry, checked) in oldest.slice.iter().zip(oldest.checked) {
                let result = checked.and_then(|()| {
                    let pending = pending.next().ok_or(Error::Closed)?;
                    let path = request(entry).path();
                    let reply = self.reply(operation, path, &pending, oldest.deadline, oldest.started)?;
                    read(entry, reply)
                });
                results.push(result);
            }
            in_flight.extend(slices.next().map(&send));
        }
        Ok(results)
    }
}

/// A slice of a batch in flight.
struct InFlight<'a, I> {
    slice: &'a [I],
    /// Each entry's check; only those that passed were sent.
    checked: Vec<Result<()>>,
    pending: Vec<Pending>,
    started: Instant,
    deadline: Instant,
}

/// Adds the per-node results of a multi-read of `paths` (its `answer`) to
/// `results`, in order; a failed multi-read fails each node.
pub(super) fn node_reads(paths: &[String], answer: Result<Reply>, results: &mut BatchResults<(Vec<u8>, Stat)>) {
    match answer {
        Ok(Reply::MultiRead(reads)) if reads.len() == paths.len() => {
            results.extend(paths.iter().zip(reads).map(|(p, read)| match read {
                Ok((data, stat)) => Ok((data, stat)),
                Err(code) => Err(Error::from_code(code, p)),
            }))
        }
        Ok(other) => {
            let e = unexpected(other, paths.first().map_or("/", String::as_str));
            results.extend(paths.iter().map(|_| Err(e.clone())));
        }
        Err(e) => results.extend(paths.iter().map(|_| Err(e.clone()))),
    }
}
