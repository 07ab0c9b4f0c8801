//! The lease count recorded at a semaphore's path, so that participants
//! that disagree on it are told instead of each trusting its own number
//! (Curator's `InterProcessSemaphoreV2` stores none: a participant that
//! believes in 20 leases beside others that believe in 10 lets up to 20
//! hold).
//!
//! The record is the data of the semaphore's path node, `max_leases=<n>`:
//! Curator creates that node with no data and never reads it, so Curator
//! participants are unaffected (they still trust their own number). The
//! first acquisition of each [`Semaphore`](super::Semaphore) reads it:
//! none yet (no node, or a node with no data), it writes its own (with a
//! version check, so two first participants cannot both write); the same,
//! it goes on; another, the acquisition fails with
//! [`Error::InvalidArgument`] and nothing is created. Data that is not a
//! record (the path holds something else) is left as it is and not
//! checked. The path node is a container, as Curator makes it: once the
//! semaphore is idle the server deletes it, with the record, so a new
//! count takes effect once every participant of the old one is gone.

use std::time::Instant;

use crate::client::{CreateMode, Opts, ZkClient};
use crate::error::{Error, Result};

/// The record's text before the count.
const PREFIX: &str = "max_leases=";

/// The record of `max_leases`.
pub(super) fn record(max_leases: usize) -> Vec<u8> {
    format!("{PREFIX}{max_leases}").into_bytes()
}

/// The count in `data`, if it is a record.
pub(super) fn parse(data: &[u8]) -> Option<usize> {
    std::str::from_utf8(data).ok()?.strip_prefix(PREFIX)?.parse().ok()
}

/// Checks `max_leases` against the count recorded at `path`, recording it
/// if none is.
///
/// # Errors
/// [`Error::InvalidArgument`] if another count is recorded; a connection
/// error by `deadline`.
pub(super) fn check(
    client: &ZkClient,
    path: &str,
    max_leases: usize,
    acl: &[crate::client::Acl],
    deadline: Option<Instant>,
) -> Result<()> {
    let opts = Opts::new().until(deadline);
    loop {
        let (data, stat) = match client.get_data_with(path, opts) {
            Ok(read) => read,
            Err(Error::NoNode { .. }) => {
                let parent = match path.rfind('/') {
                    Some(at) if at > 0 => &path[..at],
                    _ => "/",
                };
                client.ensure_path_with(parent, opts)?;
                let create = opts.mode(CreateMode::Container).acl(acl);
                match client.create_with(path, &record(max_leases), create) {
                    Ok(_) => return Ok(()),
                    Err(Error::NodeExists { .. }) => continue,
                    Err(e) => return Err(e),
                }
            }
            Err(e) => return Err(e),
        };
        if data.is_empty() {
            match client.set_data(path, &record(max_leases), Some(stat.version)) {
                Ok(_) => return Ok(()),
                Err(Error::BadVersion { .. } | Error::NoNode { .. }) => continue,
                Err(e) => return Err(e),
            }
        }
        return match parse(&data) {
            Some(recorded) if recorded != max_leases => Err(Error::InvalidArgument(format!(
                "semaphore {path}: max_leases is {max_leases} here but {recorded} for the participants already at the path"
            ))),
            Some(_) => Ok(()),
            None => {
                log::info!("semaphore {path}: the path's data is no lease count record; not checking the count");
                Ok(())
            }
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_reads_back_and_other_data_is_no_record() {
        assert_eq!(parse(&record(7)), Some(7));
        assert_eq!(parse(b""), None);
        assert_eq!(parse(b"max_leases=x"), None);
        assert_eq!(parse(b"10.0.0.1"), None);
    }
}
