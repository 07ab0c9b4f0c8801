//! The lock path and dead-letter path a queue's consumers record on the
//! queue node, so that tools taking or deleting items (`zkq take`, `zkq
//! purge`, [`RawQueue::recorded_lock_path`](super::RawQueue::recorded_lock_path))
//! find the lock path and leave alone the items those consumers hold, and
//! tools counting dead letters (`zkq stats`,
//! [`RawQueue::recorded_paths`](super::RawQueue::recorded_paths)) find the
//! dead-letter path.
//!
//! The record is the queue node's data in UTF-8: the line
//! `zk-queue lock-path: <path>` if the consumers have a lock path, then the
//! line `zk-queue dead-letter-path: <path>` if they have a dead-letter path,
//! joined by a line feed. A record of a lock path alone is the one line
//! earlier versions wrote and read. Curator and the classic recipe never
//! read a queue node's data, so they are unaffected. A node whose data is
//! something else is left as it is: then nothing is recorded.

use crate::client::ZkClient;
use crate::error::Error;

/// What the lock path's line starts with.
const LOCK_PREFIX: &str = "zk-queue lock-path: ";

/// What the dead-letter path's line starts with.
const DEAD_LETTER_PREFIX: &str = "zk-queue dead-letter-path: ";

/// The paths a queue's consumers recorded on the queue node
/// ([`RawQueue::recorded_paths`](crate::admin::RawQueue::recorded_paths)).
///
/// ```
/// use zk_queue::admin::RecordedPaths;
/// let recorded = RecordedPaths::parse(b"zk-queue lock-path: /jobs-locks").unwrap();
/// assert_eq!(recorded.lock_path.as_deref(), Some("/jobs-locks"));
/// assert_eq!(recorded.dead_letter_path, None);
/// assert_eq!(RecordedPaths::parse(b"10.0.0.1"), None);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RecordedPaths {
    /// The lock path of the queue's lock-safe consumers.
    pub lock_path: Option<String>,
    /// Where the queue's consumers move items that cannot be consumed.
    pub dead_letter_path: Option<String>,
}

impl RecordedPaths {
    /// The paths recorded in a queue node's data `data`; `None` if the data
    /// is not such a record (empty, or data of the node's own).
    ///
    /// ```
    /// use zk_queue::admin::RecordedPaths;
    /// let data = b"zk-queue lock-path: /jobs-locks\nzk-queue dead-letter-path: /jobs-dead";
    /// let recorded = RecordedPaths::parse(data).unwrap();
    /// assert_eq!(recorded.dead_letter_path.as_deref(), Some("/jobs-dead"));
    /// assert_eq!(RecordedPaths::parse(b""), None);
    /// ```
    pub fn parse(data: &[u8]) -> Option<RecordedPaths> {
        let text = std::str::from_utf8(data).ok()?;
        let mut recorded = RecordedPaths::default();
        for line in text.split('\n') {
            let (slot, path) = if let Some(path) = line.strip_prefix(LOCK_PREFIX) {
                (&mut recorded.lock_path, path)
            } else if let Some(path) = line.strip_prefix(DEAD_LETTER_PREFIX) {
                (&mut recorded.dead_letter_path, path)
            } else {
                return None;
            };
            crate::path::validate_queue_path(path).ok()?;
            if slot.replace(path.to_owned()).is_some() {
                return None;
            }
        }
        Some(recorded)
    }

    /// The queue node's data recording these paths.
    fn to_data(&self) -> String {
        let lines: Vec<String> = [
            (LOCK_PREFIX, &self.lock_path),
            (DEAD_LETTER_PREFIX, &self.dead_letter_path),
        ]
        .into_iter()
        .filter_map(|(prefix, path)| path.as_ref().map(|path| format!("{prefix}{path}")))
        .collect();
        lines.join("\n")
    }
}

/// Records `paths` on the queue node `queue_path` unless the node holds
/// other data. Best effort: a consumer works the same without it, so a
/// failure is only logged.
pub(crate) fn record(client: &ZkClient, queue_path: &str, paths: &RecordedPaths) {
    let wanted = paths.to_data();
    if wanted.is_empty() {
        return;
    }
    let written = client.get_data(queue_path).and_then(|(data, stat)| {
        if data == wanted.as_bytes() {
            return Ok(());
        }
        let before = RecordedPaths::parse(&data);
        if !data.is_empty() && before.is_none() {
            log::debug!("{queue_path} holds data of its own; its consumers' paths are not recorded there");
            return Ok(());
        }
        if let Some(before) = before {
            log::info!("{queue_path}: the paths recorded for its consumers change from {before:?} to {paths:?}");
        }
        match client.set_data(queue_path, wanted.as_bytes(), Some(stat.version)) {
            // Another consumer wrote it meanwhile: its record stands.
            Err(Error::BadVersion { .. }) => Ok(()),
            other => other.map(drop),
        }
    });
    if let Err(e) = written {
        log::debug!("{queue_path}: could not record its consumers' paths {paths:?}: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lock_path(data: &[u8]) -> Option<String> {
        RecordedPaths::parse(data).and_then(|r| r.lock_path)
    }

    #[test]
    fn a_record_reads_back_and_anything_else_reads_as_none() {
        assert_eq!(
            lock_path(b"zk-queue lock-path: /jobs-locks").as_deref(),
            Some("/jobs-locks")
        );
        assert_eq!(RecordedPaths::parse(b""), None);
        assert_eq!(RecordedPaths::parse(b"10.0.0.1"), None);
        assert_eq!(RecordedPaths::parse(b"zk-queue lock-path: not-a-path"), None);
        assert_eq!(RecordedPaths::parse(b"zk-queue lock-path: /"), None);
        assert_eq!(RecordedPaths::parse(&[0xff, 0xfe]), None);
        assert_eq!(
            RecordedPaths::parse(b"zk-queue lock-path: /a\nzk-queue lock-path: /b"),
            None,
            "one path of each"
        );
        assert_eq!(RecordedPaths::parse(b"zk-queue lock-path: /a\nsomething else"), None);
    }

    #[test]
    fn both_paths_are_written_and_read_back_and_a_lock_path_alone_is_the_one_line_of_before() {
        let both = RecordedPaths {
            lock_path: Some("/jobs-locks".to_owned()),
            dead_letter_path: Some("/jobs-dead".to_owned()),
        };
        assert_eq!(RecordedPaths::parse(both.to_data().as_bytes()), Some(both));
        let locks = RecordedPaths {
            lock_path: Some("/jobs-locks".to_owned()),
            dead_letter_path: None,
        };
        assert_eq!(locks.to_data(), "zk-queue lock-path: /jobs-locks");
        let dead = RecordedPaths {
            lock_path: None,
            dead_letter_path: Some("/jobs-dead".to_owned()),
        };
        assert_eq!(RecordedPaths::parse(dead.to_data().as_bytes()), Some(dead));
        assert_eq!(RecordedPaths::default().to_data(), "");
    }
}
