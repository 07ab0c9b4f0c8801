//! Requests as the client sends them: a length-prefixed frame holding a
//! `RequestHeader` (`xid`, `type`) and the operation's request record.

use std::time::Duration;

use super::codes::OpCode;
use super::jute::{framed, Writer};
use super::reply::ReplyKind;
use super::{XID_AUTH, XID_PING, XID_SET_WATCHES};
use crate::client::{Acl, CreateMode, Op};

/// One request, borrowing what it sends. [`Request::encode`] writes it.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Request<'a> {
    /// Create a node. Sent as `create2` (the reply carries the new node's
    /// stat), `createContainer` for [`CreateMode::Container`] and
    /// `createTTL` for the TTL modes; every one is answered with the path and
    /// the stat.
    Create {
        /// Path (a prefix for sequential modes).
        path: &'a str,
        /// Data.
        data: &'a [u8],
        /// The new node's ACL; ZooKeeper refuses an empty one.
        acl: &'a [Acl],
        /// Kind of node.
        mode: CreateMode,
    },
    /// Delete a node at `version` (-1 for any).
    Delete {
        /// Path.
        path: &'a str,
        /// Expected version, -1 for any.
        version: i32,
    },
    /// Whether a node exists, optionally leaving a data watch (which fires
    /// on its creation if it does not).
    Exists {
        /// Path.
        path: &'a str,
        /// Leave a watch.
        watch: bool,
    },
    /// A node's data and stat, optionally leaving a data watch.
    GetData {
        /// Path.
        path: &'a str,
        /// Leave a watch.
        watch: bool,
    },
    /// Replace a node's data at `version` (-1 for any).
    SetData {
        /// Path.
        path: &'a str,
        /// New data.
        data: &'a [u8],
        /// Expected version, -1 for any.
        version: i32,
    },
    /// A node's ACL and stat.
    GetAcl {
        /// Path.
        path: &'a str,
    },
    /// Replace a node's ACL at ACL version `version` (-1 for any).
    SetAcl {
        /// Path.
        path: &'a str,
        /// The new ACL.
        acl: &'a [Acl],
        /// Expected ACL version (`aversion`), -1 for any.
        version: i32,
    },
    /// A node's children and stat (sent as `getChildren2`), optionally
    /// leaving a child watch.
    GetChildren {
        /// Path.
        path: &'a str,
        /// Leave a watch.
        watch: bool,
    },
    /// Wait until the server caught up with the leader for `path`.
    Sync {
        /// Path.
        path: &'a str,
    },
    /// An atomic transaction. Each operation is preceded by a `MultiHeader`
    /// (`type`, `done` false, `err` -1), and a header of type -1 with `done`
    /// true ends the list.
    Multi {
        /// The operations, in order.
        ops: &'a [Op],
        /// The ACL of creates that give none of their own.
        default_acl: &'a [Acl],
    },
    /// The data of several nodes, each read as a `getData` without a watch,
    /// framed as a multi; each read succeeds or fails on its own.
    MultiRead {
        /// The nodes to read.
        paths: &'a [String],
    },
    /// A persistent watch on `path`, and on its whole subtree if
    /// `recursive`.
    AddWatch {
        /// Path.
        path: &'a str,
        /// Whether the watch covers the subtree.
        recursive: bool,
    },
    /// Remove watches of one kind from `path`.
    RemoveWatches {
        /// Path.
        path: &'a str,
        /// 1 child watches, 2 data watches, 3 any, 4 persistent, 5
        /// persistent recursive.
        kind: i32,
    },
    /// Add an identity to the session (`AuthPacket`); always sent with
    /// [`XID_AUTH`].
    SetAuth {
        /// Scheme (`digest`, ...).
        scheme: &'a str,
        /// Credentials (`user:password` for `digest`).
        auth: &'a [u8],
    },
    /// Re-register watches after a reconnect (`SetWatches2`); always sent
    /// with [`XID_SET_WATCHES`]. The server fires at once those whose node
    /// changed after `relative_zxid`.
    SetWatches {
        /// The last zxid the client saw.
        relative_zxid: i64,
        /// Paths with a data watch.
        data: &'a [String],
        /// Paths with an exists watch (a data watch on an absent node).
        exist: &'a [String],
        /// Paths with a child watch.
        child: &'a [String],
        /// Paths with a persistent watch.
        persistent: &'a [String],
        /// Paths with a persistent recursive watch.
        recursive: &'a [String],
    },
    /// Keep the session alive; always sent with [`XID_PING`].
    Ping,
    /// End the session.
    CloseSession,
}

impl<'a> Request<'a> {
    /// The node the request concerns, for naming it in errors: the first
    /// operation's of a multi or multi-read, `/` for session requests.
    pub(crate) fn path(&self) -> &'a str {
        match *self {
            Request::Create { path, .. }
            | Request::Delete { path, .. }
            | Request::Exists { path, .. }
            | Request::GetData { path, .. }
            | Request::SetData { path, .. }
            | Request::GetAcl { path }
            | Request::SetAcl { path, .. }
            | Request::GetChildren { path, .. }
            | Request::Sync { path }
            | Request::AddWatch { path, .. }
            | Request::RemoveWatches { path, .. } => path,
            Request::Multi { ops, .. } => ops.first().map_or("/", Op::path),
            Request::MultiRead { paths } => paths.first().map_or("/", String::as_str),
            Request::SetAuth { .. } | Request::SetWatches { .. } | Request::Ping | Request::CloseSession => "/",
        }
    }
}

impl Request<'_> {
    /// The `type` of the request header.
    pub(crate) fn op_code(&self) -> i32 {
        match self {
            Request::Create { mode, .. } => create_op_code(*mode),
            Request::Delete { .. } => OpCode::DELETE,
            Request::Exists { .. } => OpCode::EXISTS,
            Request::GetData { .. } => OpCode::GET_DATA,
            Request::SetData { .. } => OpCode::SET_DATA,
            Request::GetAcl { .. } => OpCode::GET_ACL,
            Request::SetAcl { .. } => OpCode::SET_ACL,
            Request::GetChildren { .. } => OpCode::GET_CHILDREN2,
            Request::Sync { .. } => OpCode::SYNC,
            Request::Multi { .. } => OpCode::MULTI,
            Request::MultiRead { .. } => OpCode::MULTI_READ,
            Request::AddWatch { .. } => OpCode::ADD_WATCH,
            Request::RemoveWatches { .. } => OpCode::REMOVE_WATCHES,
            Request::SetAuth { .. } => OpCode::AUTH,
            Request::SetWatches { .. } => OpCode::SET_WATCHES2,
            Request::Ping => OpCode::PING,
            Request::CloseSession => OpCode::CLOSE_SESSION,
        }
    }

    /// What the reply's body holds.
    pub(crate) fn reply_kind(&self) -> ReplyKind {
        match self {
            Request::Create { .. } => ReplyKind::Created,
            Request::Exists { .. } | Request::SetData { .. } | Request::SetAcl { .. } => ReplyKind::Stat,
            Request::GetData { .. } => ReplyKind::Data,
            Request::GetAcl { .. } => ReplyKind::Acl,
            Request::GetChildren { .. } => ReplyKind::Children,
            Request::Sync { .. } => ReplyKind::Path,
            Request::Multi { .. } => ReplyKind::Multi,
            Request::MultiRead { .. } => ReplyKind::MultiRead,
            Request::Delete { .. }
            | Request::AddWatch { .. }
            | Request::RemoveWatches { .. }
            | Request::SetAuth { .. }
            | Request::SetWatches { .. }
            | Request::Ping
            | Request::CloseSession => ReplyKind::Empty,
        }
    }

    /// The xid the request is sent with: `xid`, except for the requests the
    /// protocol gives a fixed one.
    pub(crate) fn xid(&self, xid: i32) -> i32 {
        match self {
            Request::Ping => XID_PING,
            Request::SetAuth { .. } => XID_AUTH,
            Request::SetWatches { .. } => XID_SET_WATCHES,
            _ => xid,
        }
    }

    /// Appends the request as one complete frame to `out` (which may already
    /// hold other frames): the length, the header with [`Request::xid`] and
    /// [`Request::op_code`], and the body, every path in it under `chroot`
    /// (see [`chroot`](super::chroot); `""` for none).
    pub(crate) fn encode(&self, xid: i32, chroot: &str, out: &mut Vec<u8>) {
        framed(out, |w| {
            w.i32(self.xid(xid));
            w.i32(self.op_code());
            self.body(w, chroot);
        });
    }

    /// Writes the request record.
    fn body(&self, w: &mut Writer<'_>, chroot: &str) {
        match *self {
            Request::Create { path, data, acl, mode } => create(w, chroot, path, data, acl, mode),
            Request::Delete { path, version } => {
                w.path(chroot, path);
                w.i32(version);
            }
            Request::Exists { path, watch }
            | Request::GetData { path, watch }
            | Request::GetChildren { path, watch } => {
                w.path(chroot, path);
                w.bool(watch);
            }
            Request::SetData { path, data, version } => set_data(w, chroot, path, data, version),
            Request::GetAcl { path } | Request::Sync { path } => w.path(chroot, path),
            Request::SetAcl { path, acl, version } => {
                w.path(chroot, path);
                w.acls(acl);
                w.i32(version);
            }
            Request::Multi { ops, default_acl } => multi(w, chroot, ops, default_acl),
            Request::MultiRead { paths } => {
                for path in paths {
                    multi_header(w, OpCode::GET_DATA);
                    w.path(chroot, path);
                    w.bool(false);
                }
                multi_end(w);
            }
            Request::AddWatch { path, recursive } => {
                w.path(chroot, path);
                w.i32(if recursive { 1 } else { 0 });
            }
            Request::RemoveWatches { path, kind } => {
                w.path(chroot, path);
                w.i32(kind);
            }
            Request::SetAuth { scheme, auth } => {
                w.i32(0);
                w.string(scheme);
                w.buffer(auth);
            }
            Request::SetWatches {
                relative_zxid,
                data,
                exist,
                child,
                persistent,
                recursive,
            } => {
                w.i64(relative_zxid);
                for paths in [data, exist, child, persistent, recursive] {
                    w.paths(chroot, paths);
                }
            }
            Request::Ping | Request::CloseSession => {}
        }
    }
}

/// The op code a create of `mode` is sent with.
fn create_op_code(mode: CreateMode) -> i32 {
    match mode {
        CreateMode::Container => OpCode::CREATE_CONTAINER,
        CreateMode::PersistentWithTtl { .. } | CreateMode::PersistentSequentialWithTtl { .. } => OpCode::CREATE_TTL,
        CreateMode::Persistent
        | CreateMode::PersistentSequential
        | CreateMode::Ephemeral
        | CreateMode::EphemeralSequential => OpCode::CREATE2,
    }
}

/// The `flags` of a create of `mode`, and its TTL for the TTL modes.
fn create_flags(mode: CreateMode) -> (i32, Option<Duration>) {
    match mode {
        CreateMode::Persistent => (0, None),
        CreateMode::Ephemeral => (1, None),
        CreateMode::PersistentSequential => (2, None),
        CreateMode::EphemeralSequential => (3, None),
        CreateMode::Container => (4, None),
        CreateMode::PersistentWithTtl { ttl } => (5, Some(ttl)),
        CreateMode::PersistentSequentialWithTtl { ttl } => (6, Some(ttl)),
    }
}

/// A `CreateRequest` (`path`, `data`, `acl`, `flags`), or a
/// `CreateTTLRequest` (the same and `ttl` in milliseconds) for the TTL modes.
/// A TTL the server does not accept (zero, or past its limit of about 35
/// years) is answered with [`Code::BAD_ARGUMENTS`](super::Code::BAD_ARGUMENTS).
fn create(w: &mut Writer<'_>, chroot: &str, path: &str, data: &[u8], acl: &[Acl], mode: CreateMode) {
    let (flags, ttl) = create_flags(mode);
    w.path(chroot, path);
    w.buffer(data);
    w.acls(acl);
    w.i32(flags);
    if let Some(ttl) = ttl {
        w.i64(i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX));
    }
}

/// A `SetDataRequest`.
fn set_data(w: &mut Writer<'_>, chroot: &str, path: &str, data: &[u8], version: i32) {
    w.path(chroot, path);
    w.buffer(data);
    w.i32(version);
}

/// The operations of a multi, each after its header, and the end marker.
fn multi(w: &mut Writer<'_>, chroot: &str, ops: &[Op], default_acl: &[Acl]) {
    for op in ops {
        match op {
            Op::Create { path, data, mode, acl } => {
                multi_header(w, create_op_code(*mode));
                create(w, chroot, path, data, acl.as_deref().unwrap_or(default_acl), *mode);
            }
            Op::Delete { path, version } => {
                multi_header(w, OpCode::DELETE);
                w.path(chroot, path);
                w.i32(version.unwrap_or(-1));
            }
            Op::SetData { path, data, version } => {
                multi_header(w, OpCode::SET_DATA);
                set_data(w, chroot, path, data, version.unwrap_or(-1));
            }
            Op::Check { path, version } => {
                multi_header(w, OpCode::CHECK);
                w.path(chroot, path);
                w.i32(*version);
            }
        }
    }
    multi_end(w);
}

/// The `MultiHeader` before an operation of type `op`.
fn multi_header(w: &mut Writer<'_>, op: i32) {
    w.i32(op);
    w.bool(false);
    w.i32(-1);
}

/// The `MultiHeader` that ends a multi's operations.
fn multi_end(w: &mut Writer<'_>) {
    w.i32(-1);
    w.bool(true);
    w.i32(-1);
}

#[cfg(test)]
mod chroot_tests;
#[cfg(test)]
mod tests;
