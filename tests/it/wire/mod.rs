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
//! - `chroot`: a connect string with a chroot.
//! - `connect_errors`: a failed connect says what happened: nothing
//!   listening, or a server that accepted the connection without a session.
//! - `lost_replies`: a write whose reply is lost, applied once, and the
//!   session going on.
//! - `older_servers`: a client told that its server lacks multi-reads or
//!   persistent watches (ZooKeeper before 3.6), under real queue traffic.
//! - `read_only`: a member cut off from its quorum, serving read-only, is
//!   refused.

mod chroot;
mod connect_errors;
mod create_modes;
mod lost_replies;
mod older_servers;
mod read_only;
mod requests;

use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use zk_queue::{client::Stat, ConnectionState, ZkClient};

/// The longest wait for a state, a watch or a server's reaper.
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

/// The connection states of `client` from now on (the current one, which a
/// listener gets first, is taken out).
fn state_changes(client: &ZkClient) -> Receiver<ConnectionState> {
    let states = client.state_listener();
    states.recv_timeout(WAIT).expect("the current state");
    states
}

/// Waits for `states` ([`state_changes`]) to report the client connected
/// again, and asserts that no state on the way said the session was lost.
fn wait_for_reattach(states: &Receiver<ConnectionState>) {
    let deadline = Instant::now() + WAIT;
    let mut seen = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let state = states
            .recv_timeout(left)
            .unwrap_or_else(|e| panic!("not reconnected within {WAIT:?} ({e}); states {seen:?}"));
        seen.push(state);
        assert_ne!(state, ConnectionState::Lost, "the session was lost: {seen:?}");
        if state == ConnectionState::Reconnected {
            return;
        }
    }
}
