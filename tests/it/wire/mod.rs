//! Every request the client sends, against a real ZooKeeper server, each
//! checked by what the server really did: read back through a second
//! client (a session of its own) wherever that proves more than the
//! writer's own answer.
//!
//! - `create_modes`: each create mode, its returned stat and name, what
//!   the server does with the node (ephemerals, containers and TTL nodes
//!   reaped).
//! - `requests`: delete, exists, get_data, set_data, ACLs, children,
//!   multi, the pipelined batches and closing a session.

mod create_modes;
mod requests;

use std::time::Duration;

use zk_queue::{Stat, ZkClient};

/// The longest wait for a server's reaper.
const WAIT: Duration = Duration::from_secs(30);

/// Asserts that `reader` finds `path` holding `data`, with exactly the stat
/// `returned` by the write that made it, through both `get_data` and
/// `exists`.
fn assert_read_back(reader: &ZkClient, path: &str, data: &[u8], returned: &Stat) {
    let (read, stat) = reader.get_data(path).unwrap_or_else(|e| panic!("reading {path}: {e}"));
    assert_eq!(read, data, "the data of {path}");
    assert_eq!(&stat, returned, "the stat of {path} as read by another client");
    let exists = reader.exists(path).unwrap();
    assert_eq!(exists.as_ref(), Some(returned), "the stat of {path} from exists");
}

/// Asserts that `path` is `prefix` followed by a 10-digit sequence number,
/// and returns that number.
fn sequence_of(path: &str, prefix: &str) -> u32 {
    let digits = path
        .strip_prefix(prefix)
        .unwrap_or_else(|| panic!("{path} does not start with {prefix}"));
    assert!(
        digits.len() == 10 && digits.bytes().all(|b| b.is_ascii_digit()),
        "{path}: the sequence {digits:?} is not 10 digits"
    );
    digits.parse().unwrap()
}
