//! Watch notifications: a reply with xid [`XID_WATCH_EVENT`](super::XID_WATCH_EVENT)
//! whose body is a `WatcherEvent` (`type`, `state`, `path`).

use super::jute::Reader;
use crate::error::DecodeError;

/// What happened to the watched node (`Watcher.Event.EventType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum EventType {
    /// A change of connection state rather than of a node (-1).
    None,
    /// The node was created (1).
    NodeCreated,
    /// The node was deleted (2).
    NodeDeleted,
    /// The node's data changed (3).
    NodeDataChanged,
    /// The node's children changed (4).
    NodeChildrenChanged,
    /// A data watch was removed (5).
    DataWatchRemoved,
    /// A child watch was removed (6).
    ChildWatchRemoved,
    /// A persistent watch was removed (7).
    PersistentWatchRemoved,
    /// A type this crate does not know.
    Other(i32),
}

impl EventType {
    /// The type numbered `code`.
    pub(crate) fn from_code(code: i32) -> EventType {
        match code {
            -1 => EventType::None,
            1 => EventType::NodeCreated,
            2 => EventType::NodeDeleted,
            3 => EventType::NodeDataChanged,
            4 => EventType::NodeChildrenChanged,
            5 => EventType::DataWatchRemoved,
            6 => EventType::ChildWatchRemoved,
            7 => EventType::PersistentWatchRemoved,
            other => EventType::Other(other),
        }
    }

    /// The type's number.
    #[cfg(test)]
    pub(crate) fn code(self) -> i32 {
        match self {
            EventType::None => -1,
            EventType::NodeCreated => 1,
            EventType::NodeDeleted => 2,
            EventType::NodeDataChanged => 3,
            EventType::NodeChildrenChanged => 4,
            EventType::DataWatchRemoved => 5,
            EventType::ChildWatchRemoved => 6,
            EventType::PersistentWatchRemoved => 7,
            EventType::Other(other) => other,
        }
    }
}

/// One watch notification.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct WatchEvent {
    /// What happened.
    pub(crate) kind: EventType,
    /// The connection state (`Watcher.Event.KeeperState`; 3 is
    /// `SyncConnected`).
    pub(crate) state: i32,
    /// The node, chroot taken off.
    pub(crate) path: String,
}

impl WatchEvent {
    /// The event in a notification's `body` (the bytes after the reply
    /// header), taking `chroot` off its path.
    pub(crate) fn decode(body: &[u8], chroot: &str) -> Result<WatchEvent, DecodeError> {
        let mut r = Reader::new(body);
        let event = WatchEvent {
            kind: EventType::from_code(r.i32()?),
            state: r.i32()?,
            path: r.path(chroot)?,
        };
        r.finish()?;
        Ok(event)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(kind: i32, state: i32, path: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&kind.to_be_bytes());
        out.extend_from_slice(&state.to_be_bytes());
        out.extend_from_slice(&(path.len() as i32).to_be_bytes());
        out.extend_from_slice(path);
        out
    }

    #[test]
    fn an_event_decodes_with_the_chroot_taken_off() {
        #[rustfmt::skip]
        let bytes = [
            0, 0, 0, 4, // type: NodeChildrenChanged
            0, 0, 0, 3, // state: SyncConnected
            0, 0, 0, 11, b'/', b'a', b'p', b'p', b'/', b'j', b'o', b'b', b's', b'/', b'q', // path
        ];
        let event = WatchEvent::decode(&bytes, "/app").expect("decodes");
        assert_eq!(
            event,
            WatchEvent {
                kind: EventType::NodeChildrenChanged,
                state: 3,
                path: "/jobs/q".to_owned(),
            }
        );
        let event = WatchEvent::decode(&bytes, "").expect("decodes");
        assert_eq!(event.path, "/app/jobs/q");
    }

    #[test]
    fn the_chroot_itself_reads_as_root() {
        let event = WatchEvent::decode(&body(2, 3, b"/app"), "/app").expect("decodes");
        assert_eq!((event.kind, event.path.as_str()), (EventType::NodeDeleted, "/"));
    }

    #[test]
    fn a_null_path_reads_as_empty() {
        let mut bytes = body(-1, 3, b"");
        bytes.truncate(8);
        bytes.extend_from_slice(&(-1i32).to_be_bytes());
        let event = WatchEvent::decode(&bytes, "/app").expect("decodes");
        assert_eq!((event.kind, event.path.as_str()), (EventType::None, ""));
    }

    #[test]
    fn every_type_keeps_its_number() {
        for code in -3..10 {
            assert_eq!(EventType::from_code(code).code(), code);
        }
        assert_eq!(EventType::from_code(7), EventType::PersistentWatchRemoved);
        assert_eq!(EventType::from_code(9), EventType::Other(9));
    }

    #[test]
    fn truncated_or_padded_events_are_refused() {
        let bytes = body(1, 3, b"/a/b");
        for cut in 0..bytes.len() {
            assert!(WatchEvent::decode(&bytes[..cut], "").is_err(), "cut at {cut}");
        }
        let mut padded = bytes.clone();
        padded.push(0);
        let e = WatchEvent::decode(&padded, "").expect_err("trailing byte");
        assert_eq!((e.what, e.offset), ("trailing bytes", bytes.len()));
    }
}
