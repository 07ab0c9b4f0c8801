//! Blocking ZooKeeper operations on one node: one deadline per attempt,
//! retries by policy, packet sizes checked before sending.

use super::packet::{create_size, string_size, REQUEST_HEADER};
use super::request::Opts;
use super::wire::{Reply, Request};
use super::{Acl, CreateMode, Session, Stat, ZkClient};
use std::time::Instant;

use crate::error::{Error, Result};
use crate::path;

/// Whether a delete is known to be ours.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Deleted {
    /// The server confirmed our delete.
    Yes,
    /// An attempt's reply was lost and a retry found the node gone: our lost
    /// attempt or another client deleted it.
    Unknown,
}

impl ZkClient {
    /// Creates a node with the client's default ACL and returns its path (with
    /// the sequence appended for sequential modes) and stat.
    ///
    /// # Errors
    /// [`Error::NoNode`] if the parent is missing, [`Error::NodeExists`],
    /// [`Error::NotAuthorized`], [`Error::ItemTooLarge`] (checked before
    /// sending), or a connection error once the retry policy gives up.
    ///
    /// A sequential create whose reply was lost is retried like any request,
    /// so in that rare case a second node can be created.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// use zk_queue::{ZkClient, client::CreateMode};
    /// let client = ZkClient::connect("127.0.0.1:2181")?;
    /// client.ensure_path("/jobs")?;
    /// let (path, stat) = client.create("/jobs/job-", b"{}", CreateMode::PersistentSequential)?;
    /// assert!(path.starts_with("/jobs/job-"));
    /// assert_eq!(stat.data_length, 2);
    /// # Ok(())
    /// # }
    /// ```
    pub fn create(&self, path: &str, data: &[u8], mode: CreateMode) -> Result<(String, Stat)> {
        self.create_with(path, data, Opts::new().mode(mode))
    }

    /// Creates a node with the given ACL; otherwise as [`create`](Self::create).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// use zk_queue::{ZkClient, client::{Acl, CreateMode}};
    /// let client = ZkClient::builder("127.0.0.1:2181").add_auth("digest", b"alice:secret").connect()?;
    /// client.create_with_acl("/private", b"", CreateMode::Persistent, &[Acl::creator_all()])?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn create_with_acl(&self, path: &str, data: &[u8], mode: CreateMode, acl: &[Acl]) -> Result<(String, Stat)> {
        self.create_with(path, data, Opts::new().mode(mode).acl(acl))
    }

    /// Creates a node with the mode and ACL of `opts`; otherwise as
    /// [`create`](Self::create).
    pub(crate) fn create_with(&self, path: &str, data: &[u8], opts: Opts<'_>) -> Result<(String, Stat)> {
        path::validate(path)?;
        let acl = opts.acl_or(self.default_acl());
        if acl.is_empty() {
            return Err(Error::InvalidArgument("ACL must not be empty".into()));
        }
        self.check_packet(create_size(path, 0, acl), data.len())?;
        let mode = opts.create_mode();
        let request = || {
            let create = Request::Create { path, data, acl, mode };
            (create, None)
        };
        self.call("create", path, opts, request, |reply| created(reply, path))
    }

    /// Deletes a node, only at `version` if one is given.
    ///
    /// # Errors
    /// [`Error::NoNode`], [`Error::BadVersion`], [`Error::NotEmpty`],
    /// [`Error::NotAuthorized`], or a connection error.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// match client.delete("/jobs/job-0000000000", None) {
    ///     Ok(()) | Err(zk_queue::Error::NoNode { .. }) => {}
    ///     Err(e) => return Err(e),
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn delete(&self, path: &str, version: Option<i32>) -> Result<()> {
        self.delete_with(path, version, Opts::new()).map(|_| ())
    }

    /// Deletes a node as `opts` say, and tells whether the delete is certainly
    /// ours: after a lost reply, a retry that finds the node gone cannot tell.
    pub(crate) fn delete_with(&self, path: &str, version: Option<i32>, opts: Opts<'_>) -> Result<Deleted> {
        path::validate(path)?;
        // Whether an attempt's reply was lost (the connection, or the
        // deadline): its delete may have been applied.
        let mut reply_lost = false;
        let version = version.unwrap_or(-1);
        let result = self.run("delete", opts, |deadline, fence| {
            let started = Instant::now();
            let pending = self.send_one(Request::Delete { path, version }, None, fence, deadline);
            let attempt = self.reply("delete", path, &pending, deadline, started).map(|_| ());
            reply_lost |= matches!(attempt, Err(Error::ConnectionLoss { .. } | Error::Timeout { .. }));
            attempt
        });
        match result {
            Ok(()) => Ok(Deleted::Yes),
            Err(Error::NoNode { .. }) if reply_lost => Ok(Deleted::Unknown),
            Err(e) => Err(e),
        }
    }

    /// Deletes `path` (gone already is fine), then reads whether `then`
    /// exists: the two requests are written together, and the session's
    /// order has the read answered after the delete is applied, in one
    /// round trip.
    pub(crate) fn delete_then_exists(&self, path: &str, then: &str, opts: Opts<'_>) -> Result<Option<Stat>> {
        path::validate(path)?;
        path::validate(then)?;
        self.run("delete", opts, |deadline, fence| {
            let started = Instant::now();
            let requests = vec![
                (Request::Delete { path, version: -1 }, None),
                (
                    Request::Exists {
                        path: then,
                        watch: false,
                    },
                    None,
                ),
            ];
            let mut pending = self.shared.link().send(requests, fence, deadline).into_iter();
            let (Some(delete), Some(exists)) = (pending.next(), pending.next()) else {
                return Err(Error::Closed);
            };
            match self.reply("delete", path, &delete, deadline, started) {
                Ok(_) | Err(Error::NoNode { .. }) => {}
                Err(e) => return Err(e),
            }
            match self.reply("exists", then, &exists, deadline, started) {
                Ok(reply) => stat_of(reply).map(Some),
                Err(Error::NoNode { .. }) => Ok(None),
                Err(e) => Err(e),
            }
        })
    }

    /// Settles `sent`, the result of a delete of `path` sent in a pipelined
    /// batch, which is never retried: a retryable failure may be a lost reply
    /// to a delete the server applied, so the delete is sent again (with
    /// retries), and a node then found gone is [`Deleted::Unknown`].
    pub(crate) fn settle_batch_delete(&self, path: &str, version: Option<i32>, sent: Result<()>) -> Result<Deleted> {
        match sent {
            Ok(()) => Ok(Deleted::Yes),
            Err(e) if e.is_retryable() => {
                log::debug!("{path}: a pipelined delete's outcome is unknown ({e}); deleting again");
                match self.delete_with(path, version, Opts::new()) {
                    Err(Error::NoNode { .. }) => Ok(Deleted::Unknown),
                    other => other,
                }
            }
            Err(e) => Err(e),
        }
    }

    /// Sends a delete of the ephemeral node `path` of `session` without
    /// waiting for it: it is applied once the session's connection allows,
    /// and never in a later session (a node of an expired session is gone
    /// anyway, and a node of the same name created in a later session is
    /// not this one). For letting go of a lock when the caller's deadline
    /// leaves no time to wait.
    pub(crate) fn delete_ephemeral_in_background(&self, path: &str, session: Session) {
        if self.is_closed() {
            return;
        }
        let (client, path) = (self.clone(), path.to_owned());
        let spawned = std::thread::Builder::new()
            .name("zk-queue-release".into())
            .spawn(
                move || match client.delete_with(&path, None, Opts::new().once().fenced(session)) {
                    Ok(_) | Err(Error::NoNode { .. } | Error::Closed | Error::SessionExpired) => {}
                    Err(e) => log::warn!("cannot delete {path}; it stays until its session ends: {e}"),
                },
            );
        if let Err(e) = spawned {
            log::warn!("cannot start a thread to delete a lock; it stays until its session ends: {e}");
        }
    }

    /// The node's stat, or `None` if it does not exist.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// if let Some(stat) = client.exists("/jobs")? {
    ///     println!("{} jobs", stat.num_children);
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn exists(&self, path: &str) -> Result<Option<Stat>> {
        self.exists_with(path, Opts::new())
    }

    /// [`exists`](Self::exists) as `opts` say.
    pub(crate) fn exists_with(&self, path: &str, opts: Opts<'_>) -> Result<Option<Stat>> {
        path::validate(path)?;
        let request = || (Request::Exists { path, watch: false }, None);
        match self.call("exists", path, opts, request, stat_of) {
            Ok(stat) => Ok(Some(stat)),
            Err(Error::NoNode { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The node's data and stat.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let (data, stat) = client.get_data("/app/config/key")?;
    /// println!("{} bytes, version {}", data.len(), stat.version);
    /// # Ok(())
    /// # }
    /// ```
    pub fn get_data(&self, path: &str) -> Result<(Vec<u8>, Stat)> {
        self.get_data_with(path, Opts::new())
    }

    /// [`get_data`](Self::get_data) as `opts` say.
    pub(crate) fn get_data_with(&self, path: &str, opts: Opts<'_>) -> Result<(Vec<u8>, Stat)> {
        path::validate(path)?;
        let request = || (Request::GetData { path, watch: false }, None);
        self.call("get_data", path, opts, request, |reply| match reply {
            Reply::Data { data, stat } => Ok((data, stat)),
            other => Err(unexpected(other, path)),
        })
    }

    /// The node's ACL and stat.
    ///
    /// ZooKeeper answers only a client with `READ` or `ADMIN` on the node;
    /// digest entries never show the password (a client without `ADMIN` on the
    /// node sees `user:x` in place of the stored hash, on ZooKeeper 3.6 and later).
    ///
    /// # Errors
    /// [`Error::NoNode`], [`Error::NotAuthorized`], or a connection error once
    /// the retry policy gives up.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// use zk_queue::{ZkClient, client::Acl};
    /// let client = ZkClient::connect("127.0.0.1:2181")?;
    /// let (acl, _stat) = client.get_acl("/jobs")?;
    /// for entry in &acl {
    ///     println!("{}:{} {:?}", entry.scheme(), entry.id(), entry.perms());
    /// }
    /// if acl.contains(&Acl::anyone_all()) {
    ///     println!("/jobs is open to every client");
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn get_acl(&self, path: &str) -> Result<(Vec<Acl>, Stat)> {
        path::validate(path)?;
        let request = || (Request::GetAcl { path }, None);
        self.call("get_acl", path, Opts::new(), request, |reply| match reply {
            Reply::Acl { acl, stat } => Ok((acl, stat)),
            other => Err(unexpected(other, path)),
        })
    }

    /// Replaces the node's ACL, only at ACL version `version` (the stat's
    /// `aversion`) if one is given, and returns the new stat. It changes that
    /// one node: neither its children nor nodes created later.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an empty ACL (refused before sending),
    /// [`Error::InvalidPath`], [`Error::NoNode`],
    /// [`Error::BadVersion`], [`Error::NotAuthorized`] without `ADMIN` on the
    /// node, or a connection error once the retry policy gives up.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// use zk_queue::{ZkClient, client::{Acl, Perms}};
    /// let client = ZkClient::builder("127.0.0.1:2181").add_auth("digest", b"ops:secret").connect()?;
    /// // Only `ops` may touch /jobs from now on.
    /// client.set_acl("/jobs", &[Acl::digest("ops", "secret", Perms::ALL)], None)?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn set_acl(&self, path: &str, acl: &[Acl], version: Option<i32>) -> Result<Stat> {
        path::validate(path)?;
        if acl.is_empty() {
            return Err(Error::InvalidArgument(format!(
                "an empty acl for {path} would lock every client out of it"
            )));
        }
        let version = version.unwrap_or(-1);
        let request = || (Request::SetAcl { path, acl, version }, None);
        self.call("set_acl", path, Opts::new(), request, stat_of)
    }

    /// Replaces the node's data, only at `version` if one is given, and
    /// returns the new stat.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let (_, stat) = client.get_data("/app/config/key")?;
    /// client.set_data("/app/config/key", b"new", Some(stat.version))?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn set_data(&self, path: &str, data: &[u8], version: Option<i32>) -> Result<Stat> {
        self.set_data_with(path, data, version, Opts::new())
    }

    /// [`set_data`](Self::set_data) as `opts` say.
    pub(crate) fn set_data_with(&self, path: &str, data: &[u8], version: Option<i32>, opts: Opts<'_>) -> Result<Stat> {
        path::validate(path)?;
        self.check_packet(REQUEST_HEADER + string_size(path) + 4 + 4, data.len())?;
        let version = version.unwrap_or(-1);
        let request = || (Request::SetData { path, data, version }, None);
        self.call("set_data", path, opts, request, stat_of)
    }

    /// The names of the node's children (in the server's order, which is not
    /// defined) and the node's stat.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let (mut names, _stat) = client.get_children("/jobs")?;
    /// names.sort();
    /// # Ok(())
    /// # }
    /// ```
    pub fn get_children(&self, path: &str) -> Result<(Vec<String>, Stat)> {
        self.get_children_with(path, Opts::new())
    }

    /// [`get_children`](Self::get_children) as `opts` say.
    pub(crate) fn get_children_with(&self, path: &str, opts: Opts<'_>) -> Result<(Vec<String>, Stat)> {
        path::validate(path)?;
        let request = || (Request::GetChildren { path, watch: false }, None);
        self.call("get_children", path, opts, request, |reply| match reply {
            Reply::Children { names, stat } => Ok((names, stat)),
            other => Err(unexpected(other, path)),
        })
    }

    /// Makes the server this client talks to catch up with the leader
    /// (ZooKeeper's `sync`), so that the reads after it see every write the
    /// ensemble applied before. A write whose reply was lost must be looked
    /// for only after this: the server the client reconnected to may not have
    /// applied it yet. A missing `path` is no error: the reads after it will
    /// tell.
    pub(crate) fn sync(&self, path: &str, opts: Opts<'_>) -> Result<()> {
        path::validate(path)?;
        match self.call("sync", path, opts, || (Request::Sync { path }, None), |_| Ok(())) {
            Ok(()) | Err(Error::NoNode { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Creates `path` and any missing ancestors as persistent nodes with the
    /// default ACL. A node that already exists, or that another client creates
    /// at the same moment, counts as success.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// client.ensure_path("/a/b/c")?;
    /// client.ensure_path("/a/b/c")?; // idempotent
    /// # Ok(())
    /// # }
    /// ```
    pub fn ensure_path(&self, path: &str) -> Result<()> {
        self.ensure_path_with(path, Opts::new())
    }

    /// Like [`ensure_path`](Self::ensure_path), creating nodes as `opts` say:
    /// the last one with their mode (ancestors are persistent), every one
    /// with their ACL.
    pub(crate) fn ensure_path_with(&self, path: &str, opts: Opts<'_>) -> Result<()> {
        path::validate(path)?;
        if path == "/" || self.exists_with(path, opts)?.is_some() {
            return Ok(());
        }
        let mut prefix = String::with_capacity(path.len());
        let components: Vec<&str> = path[1..].split('/').collect();
        for (i, name) in components.iter().enumerate() {
            prefix.push('/');
            prefix.push_str(name);
            let mode = if i + 1 == components.len() {
                opts.create_mode()
            } else {
                CreateMode::Persistent
            };
            match self.create_with(&prefix, &[], opts.mode(mode)) {
                Ok(_) | Err(Error::NodeExists { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

/// The created node's path and stat from a create's reply.
pub(super) fn created(reply: Reply, path: &str) -> Result<(String, Stat)> {
    match reply {
        Reply::Created { path, stat } => Ok((path, stat)),
        other => Err(unexpected(other, path)),
    }
}

/// The stat of a reply that carries one.
pub(super) fn stat_of(reply: Reply) -> Result<Stat> {
    match reply {
        Reply::Stat(stat) => Ok(stat),
        other => Err(unexpected(other, "/")),
    }
}

/// A reply of another kind than its request's: the client's own mistake,
/// reported rather than trusted.
pub(super) fn unexpected(reply: Reply, path: &str) -> Error {
    Error::ZooKeeper {
        path: Some(path.to_owned()),
        source: crate::error::ClientError::unexpected(&format!("{reply:?}")),
    }
}
