//! Transactions: a multi applies all its operations atomically, or none.

use zookeeper_client::{Acls, MultiWriteError, MultiWriteResult};

use super::request::{deadline, Opts};
use super::{Acl, Op, OpResult, ZkClient};
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
    /// use zk_queue::{CreateMode, Op, ZkClient};
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
        let acls = create_acls(ops, default_acl);
        let results = self.run("multi", opts, |c, timeout| {
            deadline(commit(&c, ops, &acls), timeout, "multi").map_err(|e| e.unwrap_or_else(|timeout| timeout))
        })?;
        Ok(results.into_iter().map(op_result).collect())
    }
}

/// Sends `ops` as one multi over `client`, each create with its ACL of
/// `acls` (see [`create_acls`]). A failure names the first failing operation
/// ([`Error::MultiFailed`]), or is the request's own.
pub(super) async fn commit(
    client: &zookeeper_client::Client,
    ops: &[Op],
    acls: &[Vec<zookeeper_client::Acl>],
) -> Result<Vec<MultiWriteResult>> {
    let first = ops.first().map_or("/", Op::path);
    let mut writer = client.new_multi_writer();
    let added: std::result::Result<(), zookeeper_client::Error> =
        ops.iter().zip(acls).try_for_each(|(op, acl)| match op {
            Op::Create { path, data, mode, .. } => {
                writer.add_create(path, data, &mode.to_zk().with_acls(Acls::new(acl)))
            }
            Op::Delete { path, version } => writer.add_delete(path, *version),
            Op::SetData { path, data, version } => writer.add_set_data(path, data, *version),
            Op::Check { path, version } => writer.add_check_version(path, *version),
        });
    added.map_err(|e| Error::from_zk(e, first))?;
    writer.commit().await.map_err(|e| match e {
        MultiWriteError::OperationFailed { index, source } => Error::MultiFailed {
            index,
            source: Box::new(Error::from_zk(source, ops.get(index).map_or(first, Op::path))),
        },
        MultiWriteError::RequestFailed { source } => Error::from_zk(source, first),
    })
}

/// The result of one operation of an applied multi.
fn op_result(r: MultiWriteResult) -> OpResult {
    match r {
        MultiWriteResult::Check => OpResult::Check,
        MultiWriteResult::Delete => OpResult::Delete,
        MultiWriteResult::Create { path, .. } => OpResult::Create { path },
        MultiWriteResult::SetData { stat } => OpResult::SetData { stat: stat.into() },
        // `MultiWriteResult` is non-exhaustive; a new kind is reported as a check.
        _ => OpResult::Check,
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

/// The ACL of each create of `ops` (its own, or `default`), in the client
/// library's form; an empty list for every other operation.
pub(super) fn create_acls(ops: &[Op], default: &[Acl]) -> Vec<Vec<zookeeper_client::Acl>> {
    ops.iter()
        .map(|op| match op {
            Op::Create { acl, .. } => acl.as_deref().unwrap_or(default).iter().map(Acl::to_zk).collect(),
            _ => Vec::new(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::{CreateMode, Perms};
    use super::*;

    #[test]
    fn creates_get_their_own_acl_or_the_default() {
        let mine = Acl::digest("alice", "secret", Perms::ALL);
        let ops = [
            Op::check("/q/lock", 0),
            Op::create("/q/a-", Vec::new(), CreateMode::PersistentSequential),
            Op::create_with_acl(
                "/q/b-",
                Vec::new(),
                CreateMode::PersistentSequential,
                vec![mine.clone()],
            ),
        ];
        let acls = create_acls(&ops, &[Acl::anyone_all()]);
        assert_eq!(acls, [vec![], vec![Acl::anyone_all().to_zk()], vec![mine.to_zk()]]);
    }

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
