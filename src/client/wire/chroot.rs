//! Paths under a chroot: a client connected with a chroot (`host:2181/app`)
//! sees `/app` as its root. Every path it sends is prefixed with the chroot,
//! and every path the server sends back has it taken off.
//!
//! A chroot is written without a trailing slash (`/app`); the empty string
//! means none.

/// The two pieces whose concatenation is `path` as the server knows it under
/// `chroot`: `/x` under `/app` is `/app/x`, and `/` under `/app` is `/app`.
pub(crate) fn parts<'a>(chroot: &'a str, path: &'a str) -> [&'a str; 2] {
    if !chroot.is_empty() && path == "/" {
        [chroot, ""]
    } else {
        [chroot, path]
    }
}

/// `path` as the server knows it under `chroot`, as one string.
#[cfg(test)]
pub(crate) fn join(chroot: &str, path: &str) -> String {
    parts(chroot, path).concat()
}

/// The client's view of a path the server sent: `/app/x` under `/app` is
/// `/x`, and `/app` is `/`. A path outside the chroot (`/apple`, `/other`) is
/// returned unchanged.
pub(crate) fn strip(chroot: &str, path: String) -> String {
    if chroot.is_empty() {
        return path;
    }
    match path.strip_prefix(chroot) {
        Some("") => "/".to_owned(),
        Some(rest) if rest.starts_with('/') => rest.to_owned(),
        _ => path,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_prefixed_with_the_chroot() {
        assert_eq!(join("/app", "/x"), "/app/x");
        assert_eq!(join("/app", "/x/y"), "/app/x/y");
        assert_eq!(join("/app", "/"), "/app");
        assert_eq!(join("/a/b", "/"), "/a/b");
    }

    #[test]
    fn no_chroot_leaves_paths_alone() {
        assert_eq!(join("", "/"), "/");
        assert_eq!(join("", "/x"), "/x");
        assert_eq!(strip("", "/x".to_owned()), "/x");
        assert_eq!(strip("", "/".to_owned()), "/");
    }

    #[test]
    fn the_chroot_is_taken_off_server_paths() {
        assert_eq!(strip("/app", "/app/x".to_owned()), "/x");
        assert_eq!(strip("/app", "/app".to_owned()), "/");
        assert_eq!(strip("/a/b", "/a/b/c/d".to_owned()), "/c/d");
    }

    #[test]
    fn paths_outside_the_chroot_are_kept() {
        assert_eq!(strip("/app", "/apple".to_owned()), "/apple");
        assert_eq!(strip("/app", "/other/x".to_owned()), "/other/x");
        assert_eq!(strip("/app", "".to_owned()), "");
        assert_eq!(strip("/app", "/".to_owned()), "/");
    }

    #[test]
    fn stripping_undoes_joining() {
        for chroot in ["", "/app", "/a/b"] {
            for path in ["/", "/x", "/x/y", "/app"] {
                assert_eq!(strip(chroot, join(chroot, path)), path, "{chroot} {path}");
            }
        }
    }
}
