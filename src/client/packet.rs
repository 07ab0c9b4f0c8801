//! Packet sizes, checked before sending: a request larger than the server
//! accepts (`jute.maxbuffer`) would cost the connection, so it is refused
//! with [`Error::ItemTooLarge`] instead.

use std::ops::Range;

use super::{Acl, Op, ZkClient};
use crate::error::{Error, Result};

/// Bytes of a request besides its fields: length prefix is not counted by the
/// server, but the request header (xid, type) is.
pub(super) const REQUEST_HEADER: usize = 8;
/// A multi's per-operation header (type, done flag, error code).
const MULTI_HEADER: usize = 9;

impl ZkClient {
    /// Refuses, before sending, a create of `data` bytes at `path` with `acl`
    /// that the server would not accept.
    pub(crate) fn check_create_size(&self, path: &str, data: usize, acl: &[Acl]) -> Result<()> {
        self.check_packet(create_size(path, 0, acl), data)
    }

    /// Refuses, before sending, a multi of `ops` (creates without an ACL of
    /// their own get `default_acl`) that the server would not accept.
    pub(super) fn check_multi_size(&self, ops: &[Op], default_acl: &[Acl]) -> Result<()> {
        let overhead = REQUEST_HEADER + MULTI_HEADER + ops.iter().map(|op| op_overhead(op, default_acl)).sum::<usize>();
        self.check_packet(overhead, ops.iter().map(op_data).sum())
    }

    /// Splits `ops` into consecutive runs for multis of at most `max_ops`
    /// operations each that the server accepts; an operation too large to
    /// share a multi runs alone (a run of one is best sent on its own).
    pub(crate) fn multi_chunks(&self, ops: &[Op], max_ops: usize) -> Vec<Range<usize>> {
        multi_chunks(ops, max_ops, self.max_packet_size(), self.default_acl())
    }

    /// Refuses a request of `overhead` bytes plus `data` bytes of data that the
    /// server would not accept.
    pub(super) fn check_packet(&self, overhead: usize, data: usize) -> Result<()> {
        let max = self.max_packet_size();
        if overhead + data > max {
            return Err(Error::ItemTooLarge {
                size: data,
                limit: max.saturating_sub(overhead),
            });
        }
        Ok(())
    }
}

/// Consecutive runs of `ops` of at most `max_ops` operations whose multi
/// fits `max_packet` bytes; an operation too large to share one runs alone.
fn multi_chunks(ops: &[Op], max_ops: usize, max_packet: usize, default_acl: &[Acl]) -> Vec<Range<usize>> {
    let mut chunks = Vec::new();
    let (mut start, mut size) = (0, REQUEST_HEADER + MULTI_HEADER);
    for (i, op) in ops.iter().enumerate() {
        let op_size = op_overhead(op, default_acl) + op_data(op);
        if i > start && (i - start >= max_ops.max(1) || size + op_size > max_packet) {
            chunks.push(start..i);
            (start, size) = (i, REQUEST_HEADER + MULTI_HEADER);
        }
        size += op_size;
    }
    if start < ops.len() {
        chunks.push(start..ops.len());
    }
    chunks
}

/// Bytes of `op` within a multi, besides its data.
fn op_overhead(op: &Op, default_acl: &[Acl]) -> usize {
    MULTI_HEADER
        + match op {
            Op::Create { path, acl, .. } => {
                create_size(path, 0, acl.as_deref().unwrap_or(default_acl)) - REQUEST_HEADER
            }
            Op::Delete { path, .. } | Op::Check { path, .. } => string_size(path) + 4,
            Op::SetData { path, .. } => string_size(path) + 4 + 4,
        }
}

/// Bytes of data `op` carries.
fn op_data(op: &Op) -> usize {
    match op {
        Op::Create { data, .. } | Op::SetData { data, .. } => data.len(),
        Op::Delete { .. } | Op::Check { .. } => 0,
    }
}

/// Serialized size of a jute string.
pub(super) fn string_size(s: &str) -> usize {
    4 + s.len()
}

/// Serialized size of a create request with `data` bytes of data.
pub(super) fn create_size(path: &str, data: usize, acl: &[Acl]) -> usize {
    let acl_size: usize = acl
        .iter()
        .map(|a| 4 + string_size(a.scheme()) + string_size(a.id()))
        .sum();
    REQUEST_HEADER + string_size(path) + 4 + data + 4 + acl_size + 4
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_size_counts_every_field() {
        // header 8 + path (4 + 2) + data (4 + 3) + acl vector (4 + 4 + (4 + 5) + (4 + 6)) + flags 4
        assert_eq!(
            create_size("/q", 3, &[Acl::anyone_all()]),
            8 + 6 + 7 + 4 + 4 + 9 + 10 + 4
        );
    }

    fn creates(sizes: &[usize]) -> Vec<Op> {
        sizes
            .iter()
            .map(|&n| Op::create("/q/item-", vec![0; n], super::super::CreateMode::PersistentSequential))
            .collect()
    }

    #[test]
    fn multi_chunks_hold_at_most_max_ops_in_order() {
        let ops = creates(&[10; 130]);
        let chunks = multi_chunks(&ops, 64, 1 << 20, &[Acl::anyone_all()]);
        assert_eq!(chunks, [0..64, 64..128, 128..130]);
    }

    #[test]
    fn multi_chunks_fit_the_packet_and_an_op_too_large_to_share_runs_alone() {
        let acl = [Acl::anyone_all()];
        let ops = creates(&[400, 400, 400, 2_000, 100, 100]);
        let max = 1_000;
        let chunks = multi_chunks(&ops, 64, max, &acl);
        assert_eq!(chunks, [0..2, 2..3, 3..4, 4..6]);
        for chunk in chunks.iter().filter(|c| c.len() > 1) {
            let ops = &ops[chunk.clone()];
            let size: usize =
                REQUEST_HEADER + MULTI_HEADER + ops.iter().map(|op| op_overhead(op, &acl) + op_data(op)).sum::<usize>();
            assert!(size <= max, "{chunk:?}: {size} bytes");
        }
    }
}
