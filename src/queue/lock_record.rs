//! The lock path a queue's lock-safe consumers record on the queue node, so
//! that tools taking or deleting items (`zkq take`, `zkq purge`,
//! [`RawQueue::recorded_lock_path`](super::RawQueue::recorded_lock_path))
//! find it and leave alone the items those consumers hold.
//!
//! The record is the queue node's data, `zk-queue lock-path: <path>` in
//! UTF-8. Curator and the classic recipe never read a queue node's data, so
//! they are unaffected. A node whose data is something else is left as it
//! is: then nothing is recorded.

use crate::client::ZkClient;
use crate::error::Error;

/// What the record starts with.
const PREFIX: &str = "zk-queue lock-path: ";

/// Records `lock_path` on the queue node `queue_path` unless the node holds
/// other data. Best effort: a consumer works the same without it, so a
/// failure is only logged.
pub(crate) fn record(client: &ZkClient, queue_path: &str, lock_path: &str) {
    let wanted = format!("{PREFIX}{lock_path}");
    let written = client.get_data(queue_path).and_then(|(data, stat)| {
        if data == wanted.as_bytes() {
            return Ok(());
        }
        if !data.is_empty() && parse(&data).is_none() {
            log::debug!("{queue_path} holds data of its own; its consumers' lock path is not recorded there");
            return Ok(());
        }
        if let Some(before) = parse(&data) {
            log::info!("{queue_path}: the lock path recorded for its consumers changes from {before} to {lock_path}");
        }
        match client.set_data(queue_path, wanted.as_bytes(), Some(stat.version)) {
            // Another consumer wrote it meanwhile: its record stands.
            Err(Error::BadVersion { .. }) => Ok(()),
            other => other.map(drop),
        }
    });
    if let Err(e) = written {
        log::debug!("{queue_path}: could not record its consumers' lock path {lock_path}: {e}");
    }
}

/// The lock path recorded on a queue node with data `data`, if it holds one.
pub(crate) fn parse(data: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(data).ok()?;
    let path = text.strip_prefix(PREFIX)?;
    crate::path::validate_queue_path(path).ok()?;
    Some(path.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_reads_back_and_anything_else_reads_as_none() {
        assert_eq!(
            parse(b"zk-queue lock-path: /jobs-locks").as_deref(),
            Some("/jobs-locks")
        );
        assert_eq!(parse(b""), None);
        assert_eq!(parse(b"10.0.0.1"), None);
        assert_eq!(parse(b"zk-queue lock-path: not-a-path"), None);
        assert_eq!(parse(b"zk-queue lock-path: /"), None);
        assert_eq!(parse(&[0xff, 0xfe]), None);
    }
}
