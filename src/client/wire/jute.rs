//! Jute, ZooKeeper's record serialization, as its binary archive writes it:
//! big-endian `int` (4 bytes) and `long` (8 bytes), `boolean` as one byte,
//! `buffer` and `ustring` as an `int` length (-1 for null) and the bytes, and
//! `vector` as an `int` count (-1 for null) and the elements. Records are
//! their fields in order, with nothing between them.
//!
//! [`Writer`] appends values to a byte vector; [`Reader`] reads them from a
//! slice and never trusts a declared length or count further than the bytes
//! that are actually there.

use super::chroot;
use crate::client::{Acl, Perms, Stat};
use crate::error::DecodeError;

/// Bytes a serialized [`Stat`] takes: six longs and five ints.
pub(crate) const STAT_LEN: usize = 6 * 8 + 5 * 4;

/// Bytes the smallest serialized [`Acl`] takes: the perms and two empty
/// strings.
const MIN_ACL_LEN: usize = 12;

/// Bytes the smallest serialized string takes: its length.
const MIN_STRING_LEN: usize = 4;

/// Appends one length-prefixed frame to `out`: a 4-byte big-endian length,
/// then what `body` writes. `out` may already hold other frames.
pub(crate) fn framed(out: &mut Vec<u8>, body: impl FnOnce(&mut Writer<'_>)) {
    let start = out.len();
    out.extend_from_slice(&[0; 4]);
    body(&mut Writer { out });
    let len = jute_len(out.len() - start - 4);
    if let Some(prefix) = out.get_mut(start..start + 4) {
        prefix.copy_from_slice(&len.to_be_bytes());
    }
}

/// A length as jute writes it. A length past `i32::MAX` cannot be sent; it is
/// written as `i32::MAX`, which the server refuses (callers bound sizes far
/// below that: ZooKeeper's `jute.maxbuffer` is 1 MiB by default).
fn jute_len(len: usize) -> i32 {
    i32::try_from(len).unwrap_or(i32::MAX)
}

/// Appends jute values to a byte vector.
pub(crate) struct Writer<'a> {
    /// Where the values go.
    out: &'a mut Vec<u8>,
}

impl Writer<'_> {
    /// An `int`.
    pub(crate) fn i32(&mut self, value: i32) {
        self.out.extend_from_slice(&value.to_be_bytes());
    }

    /// A `long`.
    pub(crate) fn i64(&mut self, value: i64) {
        self.out.extend_from_slice(&value.to_be_bytes());
    }

    /// A `boolean`: 1 or 0.
    pub(crate) fn bool(&mut self, value: bool) {
        self.out.push(u8::from(value));
    }

    /// A `buffer` (never null).
    pub(crate) fn buffer(&mut self, bytes: &[u8]) {
        self.i32(jute_len(bytes.len()));
        self.out.extend_from_slice(bytes);
    }

    /// A `ustring` (never null).
    pub(crate) fn string(&mut self, text: &str) {
        self.buffer(text.as_bytes());
    }

    /// A `ustring` holding `path` as the server knows it under `chroot`.
    pub(crate) fn path(&mut self, chroot: &str, path: &str) {
        let [head, tail] = chroot::parts(chroot, path);
        self.i32(jute_len(head.len() + tail.len()));
        self.out.extend_from_slice(head.as_bytes());
        self.out.extend_from_slice(tail.as_bytes());
    }

    /// A `vector<ustring>` of paths, each under `chroot`.
    pub(crate) fn paths(&mut self, chroot: &str, paths: &[String]) {
        self.i32(jute_len(paths.len()));
        for path in paths {
            self.path(chroot, path);
        }
    }

    /// A `vector<ACL>`; each `ACL` is `perms` and an `Id` of `scheme` and
    /// `id`.
    pub(crate) fn acls(&mut self, acls: &[Acl]) {
        self.i32(jute_len(acls.len()));
        for acl in acls {
            self.i32(acl.perms().bits());
            self.string(acl.scheme());
            self.string(acl.id());
        }
    }
}

/// Reads jute values from a slice, front to back.
#[derive(Clone, Debug)]
pub(crate) struct Reader<'a> {
    /// The whole input.
    bytes: &'a [u8],
    /// Where the next value starts.
    pos: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `bytes`.
    pub(crate) fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader { bytes, pos: 0 }
    }

    /// Bytes not read yet.
    pub(crate) fn remaining(&self) -> usize {
        self.bytes.len().saturating_sub(self.pos)
    }

    /// The bytes not read yet.
    pub(crate) fn rest(&self) -> &'a [u8] {
        self.bytes.get(self.pos..).unwrap_or_default()
    }

    /// An error at the current position.
    pub(crate) fn error(&self, what: &'static str) -> DecodeError {
        DecodeError { what, offset: self.pos }
    }

    /// Fails unless every byte was read.
    pub(crate) fn finish(&self) -> Result<(), DecodeError> {
        match self.remaining() {
            0 => Ok(()),
            _ => Err(self.error("trailing bytes")),
        }
    }

    /// The next `n` bytes; `what` names them if they are not all there.
    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], DecodeError> {
        let end = self.pos.checked_add(n).ok_or_else(|| self.error(what))?;
        let bytes = self.bytes.get(self.pos..end).ok_or_else(|| self.error(what))?;
        self.pos = end;
        Ok(bytes)
    }

    /// The next `N` bytes as an array.
    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], DecodeError> {
        let bytes = self.take(N, what)?;
        <[u8; N]>::try_from(bytes).map_err(|_| self.error(what))
    }

    /// An `int`.
    pub(crate) fn i32(&mut self) -> Result<i32, DecodeError> {
        self.array("truncated int").map(i32::from_be_bytes)
    }

    /// A `long`.
    pub(crate) fn i64(&mut self) -> Result<i64, DecodeError> {
        self.array("truncated long").map(i64::from_be_bytes)
    }

    /// A `boolean`: any non-zero byte is true, as ZooKeeper reads it.
    pub(crate) fn bool(&mut self) -> Result<bool, DecodeError> {
        self.array::<1>("truncated boolean").map(|[b]| b != 0)
    }

    /// The length of a `buffer` or `ustring`, `None` for null; checked
    /// against the bytes left before anything is allocated.
    fn len(&mut self) -> Result<Option<usize>, DecodeError> {
        let at = self.pos;
        let fail = |what| DecodeError { what, offset: at };
        match self.i32()? {
            -1 => Ok(None),
            n => match usize::try_from(n) {
                Ok(n) if n <= self.remaining() => Ok(Some(n)),
                Ok(_) => Err(fail("length past the end")),
                Err(_) => Err(fail("negative length")),
            },
        }
    }

    /// The bytes of a `buffer`, borrowed; null reads as empty.
    pub(crate) fn buffer_ref(&mut self) -> Result<&'a [u8], DecodeError> {
        match self.len()? {
            Some(n) => self.take(n, "length past the end"),
            None => Ok(&[]),
        }
    }

    /// A `buffer`; null reads as empty.
    pub(crate) fn buffer(&mut self) -> Result<Vec<u8>, DecodeError> {
        self.buffer_ref().map(<[u8]>::to_vec)
    }

    /// A `ustring`; null reads as empty.
    pub(crate) fn string(&mut self) -> Result<String, DecodeError> {
        let at = self.pos;
        let bytes = self.buffer_ref()?;
        match std::str::from_utf8(bytes) {
            Ok(text) => Ok(text.to_owned()),
            Err(_) => Err(DecodeError {
                what: "string is not utf-8",
                offset: at,
            }),
        }
    }

    /// A `ustring` holding a path the server sent, with `chroot` taken off.
    pub(crate) fn path(&mut self, chroot: &str) -> Result<String, DecodeError> {
        self.string().map(|path| chroot::strip(chroot, path))
    }

    /// A `vector` of elements that each take at least `min_len` bytes; null
    /// reads as empty. A count the bytes left cannot hold is refused before
    /// anything is allocated.
    fn vector<T>(
        &mut self,
        min_len: usize,
        mut element: impl FnMut(&mut Self) -> Result<T, DecodeError>,
    ) -> Result<Vec<T>, DecodeError> {
        let at = self.pos;
        let fail = |what| DecodeError { what, offset: at };
        let count = match self.i32()? {
            -1 => return Ok(Vec::new()),
            n => usize::try_from(n).map_err(|_| fail("negative count"))?,
        };
        if count > self.remaining() / min_len.max(1) {
            return Err(fail("count past the end"));
        }
        let mut out = Vec::with_capacity(count);
        for _ in 0..count {
            out.push(element(self)?);
        }
        Ok(out)
    }

    /// A `vector<ustring>`.
    pub(crate) fn strings(&mut self) -> Result<Vec<String>, DecodeError> {
        self.vector(MIN_STRING_LEN, Reader::string)
    }

    /// A `vector<ACL>`.
    pub(crate) fn acls(&mut self) -> Result<Vec<Acl>, DecodeError> {
        self.vector(MIN_ACL_LEN, |r| {
            let perms = Perms::from_bits(r.i32()?);
            let scheme = r.string()?;
            let id = r.string()?;
            Ok(Acl::new(perms, scheme, id))
        })
    }

    /// A `Stat` record, in ZooKeeper's field order (`pzxid` comes last).
    pub(crate) fn stat(&mut self) -> Result<Stat, DecodeError> {
        if self.remaining() < STAT_LEN {
            return Err(self.error("truncated stat"));
        }
        Ok(Stat {
            czxid: self.i64()?,
            mzxid: self.i64()?,
            ctime: self.i64()?,
            mtime: self.i64()?,
            version: self.i32()?,
            cversion: self.i32()?,
            aversion: self.i32()?,
            ephemeral_owner: self.i64()?,
            data_length: self.i32()?,
            num_children: self.i32()?,
            pzxid: self.i64()?,
        })
    }
}

#[cfg(test)]
pub(crate) mod tests;
