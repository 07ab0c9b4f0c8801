//! Many creates or deletes written as multis: one transaction per run of
//! nodes, the runs pipelined, each node keeping its own result.
//!
//! A server commits a multi as one transaction, so a run of 64 writes costs
//! it about what one write does. A multi is all or nothing, though: when one
//! of its writes fails, none is applied. The failing write is named in the
//! reply, so it gets its error and the others are sent again without it;
//! an error that every write of the run would meet as well (a missing
//! parent, say) fails them all at once.

use std::ops::Range;

use super::multi::applied;
use super::wire::{MultiResult, Request};
use super::{BatchResults, Op, Opts, Stat, ZkClient};
use crate::error::{Error, Result};
use crate::path;

/// The most writes in one multi: past it, a server commits no faster.
pub(crate) const MULTI_OPS: usize = 64;

/// Rounds of deletes in which another consumer took a node first (or of
/// creates in which another consumer's node stood in the way) before the
/// rest go out as single requests: under heavy competition, every multi of a
/// round could fail for one node.
const CONTESTED_ROUNDS: usize = 2;

/// Creates written in multis: each node's result and the multi that held it.
pub(crate) struct Created {
    /// The created node's path, or why it was not (or may not have been) created.
    pub(crate) results: BatchResults<String>,
    /// Each created node's stat, where the server sent one: for a container
    /// or TTL create only. A server reads every other create of a multi as
    /// a plain create (a `create2` too) and answers it without a stat.
    pub(crate) stats: Vec<Option<Stat>>,
    /// The multi each node was last sent in: the nodes of one multi were
    /// all created or none was, so where one's outcome is unknown (a lost
    /// reply), finding another settles it. `None` for a node sent alone.
    pub(crate) multi: Vec<Option<usize>>,
}

/// How one multi ended.
enum Outcome {
    /// Applied: each operation's result.
    Applied(Vec<MultiResult>),
    /// Not applied, because operation `index` failed with `error`.
    Failed { index: usize, error: Error },
    /// Not applied, or its outcome is unknown (a lost reply): `error`.
    Whole(Error),
}

impl ZkClient {
    /// Creates `nodes` (each a path, or a prefix for sequential modes, and
    /// its data) with the mode and ACL of `opts`, in multis of at most
    /// [`MULTI_OPS`] that fit a packet, pipelined, in order. A node too large
    /// to share a multi is created alone, after the multis before it were
    /// answered, so the order holds. Per node, the created path or its
    /// error; a node whose multi's reply was lost fails with that
    /// (retryable) error, as all of that multi's do. A node that exists
    /// already fails alone ([`Error::NodeExists`]) and the others of its
    /// multi are sent again without it; after [`CONTESTED_ROUNDS`] such
    /// rounds, the rest go out as single creates.
    ///
    /// # Errors
    /// The outer `Err` only when nothing could be sent ([`Error::Closed`]).
    pub(crate) fn create_in_multis_with(&self, nodes: &[(String, Vec<u8>)], opts: Opts<'_>) -> Result<Created> {
        let (mode, acl) = (opts.create_mode(), opts.acl_or(self.default_acl()));
        let mut results: Vec<Option<Result<String>>> = nodes
            .iter()
            .map(|(p, data)| {
                let checked = path::validate(p).and_then(|()| self.check_create_size(p, data.len(), acl));
                checked.err().map(Err)
            })
            .collect();
        let mut multi = vec![None; nodes.len()];
        let mut stats = vec![None; nodes.len()];
        let mut sent = 0;
        let mut pending: Vec<usize> = (0..nodes.len()).filter(|&i| results[i].is_none()).collect();
        let mut contested = 0;
        while !pending.is_empty() {
            if contested >= CONTESTED_ROUNDS {
                let alone: Vec<(String, Vec<u8>)> = pending.iter().map(|&i| nodes[i].clone()).collect();
                for (&i, result) in pending.iter().zip(self.create_many_with(&alone, opts)?) {
                    multi[i] = None;
                    (results[i], stats[i]) = split_created(result);
                }
                break;
            }
            let ops: Vec<Op> = pending
                .iter()
                .map(|&i| Op::create_with_acl(nodes[i].0.clone(), nodes[i].1.clone(), mode, acl.to_vec()))
                .collect();
            let chunks = self.multi_chunks(&ops, MULTI_OPS);
            let mut next = Vec::new();
            let mut lost_one = false;
            // Runs of multis, and runs of nodes too large to share one, in
            // order: a run is answered before the next is sent, so the
            // nodes are created in the order given.
            for run in chunks.chunk_by(|a, b| (a.len() == 1) == (b.len() == 1)) {
                if run[0].len() == 1 {
                    let singles: Vec<usize> = run.iter().map(|c| pending[c.start]).collect();
                    let alone: Vec<(String, Vec<u8>)> = singles.iter().map(|&i| nodes[i].clone()).collect();
                    for (&i, result) in singles.iter().zip(self.create_many_with(&alone, opts)?) {
                        multi[i] = None;
                        (results[i], stats[i]) = split_created(result);
                    }
                    continue;
                }
                for (chunk, outcome) in run.iter().zip(self.send_multis(&ops, run, opts)?) {
                    let members = &pending[chunk.clone()];
                    members.iter().for_each(|&i| multi[i] = Some(sent));
                    sent += 1;
                    match outcome {
                        Outcome::Applied(done) => {
                            for (&i, result) in members.iter().zip(done) {
                                results[i] = Some(match result {
                                    MultiResult::Created { path, stat } => {
                                        stats[i] = stat;
                                        Ok(path)
                                    }
                                    _ => Err(Error::InvalidState("a multi create answered with another result")),
                                });
                            }
                        }
                        Outcome::Whole(e) => members.iter().for_each(|&i| results[i] = Some(Err(e.clone()))),
                        Outcome::Failed { index, error } => {
                            lost_one |= matches!(error, Error::NodeExists { .. });
                            let failing = &nodes[members[index]].0;
                            for (k, &i) in members.iter().enumerate() {
                                // A node that exists is that node's own
                                // failure; anything else (no parent, no
                                // permission) is its parent's, met by every
                                // node under it.
                                let shares = !matches!(error, Error::NodeExists { .. })
                                    && parent(&nodes[i].0) == parent(failing);
                                match k == index || shares {
                                    true => results[i] = Some(Err(error.clone())),
                                    false => next.push(i),
                                }
                            }
                        }
                    }
                }
            }
            next.sort_unstable();
            contested += usize::from(lost_one);
            pending = next;
        }
        let results = results
            .into_iter()
            .map(|r| r.unwrap_or(Err(Error::InvalidState("a create was left unsent"))))
            .collect();
        Ok(Created { results, stats, multi })
    }

    /// Deletes many nodes (each only at its version, if given) with multis
    /// of up to 64 deletes, pipelined: a server commits each multi as one
    /// transaction. Per-node results, in order, as
    /// [`delete_many`](Self::delete_many) gives them: a node already gone
    /// (or changed, or with children) fails alone, the others of its multi
    /// are sent again without it; every node of a multi whose reply was lost
    /// fails with that retryable error (all of them were deleted, or none).
    /// After two rounds in which nodes were found gone, the rest go out as
    /// single deletes.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
    /// let (names, _) = client.get_children("/batch")?;
    /// let nodes: Vec<(String, Option<i32>)> = names.iter().map(|n| (format!("/batch/{n}"), None)).collect();
    /// let deleted = client.delete_in_multis(&nodes)?;
    /// println!("{} deleted", deleted.iter().filter(|r| r.is_ok()).count());
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// The outer `Err` only when no request could be sent: [`Error::Closed`].
    pub fn delete_in_multis(&self, nodes: &[(String, Option<i32>)]) -> Result<BatchResults<()>> {
        self.delete_in_multis_with(nodes, Opts::new())
    }

    /// Deletes `nodes` (each only at its version, if given) in multis of at
    /// most [`MULTI_OPS`], pipelined; per node, as
    /// [`delete_many`](Self::delete_many) gives it: `Ok`, a node's own
    /// failure ([`Error::NoNode`], [`Error::BadVersion`],
    /// [`Error::NotEmpty`]), or, for every node of a multi whose reply was
    /// lost, that retryable error (each may or may not have been deleted).
    /// A multi that failed for one node is sent again without it; after
    /// [`CONTESTED_ROUNDS`] such rounds, the rest go out as single deletes.
    ///
    /// # Errors
    /// The outer `Err` only when nothing could be sent ([`Error::Closed`]).
    pub(crate) fn delete_in_multis_with(
        &self,
        nodes: &[(String, Option<i32>)],
        opts: Opts<'_>,
    ) -> Result<BatchResults<()>> {
        let mut results: Vec<Option<Result<()>>> =
            nodes.iter().map(|(p, _)| path::validate(p).err().map(Err)).collect();
        let mut pending: Vec<usize> = (0..nodes.len()).filter(|&i| results[i].is_none()).collect();
        let mut contested = 0;
        while !pending.is_empty() {
            if pending.len() == 1 || contested >= CONTESTED_ROUNDS {
                let singles: Vec<(String, Option<i32>)> = pending.iter().map(|&i| nodes[i].clone()).collect();
                for (&i, result) in pending.iter().zip(self.delete_many_with(&singles, opts)?) {
                    results[i] = Some(result);
                }
                break;
            }
            let ops: Vec<Op> = pending
                .iter()
                .map(|&i| Op::delete(nodes[i].0.clone(), nodes[i].1))
                .collect();
            let chunks = self.multi_chunks(&ops, MULTI_OPS);
            let mut next = Vec::new();
            let mut lost_one = false;
            for (chunk, outcome) in chunks.iter().zip(self.send_multis(&ops, &chunks, opts)?) {
                let members = &pending[chunk.clone()];
                match outcome {
                    Outcome::Applied(_) => members.iter().for_each(|&i| results[i] = Some(Ok(()))),
                    Outcome::Failed { index, error } if is_own_delete_failure(&error) => {
                        lost_one = true;
                        for (k, &i) in members.iter().enumerate() {
                            match k == index {
                                true => results[i] = Some(Err(error.clone())),
                                false => next.push(i),
                            }
                        }
                    }
                    Outcome::Failed { error: e, .. } | Outcome::Whole(e) => {
                        members.iter().for_each(|&i| results[i] = Some(Err(e.clone())));
                    }
                }
            }
            contested += usize::from(lost_one);
            pending = next;
        }
        Ok(results
            .into_iter()
            .map(|r| r.unwrap_or(Err(Error::InvalidState("a delete was left unsent"))))
            .collect())
    }

    /// Sends the multis of `ops` that `chunks` delimit, pipelined, and
    /// tells how each ended.
    fn send_multis(&self, ops: &[Op], chunks: &[Range<usize>], opts: Opts<'_>) -> Result<Vec<Outcome>> {
        if chunks.is_empty() {
            return Ok(Vec::new());
        }
        let default_acl = self.default_acl();
        let multis: Vec<&[Op]> = chunks.iter().map(|c| &ops[c.clone()]).collect();
        let answers = self.batch(
            "multi",
            opts,
            &multis,
            |ops| self.check_multi_size(ops, default_acl),
            |ops| Request::Multi { ops, default_acl },
            |ops, reply| applied(reply, ops),
        )?;
        Ok(answers
            .into_iter()
            .map(|answer| match answer {
                Ok(done) => Outcome::Applied(done),
                Err(Error::MultiFailed { index, source }) => Outcome::Failed { index, error: *source },
                Err(e) => Outcome::Whole(e),
            })
            .collect())
    }
}

/// A single create's result, as a node's result and stat.
fn split_created(result: Result<(String, Stat)>) -> (Option<Result<String>>, Option<Stat>) {
    match result {
        Ok((path, stat)) => (Some(Ok(path)), Some(stat)),
        Err(e) => (Some(Err(e)), None),
    }
}

/// Whether a delete failed for its own node only (gone, changed, or with
/// children), so the other deletes of its multi can go on without it.
fn is_own_delete_failure(e: &Error) -> bool {
    matches!(
        e,
        Error::NoNode { .. } | Error::BadVersion { .. } | Error::NotEmpty { .. }
    )
}

/// The parent part of `path` (everything before its last `/`).
fn parent(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(parent, _)| parent)
}
