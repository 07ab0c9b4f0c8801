//! The error code a reply header (or a multi's error result) carries.

use std::fmt;

/// An error code of the protocol (`KeeperException.Code`): 0 for success,
/// negative otherwise. Codes this crate has no name for are kept as they are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Code(pub(crate) i32);

impl Code {
    /// Success.
    pub(crate) const OK: Code = Code(0);
    /// A server-side failure of unknown kind.
    pub(crate) const SYSTEM_ERROR: Code = Code(-1);
    /// The server found its state inconsistent.
    pub(crate) const RUNTIME_INCONSISTENCY: Code = Code(-2);
    /// The server found its data inconsistent.
    pub(crate) const DATA_INCONSISTENCY: Code = Code(-3);
    /// The connection to the server was lost.
    pub(crate) const CONNECTION_LOSS: Code = Code(-4);
    /// The server could not read or write a record.
    pub(crate) const MARSHALLING_ERROR: Code = Code(-5);
    /// The server does not implement the operation.
    pub(crate) const UNIMPLEMENTED: Code = Code(-6);
    /// The operation timed out.
    pub(crate) const OPERATION_TIMEOUT: Code = Code(-7);
    /// The request's arguments are invalid (a TTL out of range, a TTL node
    /// on a server without extended types, ...).
    pub(crate) const BAD_ARGUMENTS: Code = Code(-8);
    /// The session is unknown to the server.
    pub(crate) const UNKNOWN_SESSION: Code = Code(-12);
    /// A reconfiguration has no quorum in the new configuration.
    pub(crate) const NEW_CONFIG_NO_QUORUM: Code = Code(-13);
    /// Another reconfiguration is in progress.
    pub(crate) const RECONFIG_IN_PROGRESS: Code = Code(-14);
    /// An API misuse (the start of the API error range).
    pub(crate) const API_ERROR: Code = Code(-100);
    /// The node does not exist.
    pub(crate) const NO_NODE: Code = Code(-101);
    /// The session lacks the permission.
    pub(crate) const NO_AUTH: Code = Code(-102);
    /// The node's version is not the expected one.
    pub(crate) const BAD_VERSION: Code = Code(-103);
    /// Ephemeral nodes may not have children.
    pub(crate) const NO_CHILDREN_FOR_EPHEMERALS: Code = Code(-108);
    /// The node already exists.
    pub(crate) const NODE_EXISTS: Code = Code(-110);
    /// The node has children.
    pub(crate) const NOT_EMPTY: Code = Code(-111);
    /// The session expired.
    pub(crate) const SESSION_EXPIRED: Code = Code(-112);
    /// An invalid callback was given.
    pub(crate) const INVALID_CALLBACK: Code = Code(-113);
    /// The ACL is invalid (empty, or an unknown scheme).
    pub(crate) const INVALID_ACL: Code = Code(-114);
    /// Authentication failed.
    pub(crate) const AUTH_FAILED: Code = Code(-115);
    /// The session moved to another server.
    pub(crate) const SESSION_MOVED: Code = Code(-118);
    /// A write was sent to a read-only server.
    pub(crate) const NOT_READ_ONLY: Code = Code(-119);
    /// An ephemeral node was created by a local session.
    pub(crate) const EPHEMERAL_ON_LOCAL_SESSION: Code = Code(-120);
    /// There is no such watch to remove.
    pub(crate) const NO_WATCHER: Code = Code(-121);
    /// The request timed out on the server.
    pub(crate) const REQUEST_TIMEOUT: Code = Code(-122);
    /// Dynamic reconfiguration is disabled.
    pub(crate) const RECONFIG_DISABLED: Code = Code(-123);
    /// The session was closed because it did not authenticate with SASL.
    pub(crate) const SESSION_CLOSED_REQUIRE_SASL_AUTH: Code = Code(-124);
    /// A quota was exceeded.
    pub(crate) const QUOTA_EXCEEDED: Code = Code(-125);
    /// The server throttled the request.
    pub(crate) const THROTTLED: Code = Code(-127);

    /// Whether this is [`Code::OK`].
    pub(crate) fn is_ok(self) -> bool {
        self == Code::OK
    }

    /// The lowercase name of a known code.
    pub(crate) fn name(self) -> Option<&'static str> {
        let name = match self {
            Code::OK => "ok",
            Code::SYSTEM_ERROR => "system error",
            Code::RUNTIME_INCONSISTENCY => "runtime inconsistency",
            Code::DATA_INCONSISTENCY => "data inconsistency",
            Code::CONNECTION_LOSS => "connection loss",
            Code::MARSHALLING_ERROR => "marshalling error",
            Code::UNIMPLEMENTED => "unimplemented",
            Code::OPERATION_TIMEOUT => "operation timeout",
            Code::BAD_ARGUMENTS => "bad arguments",
            Code::UNKNOWN_SESSION => "unknown session",
            Code::NEW_CONFIG_NO_QUORUM => "new config no quorum",
            Code::RECONFIG_IN_PROGRESS => "reconfig in progress",
            Code::API_ERROR => "api error",
            Code::NO_NODE => "no node",
            Code::NO_AUTH => "no auth",
            Code::BAD_VERSION => "bad version",
            Code::NO_CHILDREN_FOR_EPHEMERALS => "no children for ephemerals",
            Code::NODE_EXISTS => "node exists",
            Code::NOT_EMPTY => "not empty",
            Code::SESSION_EXPIRED => "session expired",
            Code::INVALID_CALLBACK => "invalid callback",
            Code::INVALID_ACL => "invalid acl",
            Code::AUTH_FAILED => "auth failed",
            Code::SESSION_MOVED => "session moved",
            Code::NOT_READ_ONLY => "not read only",
            Code::EPHEMERAL_ON_LOCAL_SESSION => "ephemeral on local session",
            Code::NO_WATCHER => "no watcher",
            Code::REQUEST_TIMEOUT => "request timeout",
            Code::RECONFIG_DISABLED => "reconfig disabled",
            Code::SESSION_CLOSED_REQUIRE_SASL_AUTH => "session closed require sasl auth",
            Code::QUOTA_EXCEEDED => "quota exceeded",
            Code::THROTTLED => "throttled",
            _ => return None,
        };
        Some(name)
    }
}

impl fmt::Display for Code {
    /// `no node (-101)` for a known code, `error code -999` otherwise.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "{name} ({})", self.0),
            None => write!(f, "error code {}", self.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_codes_show_their_name_and_number() {
        assert_eq!(Code::NO_NODE.to_string(), "no node (-101)");
        assert_eq!(Code::OK.to_string(), "ok (0)");
        assert_eq!(Code::THROTTLED.to_string(), "throttled (-127)");
        assert_eq!(
            Code::SESSION_CLOSED_REQUIRE_SASL_AUTH.to_string(),
            "session closed require sasl auth (-124)"
        );
    }

    #[test]
    fn unknown_codes_show_the_number() {
        assert_eq!(Code(-999).to_string(), "error code -999");
        assert_eq!(Code(-9).name(), None);
    }

    #[test]
    fn only_zero_is_ok() {
        assert!(Code::OK.is_ok());
        assert!(Code(0).is_ok());
        assert!(!Code::NO_NODE.is_ok());
        assert!(!Code(1).is_ok());
    }

    #[test]
    fn every_named_code_is_lowercase_and_distinct() {
        let names: Vec<&str> = (-200..=0).filter_map(|n| Code(n).name()).collect();
        assert_eq!(names.len(), 32);
        for name in &names {
            assert!(!name.chars().any(char::is_uppercase), "{name}");
        }
        let mut unique = names.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), names.len());
    }
}
