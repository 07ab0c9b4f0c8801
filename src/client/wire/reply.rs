//! Replies as the server sends them: a frame holding a `ReplyHeader` (`xid`,
//! `zxid`, `err`) and, for a successful request, its response record.

use std::fmt;

use super::jute::Reader;
use super::multi::{self, MultiResult, ReadResult};
use crate::client::{Acl, Stat};
use crate::error::Code;
use crate::error::DecodeError;

/// The header of every reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ReplyHeader {
    /// The xid of the request answered, or one of the special xids
    /// ([`XID_WATCH_EVENT`](super::XID_WATCH_EVENT), ...).
    pub(crate) xid: i32,
    /// The last transaction the server applied (watch events may carry -1).
    pub(crate) zxid: i64,
    /// The outcome; not OK means the body, if any, is not to be read (except
    /// a multi's).
    pub(crate) err: Code,
}

impl ReplyHeader {
    /// Bytes a header takes.
    pub(crate) const LEN: usize = 16;

    /// The header at the start of `frame` (the bytes after the length
    /// prefix), and the body after it.
    pub(crate) fn decode(frame: &[u8]) -> Result<(ReplyHeader, &[u8]), DecodeError> {
        let mut r = Reader::new(frame);
        if r.remaining() < ReplyHeader::LEN {
            return Err(r.error("truncated reply header"));
        }
        let header = ReplyHeader {
            xid: r.i32()?,
            zxid: r.i64()?,
            err: Code(r.i32()?),
        };
        Ok((header, r.rest()))
    }
}

/// What the body of a successful reply holds; given by the request
/// ([`Request::reply_kind`](super::Request::reply_kind)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum ReplyKind {
    /// Nothing (delete, auth, set-watches, ping, close, add-watch,
    /// remove-watches). An `ErrorResponse` (one int, as the server answers
    /// add-watch with) is accepted too.
    Empty,
    /// `Create2Response`: the created path and the new node's stat.
    Created,
    /// A stat alone (exists, set-data, set-ACL).
    Stat,
    /// `GetDataResponse`: data and stat.
    Data,
    /// `GetChildren2Response`: child names and the parent's stat.
    Children,
    /// `GetACLResponse`: the ACL and stat.
    Acl,
    /// `SyncResponse`: a path.
    Path,
    /// A multi's results.
    Multi,
    /// A multi-read's results.
    MultiRead,
}

impl ReplyKind {
    /// Every kind.
    pub(crate) const ALL: [ReplyKind; 9] = [
        ReplyKind::Empty,
        ReplyKind::Created,
        ReplyKind::Stat,
        ReplyKind::Data,
        ReplyKind::Children,
        ReplyKind::Acl,
        ReplyKind::Path,
        ReplyKind::Multi,
        ReplyKind::MultiRead,
    ];
}

/// A decoded reply body. Paths in it are the client's (chroot taken off).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Reply {
    /// No body.
    Empty,
    /// A node was created.
    Created {
        /// Its path (with the sequence for sequential modes).
        path: String,
        /// Its stat.
        stat: Stat,
    },
    /// A node's stat.
    Stat(Stat),
    /// A node's data (a null buffer reads as empty) and stat.
    Data {
        /// The data.
        data: Vec<u8>,
        /// The stat.
        stat: Stat,
    },
    /// A node's children (names, not paths) and stat.
    Children {
        /// Child names, in the server's order.
        names: Vec<String>,
        /// The parent's stat.
        stat: Stat,
    },
    /// A node's ACL and stat.
    Acl {
        /// The ACL.
        acl: Vec<Acl>,
        /// The stat.
        stat: Stat,
    },
    /// The path a sync answered for.
    Path(String),
    /// A multi's results, one per operation. A failed multi has only
    /// [`MultiResult::Error`]s: code 0 for the operations before the failing
    /// one, its code for it, and [`Code::RUNTIME_INCONSISTENCY`] after it.
    Multi(Vec<MultiResult>),
    /// A multi-read's results, one per path: data and stat, or the code the
    /// read failed with.
    MultiRead(Vec<ReadResult>),
}

/// Why a reply is not a [`Reply`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ReplyError {
    /// The server answered with this (non-OK) code.
    Code(Code),
    /// The body is not what the protocol says it is.
    Malformed(DecodeError),
}

impl fmt::Display for ReplyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReplyError::Code(code) => write!(f, "server answered {code}"),
            ReplyError::Malformed(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for ReplyError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ReplyError::Code(_) => None,
            ReplyError::Malformed(e) => Some(e),
        }
    }
}

impl From<DecodeError> for ReplyError {
    fn from(e: DecodeError) -> Self {
        ReplyError::Malformed(e)
    }
}

/// Decodes the `body` of a reply of `kind` whose header carried
/// `header_err`, taking `chroot` off the paths in it.
///
/// A non-OK `header_err` is returned as [`ReplyError::Code`], except for a
/// multi or multi-read with a body: its per-operation results are decoded.
/// Bytes after a complete body make it [`ReplyError::Malformed`].
pub(crate) fn decode_reply(kind: ReplyKind, header_err: Code, body: &[u8], chroot: &str) -> Result<Reply, ReplyError> {
    if !header_err.is_ok() && (body.is_empty() || !matches!(kind, ReplyKind::Multi | ReplyKind::MultiRead)) {
        return Err(ReplyError::Code(header_err));
    }
    let mut r = Reader::new(body);
    let reply = match kind {
        ReplyKind::Empty => return empty(&mut r),
        ReplyKind::Created => Reply::Created {
            path: r.path(chroot)?,
            stat: r.stat()?,
        },
        ReplyKind::Stat => Reply::Stat(r.stat()?),
        ReplyKind::Data => Reply::Data {
            data: r.buffer()?,
            stat: r.stat()?,
        },
        ReplyKind::Children => Reply::Children {
            names: r.strings()?,
            stat: r.stat()?,
        },
        ReplyKind::Acl => Reply::Acl {
            acl: r.acls()?,
            stat: r.stat()?,
        },
        ReplyKind::Path => Reply::Path(r.path(chroot)?),
        ReplyKind::Multi => Reply::Multi(multi::results(&mut r, chroot)?),
        ReplyKind::MultiRead => Reply::MultiRead(multi::read_results(&mut r)?),
    };
    r.finish()?;
    Ok(reply)
}

/// An empty body, or an `ErrorResponse` whose non-zero code is the answer.
fn empty(r: &mut Reader<'_>) -> Result<Reply, ReplyError> {
    if r.remaining() == 0 {
        return Ok(Reply::Empty);
    }
    let code = Code(r.i32()?);
    r.finish()?;
    match code.is_ok() {
        true => Ok(Reply::Empty),
        false => Err(ReplyError::Code(code)),
    }
}

#[cfg(test)]
mod tests;
