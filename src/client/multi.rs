//! Transactions: a multi applies all its operations atomically, or none.

use super::ops::unexpected;
use super::request::Opts;
use super::wire::{Code, MultiResult, Reply, Request};
use super::{Op, OpResult, ZkClient};
use crate::error::{Error, Result};
use crate::path;

impl ZkClient {
    /// Applies all operations atomically, or none.
    ///
    /// # Errors
    /// [`Error::MultiFailed`] names the first failing operation and why;
    /// [`Error::ItemTooLarge`] if the whole request exceeds the packet limit.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// use zk_queue::{ZkClient, client::{CreateMode, Op}};
    /// let client = ZkClient::connect("127.0.0.1:2181")?;
    /// client.multi(&[
    ///     Op::delete("/jobs/job-0000000001", None),
    ///     Op::create("/jobs/job-", b"again".to_vec(), CreateMode::PersistentSequential),
    /// ])?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn multi(&self, ops: &[Op]) -> Result<Vec<OpResult>> {
        self.multi_with(ops, Opts::new())
    }

    /// [`multi`](Self::multi) as `opts` say; fenced to a session, it is
    /// never retried in a newer one (see [`Opts::fenced`]).
    pub(crate) fn multi_with(&self, ops: &[Op], opts: Opts<'_>) -> Result<Vec<OpResult>> {
        let default_acl = self.default_acl();
        ops.iter().try_for_each(check_op)?;
        self.check_multi_size(ops, default_acl)?;
        let first = ops.first().map_or("/", Op::path);
        let request = || (Request::Multi { ops, default_acl }, None);
        self.call("multi", first, opts, request, |reply| results(reply, ops))
    }
}

/// The results of an applied multi of `ops`, or the error of its first
/// failing operation ([`Error::MultiFailed`]).
pub(super) fn results(reply: Reply, ops: &[Op]) -> Result<Vec<OpResult>> {
    Ok(applied(reply, ops)?.into_iter().map(op_result).collect())
}

/// The results of an applied multi of `ops` as the server sent them (the
/// creates with their new nodes' stats), or the error of its first failing
/// operation ([`Error::MultiFailed`]).
pub(super) fn applied(reply: Reply, ops: &[Op]) -> Result<Vec<MultiResult>> {
    let Reply::Multi(results) = reply else {
        return Err(unexpected(reply, ops.first().map_or("/", Op::path)));
    };
    let failure = results.iter().enumerate().find_map(|(index, result)| match result {
        MultiResult::Error(code) if *code != Code::OK && *code != Code::RUNTIME_INCONSISTENCY => Some((index, *code)),
        _ => None,
    });
    let failure = failure.or_else(|| {
        // Not applied, yet no operation names why: the first one stands for it.
        results
            .iter()
            .any(|r| matches!(r, MultiResult::Error(_)))
            .then_some((0, Code::RUNTIME_INCONSISTENCY))
    });
    if let Some((index, code)) = failure {
        let path = ops.get(index).map_or("/", Op::path);
        return Err(Error::MultiFailed {
            index,
            source: Box::new(Error::from_code(code, path)),
        });
    }
    Ok(results)
}

/// The result of one operation of an applied multi.
fn op_result(r: MultiResult) -> OpResult {
    match r {
        MultiResult::Created { path, .. } => OpResult::Create { path },
        MultiResult::Deleted => OpResult::Delete,
        MultiResult::SetData(stat) => OpResult::SetData { stat },
        MultiResult::Checked | MultiResult::Error(_) => OpResult::Check,
    }
}

/// Refuses, before sending, an operation with an invalid path or a create
/// with an empty ACL.
pub(super) fn check_op(op: &Op) -> Result<()> {
    path::validate(op.path())?;
    match op {
        Op::Create { acl: Some(acl), .. } if acl.is_empty() => {
            Err(Error::InvalidArgument("ACL must not be empty".into()))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::super::CreateMode;
    use super::*;

    #[test]
    fn a_create_with_an_empty_acl_is_refused_before_sending() {
        let empty = Op::create_with_acl("/q/a-", Vec::new(), CreateMode::PersistentSequential, Vec::new());
        assert!(matches!(check_op(&empty), Err(Error::InvalidArgument(m)) if m == "ACL must not be empty"));
        assert!(check_op(&Op::create("/q/a-", Vec::new(), CreateMode::Persistent)).is_ok());
        assert!(matches!(
            check_op(&Op::delete("q", None)),
            Err(Error::InvalidPath { .. })
        ));
    }
}

#[cfg(test)]
mod result_tests {
    use super::*;

    #[test]
    fn a_failed_multi_names_its_first_failing_operation() {
        let ops = [
            Op::check("/q/lock", 0),
            Op::delete("/q/item", None),
            Op::delete("/q/b", None),
        ];
        let reply = Reply::Multi(vec![
            MultiResult::Error(Code::OK),
            MultiResult::Error(Code::NO_NODE),
            MultiResult::Error(Code::RUNTIME_INCONSISTENCY),
        ]);
        match results(reply, &ops) {
            Err(Error::MultiFailed { index: 1, source }) => {
                assert!(matches!(*source, Error::NoNode { ref path } if path == "/q/item"))
            }
            other => panic!("{other:?}"),
        }
        let applied = Reply::Multi(vec![MultiResult::Checked, MultiResult::Deleted, MultiResult::Deleted]);
        assert_eq!(
            results(applied, &ops).unwrap(),
            [OpResult::Check, OpResult::Delete, OpResult::Delete]
        );
    }
}
