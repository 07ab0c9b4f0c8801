//! Whether the session owning an ephemeral node still exists, and whether
//! a client is connected for it, from the replies of ZooKeeper's
//! four-letter words (`dump`, `cons`, `srvr`, `mntr`).
//!
//! An ephemeral node normally goes with its session, in the transaction
//! that closes it; but the session tracker drops an expiring session
//! before that transaction is applied, and a node read just before its
//! session expired is still shown. The leader's `dump` lists every session
//! it tracks: an owner missing from a `dump` taken after the node was read
//! no longer exists ([`SessionState::Gone`]). A session that exists but
//! that no server has a connection for (`cons` of every serving server) is
//! [`SessionState::Disconnected`]: its client died or is between servers,
//! and the server expires it at its timeout unless the client comes back.
//!
//! The servers must allow these words (`4lw.commands.whitelist`; by
//! default only `srvr` is): otherwise the state is
//! [`SessionState::Unknown`].

use std::collections::HashSet;
use std::fmt;

/// What is known of the session owning an ephemeral node.
///
/// ```
/// assert_eq!(zk_queue::inspect::SessionState::Gone.to_string(), "gone");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SessionState {
    /// A server has a connection for it.
    Connected,
    /// It exists (or the leader's sessions are not known) but no server has
    /// a connection for it.
    Disconnected,
    /// The leader does not track it: it expired or closed.
    Gone,
    /// The servers did not tell.
    Unknown,
}

impl fmt::Display for SessionState {
    /// The state in lowercase.
    ///
    /// ```
    /// assert_eq!(zk_queue::inspect::SessionState::Connected.to_string(), "connected");
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SessionState::Connected => "connected",
            SessionState::Disconnected => "disconnected",
            SessionState::Gone => "gone",
            SessionState::Unknown => "unknown",
        })
    }
}

/// What the servers told of their sessions.
///
/// ```
/// use zk_queue::inspect::{SessionState, SessionSurvey};
///
/// let survey = SessionSurvey {
///     live: Some([1, 2].into_iter().collect()),
///     connected: Some([1].into_iter().collect()),
/// };
/// assert_eq!(survey.state(1), Some(SessionState::Connected));
/// assert_eq!(survey.state(2), Some(SessionState::Disconnected));
/// assert_eq!(survey.state(3), Some(SessionState::Gone));
/// assert_eq!(survey.state(0), None); // a persistent node has no owner
/// assert_eq!(SessionSurvey::default().state(1), Some(SessionState::Unknown));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SessionSurvey {
    /// Every session the leader (or the standalone server) tracks, asked
    /// after the nodes were read; `None` if it did not tell.
    pub live: Option<HashSet<i64>>,
    /// The sessions some serving server has a connection for, from every
    /// serving server; `None` if one did not tell.
    pub connected: Option<HashSet<i64>>,
}

impl SessionSurvey {
    /// The state of session `owner`; `None` for 0 (a persistent node).
    ///
    /// ```
    /// use zk_queue::inspect::{SessionState, SessionSurvey};
    /// let survey = SessionSurvey { live: None, connected: Some(Default::default()) };
    /// assert_eq!(survey.state(7), Some(SessionState::Disconnected));
    /// ```
    pub fn state(&self, owner: i64) -> Option<SessionState> {
        if owner == 0 {
            return None;
        }
        Some(match (&self.live, &self.connected) {
            (Some(live), _) if !live.contains(&owner) => SessionState::Gone,
            (_, Some(connected)) if connected.contains(&owner) => SessionState::Connected,
            (_, Some(_)) => SessionState::Disconnected,
            (_, None) => SessionState::Unknown,
        })
    }
}

/// The sessions a `dump` reply's session tracker lists, or `None` if the
/// reply is not a dump (the word is not allowed, or the server does not
/// serve).
///
/// ```
/// let reply = "SessionTracker dump:\nSession Sets (1)/(1):\n1 expire at Thu Nov 26 18:00:00 UTC 2026:\n\t0x1000a2b3c4d0000\nephemeral nodes dump:\nSessions with Ephemerals (0):\n";
/// let live = zk_queue::inspect::sessions_in_dump(reply).unwrap();
/// assert!(live.contains(&0x1000a2b3c4d0000));
/// assert_eq!(zk_queue::inspect::sessions_in_dump("dump is not executed because it is not in the whitelist."), None);
/// ```
pub fn sessions_in_dump(reply: &str) -> Option<HashSet<i64>> {
    let (_, rest) = reply.split_once("SessionTracker dump:")?;
    let tracker = rest.split("ephemeral nodes dump:").next().unwrap_or(rest);
    Some(
        tracker
            .lines()
            .filter_map(|line| line.split_whitespace().next())
            .filter_map(hex_session)
            .collect(),
    )
}

/// The sessions a `cons` reply has connections for, or `None` if the reply
/// is not one.
///
/// ```
/// let reply = " /127.0.0.1:50414[1](queued=0,recved=3,sent=3,sid=0x10000f5a5b10001,lop=PING,est=1,to=30000)\n /127.0.0.1:50420[0](queued=0,recved=1,sent=0)\n\n";
/// let connected = zk_queue::inspect::sessions_in_cons(reply).unwrap();
/// assert_eq!(connected.into_iter().collect::<Vec<_>>(), [0x10000f5a5b10001]);
/// assert_eq!(zk_queue::inspect::sessions_in_cons("cons is not executed because it is not in the whitelist."), None);
/// ```
pub fn sessions_in_cons(reply: &str) -> Option<HashSet<i64>> {
    let connections: Vec<&str> = reply.lines().filter(|l| l.trim_start().starts_with('/')).collect();
    if connections.is_empty() {
        // Every reply lists at least the connection asking.
        return None;
    }
    Some(
        connections
            .iter()
            .filter_map(|line| {
                let (_, after) = line.split_once("sid=")?;
                hex_session(after.split([',', ')']).next()?)
            })
            .collect(),
    )
}

/// The mode a `srvr` reply states: `standalone`, `leader`, `follower`,
/// `observer`, ...
///
/// ```
/// assert_eq!(zk_queue::inspect::server_mode("Zookeeper version: 3.8.0\nMode: leader\nNode count: 5\n"), Some("leader"));
/// assert_eq!(zk_queue::inspect::server_mode("This ZooKeeper instance is not currently serving requests"), None);
/// ```
pub fn server_mode(reply: &str) -> Option<&str> {
    reply.lines().find_map(|l| l.strip_prefix("Mode:")).map(str::trim)
}

/// How many learners a leader's `mntr` reply says are connected
/// (`zk_learners`, or `zk_followers` on older servers).
///
/// ```
/// assert_eq!(zk_queue::inspect::learners("zk_server_state\tleader\nzk_learners\t2\n"), Some(2));
/// assert_eq!(zk_queue::inspect::learners("zk_server_state\tfollower\n"), None);
/// ```
pub fn learners(reply: &str) -> Option<usize> {
    reply.lines().find_map(|line| {
        let (key, value) = line.split_once(char::is_whitespace)?;
        matches!(key, "zk_learners" | "zk_followers")
            .then(|| value.trim().parse().ok())
            .flatten()
    })
}

/// A session id written `0x<hex>`.
fn hex_session(text: &str) -> Option<i64> {
    let hex = text.strip_prefix("0x")?;
    u64::from_str_radix(hex, 16).ok().map(|id| id as i64)
}
