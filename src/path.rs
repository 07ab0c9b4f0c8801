//! ZooKeeper node paths: the one validator, applied before any request is
//! sent (the library's calls and the `zkq` tool use it), and joining.
//!
//! ```
//! use zk_queue::path;
//! assert!(path::validate("/jobs/queue-0000000001").is_ok());
//! assert!(path::validate("/jobs/").is_err());
//! assert_eq!(path::join("/jobs", "queue-"), "/jobs/queue-");
//! ```

use crate::error::{Error, Result};

/// Checks that `path` is a valid absolute ZooKeeper node path, following the
/// server's own rules (`PathUtils.validatePath`): it starts with `/`, has no
/// empty, `.` or `..` component, no trailing `/` (except the root itself) and
/// no control or private-use characters (Rust strings cannot hold the
/// surrogates the server also forbids).
///
/// # Errors
/// [`Error::InvalidPath`] naming what is wrong.
///
/// ```
/// use zk_queue::{path, Error};
/// path::validate("/")?;
/// match path::validate("/a//b") {
///     Err(Error::InvalidPath { reason, .. }) => assert_eq!(reason, "path has an empty component ('//')"),
///     other => panic!("{other:?}"),
/// }
/// assert!(path::validate("/a\u{7}b").is_err(), "control characters are refused");
/// # Ok::<(), zk_queue::Error>(())
/// ```
pub fn validate(path: &str) -> Result<()> {
    let invalid = |reason| {
        Err(Error::InvalidPath {
            path: path.to_owned(),
            reason,
        })
    };
    if path.is_empty() {
        return invalid("path is empty");
    }
    if !path.starts_with('/') {
        return invalid("path must start with '/'");
    }
    if path == "/" {
        return Ok(());
    }
    if path.ends_with('/') {
        return invalid("path must not end with '/'");
    }
    for component in path[1..].split('/') {
        match component {
            "" => return invalid("path has an empty component ('//')"),
            "." | ".." => return invalid("path has a relative component ('.' or '..')"),
            _ => {}
        }
    }
    if path.chars().any(forbidden_char) {
        return invalid("path has a control or private-use character");
    }
    Ok(())
}

/// Checks a path under which this crate will create and delete nodes: a valid
/// path that is neither the root nor inside ZooKeeper's reserved `/zookeeper`
/// tree.
pub(crate) fn validate_queue_path(path: &str) -> Result<()> {
    validate(path)?;
    if path == "/" {
        return Err(Error::InvalidPath {
            path: path.to_owned(),
            reason: "the root cannot hold a queue",
        });
    }
    if path == "/zookeeper" || path.starts_with("/zookeeper/") {
        return Err(Error::InvalidPath {
            path: path.to_owned(),
            reason: "the /zookeeper tree is reserved by the server",
        });
    }
    Ok(())
}

/// Whether `path` is `root` or a node under it.
pub(crate) fn is_at_or_under(path: &str, root: &str) -> bool {
    path == root || path.strip_prefix(root).is_some_and(|rest| rest.starts_with('/'))
}

/// The last segment of a path: the node's own name.
pub(crate) fn name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Joins a parent path and a child name; the root's children are `/<name>`.
///
/// ```
/// assert_eq!(zk_queue::path::join("/", "jobs"), "/jobs");
/// assert_eq!(zk_queue::path::join("/app", "jobs"), "/app/jobs");
/// ```
pub fn join(parent: &str, child: &str) -> String {
    if parent == "/" {
        format!("/{child}")
    } else {
        format!("{parent}/{child}")
    }
}

fn forbidden_char(c: char) -> bool {
    matches!(c,
        '\u{0000}'..='\u{001f}'
        | '\u{007f}'..='\u{009f}'
        | '\u{e000}'..='\u{f8ff}'
        | '\u{fff0}'..='\u{ffff}')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(path: &str) -> &'static str {
        match validate_queue_path(path) {
            Err(Error::InvalidPath { reason, .. }) => reason,
            other => panic!("{path:?} gave {other:?}"),
        }
    }

    #[test]
    fn valid_paths_pass() {
        for p in ["/q", "/a/b/c", "/queue-1", "/zoo", "/zookeeperx", "/a.b/..c"] {
            validate_queue_path(p).unwrap_or_else(|e| panic!("{p}: {e}"));
        }
        validate("/").unwrap();
    }

    #[test]
    fn invalid_paths_are_rejected_with_a_reason() {
        assert_eq!(reason(""), "path is empty");
        assert_eq!(reason("q"), "path must start with '/'");
        assert_eq!(reason("/q/"), "path must not end with '/'");
        assert_eq!(reason("/a//b"), "path has an empty component ('//')");
        assert_eq!(reason("/a/./b"), "path has a relative component ('.' or '..')");
        assert_eq!(reason("/a/.."), "path has a relative component ('.' or '..')");
        assert_eq!(reason("/a\u{0}b"), "path has a control or private-use character");
        assert_eq!(reason("/a\u{fff5}"), "path has a control or private-use character");
        assert_eq!(reason("/"), "the root cannot hold a queue");
        assert_eq!(reason("/zookeeper"), "the /zookeeper tree is reserved by the server");
        assert_eq!(
            reason("/zookeeper/quota"),
            "the /zookeeper tree is reserved by the server"
        );
    }

    #[test]
    fn a_path_is_at_or_under_itself_and_its_ancestors_only() {
        assert!(is_at_or_under("/jobs", "/jobs"));
        assert!(is_at_or_under("/jobs/locks", "/jobs"));
        assert!(!is_at_or_under("/jobs-locks", "/jobs"));
        assert!(!is_at_or_under("/job", "/jobs"));
    }

    #[test]
    fn join_handles_the_root() {
        assert_eq!(join("/", "a"), "/a");
        assert_eq!(join("/a", "b"), "/a/b");
    }
}
