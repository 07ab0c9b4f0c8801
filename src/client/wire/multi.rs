//! The body of a multi or multi-read reply (`MultiResponse`): per operation a
//! `MultiHeader` (`type`, `done` false, `err`) and that operation's response
//! record, then a header with `done` true.

use super::codes::OpCode;
use super::jute::Reader;
use crate::client::Stat;
use crate::error::Code;
use crate::error::DecodeError;

/// The result of one operation of a multi.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum MultiResult {
    /// A node was created at `path` (chroot taken off); `stat` is there for
    /// the creates the server answers with a stat (`create2`, container and
    /// TTL creates), not for a plain `create`.
    Created {
        /// The created path.
        path: String,
        /// The new node's stat.
        stat: Option<Stat>,
    },
    /// A node was deleted.
    Deleted,
    /// A node's data was replaced; its new stat.
    SetData(Stat),
    /// A version check passed.
    Checked,
    /// The operation did not happen: in a failed multi every result is an
    /// error, with code 0 for the operations before the failing one, the
    /// failing one's code, and [`Code::RUNTIME_INCONSISTENCY`] for those
    /// after it.
    Error(Code),
}

/// The result of one read of a multi-read: the node's data and stat, or the
/// code the read failed with.
pub(crate) type ReadResult = Result<(Vec<u8>, Stat), Code>;

/// Reads the next `MultiHeader`: `None` for the end marker, else the type of
/// the result that follows.
fn next_type(r: &mut Reader<'_>) -> Result<Option<i32>, DecodeError> {
    let op = r.i32()?;
    let done = r.bool()?;
    let _err = r.i32()?;
    Ok(if done { None } else { Some(op) })
}

/// The results of a multi, up to and including the end marker.
pub(crate) fn results(r: &mut Reader<'_>, chroot: &str) -> Result<Vec<MultiResult>, DecodeError> {
    let mut out = Vec::new();
    loop {
        let at = r.clone();
        let result = match next_type(r)? {
            None => return Ok(out),
            Some(OpCode::CREATE) => MultiResult::Created {
                path: r.path(chroot)?,
                stat: None,
            },
            Some(OpCode::CREATE2 | OpCode::CREATE_CONTAINER | OpCode::CREATE_TTL) => MultiResult::Created {
                path: r.path(chroot)?,
                stat: Some(r.stat()?),
            },
            Some(OpCode::DELETE) => MultiResult::Deleted,
            Some(OpCode::SET_DATA) => MultiResult::SetData(r.stat()?),
            Some(OpCode::CHECK) => MultiResult::Checked,
            Some(OpCode::ERROR) => MultiResult::Error(Code(r.i32()?)),
            Some(_) => return Err(at.error("unexpected result type in multi")),
        };
        out.push(result);
    }
}

/// The results of a multi-read, up to and including the end marker.
pub(crate) fn read_results(r: &mut Reader<'_>) -> Result<Vec<ReadResult>, DecodeError> {
    let mut out = Vec::new();
    loop {
        let at = r.clone();
        let result = match next_type(r)? {
            None => return Ok(out),
            Some(OpCode::GET_DATA) => Ok((r.buffer()?, r.stat()?)),
            Some(OpCode::ERROR) => Err(Code(r.i32()?)),
            Some(_) => return Err(at.error("unexpected result type in multi-read")),
        };
        out.push(result);
    }
}
