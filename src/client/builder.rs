//! The consuming builder of [`ZkClient`].

use std::time::Duration;

use super::{Acl, Config, ExponentialBackoffRetry, RetryPolicy, ZkClient};
use crate::error::{Error, Result};

/// ZooKeeper's default `jute.maxbuffer`: the largest packet a server accepts.
pub(crate) const DEFAULT_MAX_PACKET_SIZE: usize = 0xfffff;

/// Builds a [`ZkClient`]; made by [`ZkClient::builder`].
///
/// ```no_run
/// # fn main() -> Result<(), zk_queue::Error> {
/// use std::time::Duration;
/// use zk_queue::{ZkClient, client::{Acl, RetryNTimes}};
/// let client = ZkClient::builder("127.0.0.1:2181/my-app")
///     .session_timeout(Duration::from_secs(15))
///     .connection_timeout(Duration::from_secs(5))
///     .request_timeout(Duration::from_secs(5))
///     .retry_policy(RetryNTimes::new(3, Duration::from_millis(200)))
///     .add_auth("digest", b"alice:secret")
///     .default_acl(vec![Acl::creator_all()])
///     .connect()?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
#[must_use = "a builder does nothing until `connect` is called"]
pub struct ZkClientBuilder {
    connect_string: String,
    session_timeout: Duration,
    connection_timeout: Duration,
    request_timeout: Duration,
    retry: Box<dyn RetryPolicy>,
    auth: Vec<(String, Vec<u8>)>,
    default_acl: Vec<Acl>,
    max_packet_size: usize,
    multi_read: bool,
    persistent_watches: bool,
    security: super::transport::Security,
}

impl ZkClientBuilder {
    pub(crate) fn new(connect_string: &str) -> Self {
        ZkClientBuilder {
            connect_string: connect_string.to_owned(),
            session_timeout: Duration::from_secs(30),
            connection_timeout: Duration::from_secs(15),
            request_timeout: Duration::from_secs(15),
            retry: Box::new(
                ExponentialBackoffRetry::new(Duration::from_millis(100), 3).max_sleep(Duration::from_secs(2)),
            ),
            auth: Vec::new(),
            default_acl: vec![Acl::anyone_all()],
            max_packet_size: DEFAULT_MAX_PACKET_SIZE,
            multi_read: true,
            persistent_watches: true,
            security: super::transport::Security::default(),
        }
    }

    /// The session timeout asked of the server (which bounds it between
    /// `2 × tickTime` and `20 × tickTime`). Defaults to 30 seconds.
    ///
    /// ```
    /// use std::time::Duration;
    /// use zk_queue::ZkClient;
    /// let builder = ZkClient::builder("127.0.0.1:2181").session_timeout(Duration::from_secs(10));
    /// # drop(builder);
    /// ```
    pub fn session_timeout(mut self, timeout: Duration) -> Self {
        self.session_timeout = timeout;
        self
    }

    /// How long [`connect`](Self::connect), and each attempt to open a new
    /// session after an expiry, may take; past it connecting fails with
    /// [`Error::Unreachable`](crate::Error::Unreachable), which names each
    /// server and why it could not be used (connection refused, timed out,
    /// name not resolved, no session over an open connection). Defaults to
    /// 15 seconds.
    ///
    /// ```
    /// use std::time::Duration;
    /// use zk_queue::ZkClient;
    /// let builder = ZkClient::builder("127.0.0.1:2181").connection_timeout(Duration::from_secs(5));
    /// # drop(builder);
    /// ```
    pub fn connection_timeout(mut self, timeout: Duration) -> Self {
        self.connection_timeout = timeout;
        self
    }

    /// The longest a call without a deadline of its own blocks on one
    /// request, retries included: past it the call fails with
    /// [`Error::Timeout`] (or the last retryable error). Within it the retry
    /// policy decides whether a failed attempt is tried again; a request made
    /// while the connection is down waits for a reconnection. Calls with a
    /// deadline (`take_timeout`, `put_timeout`, ...) use theirs instead.
    /// Defaults to 15 seconds: with the defaults, a `try_take`, an `exists`
    /// or a `put` into a queue with room returns within 15 seconds whatever
    /// the server does.
    ///
    /// ```
    /// use std::time::Duration;
    /// use zk_queue::ZkClient;
    /// let builder = ZkClient::builder("127.0.0.1:2181").request_timeout(Duration::from_secs(3));
    /// # drop(builder);
    /// ```
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// The policy for retrying requests that failed with a retryable error.
    /// Defaults to [`ExponentialBackoffRetry`] with a 100 ms base, 3 retries and
    /// at most 2 seconds per sleep.
    ///
    /// ```
    /// use std::time::Duration;
    /// use zk_queue::{ZkClient, client::RetryForever};
    /// let builder = ZkClient::builder("127.0.0.1:2181").retry_policy(RetryForever::new(Duration::from_secs(1)));
    /// # drop(builder);
    /// ```
    pub fn retry_policy(mut self, policy: impl RetryPolicy + 'static) -> Self {
        self.retry = Box::new(policy);
        self
    }

    /// Authenticates every session, including those opened after an expiry,
    /// with `scheme` and `auth`. May be called several times (a client may
    /// hold several identities). Defaults to none.
    ///
    /// For `digest`, `auth` is `user:password`; the client then passes ACL
    /// entries made by [`Acl::digest`] with the same user and password.
    /// Authenticating protects nothing by itself: nodes are protected by
    /// their ACLs ([`default_acl`](Self::default_acl),
    /// [`QueueBuilder::acl`](crate::QueueBuilder::acl),
    /// [`SimpleQueueBuilder::acl`](crate::SimpleQueueBuilder::acl)). ZooKeeper
    /// accepts any digest credentials: a wrong password is not refused when
    /// connecting, it only gives an identity that no entry matches, so
    /// requests on protected nodes fail with [`Error::NotAuthorized`].
    ///
    /// ```
    /// use zk_queue::ZkClient;
    /// let builder = ZkClient::builder("127.0.0.1:2181").add_auth("digest", b"alice:secret");
    /// # drop(builder);
    /// ```
    pub fn add_auth(mut self, scheme: &str, auth: &[u8]) -> Self {
        self.auth.push((scheme.to_owned(), auth.to_vec()));
        self
    }

    /// The ACL of nodes this client creates when no other is given.
    /// Defaults to [`Acl::anyone_all`] (ZooKeeper's `OPEN_ACL_UNSAFE`).
    ///
    /// ```
    /// use zk_queue::{ZkClient, client::Acl};
    /// let builder = ZkClient::builder("127.0.0.1:2181")
    ///     .add_auth("digest", b"alice:secret")
    ///     .default_acl(vec![Acl::creator_all()]);
    /// # drop(builder);
    /// ```
    pub fn default_acl(mut self, acl: Vec<Acl>) -> Self {
        self.default_acl = acl;
        self
    }

    /// The largest request packet the servers accept: their `jute.maxbuffer`.
    /// Requests larger than this are refused with [`Error::ItemTooLarge`]
    /// before sending (a server drops the connection of a client that sends
    /// one). Defaults to 1,048,575 bytes, ZooKeeper's default.
    ///
    /// ```
    /// use zk_queue::ZkClient;
    /// let builder = ZkClient::builder("127.0.0.1:2181").max_packet_size(4 * 1024 * 1024);
    /// # drop(builder);
    /// ```
    pub fn max_packet_size(mut self, bytes: usize) -> Self {
        self.max_packet_size = bytes;
        self
    }

    /// Never sends multi-reads (ZooKeeper 3.6 and later), for servers older
    /// than 3.6: such a server answers one as unimplemented and closes the
    /// connection that sent it, failing every request in flight on it. The
    /// client then reads each node with a request of its own, as it does by
    /// itself after a server refused a multi-read. Defaults to sending them.
    ///
    /// ```
    /// use zk_queue::ZkClient;
    /// let builder = ZkClient::builder("127.0.0.1:2181").without_multi_read();
    /// # drop(builder);
    /// ```
    pub fn without_multi_read(mut self) -> Self {
        self.multi_read = false;
        self
    }

    /// Never sets persistent watches (ZooKeeper 3.6 and later), for servers
    /// older than 3.6, which answer one as unimplemented and close the
    /// connection that asked for it. Priority queue consumers, which follow
    /// the items created since their last listing with such a watch, then
    /// list the queue instead, as they do after a server refused the watch.
    /// Defaults to setting them.
    ///
    /// ```
    /// use zk_queue::ZkClient;
    /// let builder = ZkClient::builder("127.0.0.1:2181").without_persistent_watches();
    /// # drop(builder);
    /// ```
    pub fn without_persistent_watches(mut self) -> Self {
        self.persistent_watches = false;
        self
    }

    /// Speaks TLS to every server, as `tls` says (the servers' secure
    /// client port, `secureClientPort`). A server whose certificate is
    /// refused, or that does not speak TLS, fails the connection with an
    /// [`Error::Unreachable`] whose cause is a
    /// [`ConnectCause::Tls`](super::ConnectCause::Tls). Defaults to plain
    /// TCP.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// use zk_queue::{client::TlsConfig, ZkClient};
    /// let tls = TlsConfig::builder("/etc/zookeeper/ca.pem").build()?;
    /// let client = ZkClient::builder("zk1:2281,zk2:2281").tls(tls).connect()?;
    /// # Ok(())
    /// # }
    /// ```
    #[cfg(feature = "tls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
    pub fn tls(mut self, tls: super::TlsConfig) -> Self {
        self.security.tls = Some(tls);
        self
    }

    /// Checks the settings and connects.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a zero timeout, an empty ACL or a bad
    /// connect string; [`Error::InvalidPath`] for a bad chroot;
    /// [`Error::Unreachable`](crate::Error::Unreachable) if no session opened
    /// within the connection timeout, or at once when every server refused
    /// the connection, has a name that does not resolve, or failed TLS: it names each
    /// server as tried (`host:port`, with the port assumed when the connect
    /// string names none) and why.
    ///
    /// ``` no_run
    /// # fn main() -> Result<(), zk_queue::Error> {
    /// use std::time::Duration;
    /// use zk_queue::ZkClient;
    /// let client = ZkClient::builder("127.0.0.1:2181,127.0.0.1:2182/my-app")
    ///     .session_timeout(Duration::from_secs(10))
    ///     .connect()?;
    /// # drop(client);
    /// # Ok(())
    /// # }
    /// ```
    pub fn connect(self) -> Result<ZkClient> {
        let invalid = |what: &str| Err(Error::InvalidArgument(what.to_owned()));
        for (name, value) in [
            ("session timeout", self.session_timeout),
            ("connection timeout", self.connection_timeout),
            ("request timeout", self.request_timeout),
        ] {
            if value.is_zero() {
                return invalid(&format!("{name} must be positive"));
            }
        }
        if self.default_acl.is_empty() {
            return invalid("default ACL must not be empty");
        }
        if self.max_packet_size < 1024 {
            return invalid("max packet size must be at least 1024 bytes");
        }
        let hosts = match self.connect_string.find('/') {
            Some(i) => {
                crate::path::validate(&self.connect_string[i..])?;
                &self.connect_string[..i]
            }
            None => &self.connect_string[..],
        };
        if hosts.split(',').any(|h| h.trim().is_empty()) {
            return invalid(&format!("connect string {:?} has an empty host", self.connect_string));
        }
        let config = Config {
            connect_string: self.connect_string,
            session_timeout: self.session_timeout,
            connection_timeout: self.connection_timeout,
            request_timeout: self.request_timeout,
            retry: self.retry,
            default_acl: self.default_acl,
            max_packet_size: self.max_packet_size,
            multi_read: self.multi_read,
            persistent_watches: self.persistent_watches,
            security: self.security,
        };
        ZkClient::start(config, self.auth)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(builder: ZkClientBuilder) -> String {
        match builder.connect() {
            Err(e) => e.to_string(),
            Ok(_) => panic!("connected"),
        }
    }

    #[test]
    fn bad_settings_are_refused_before_connecting() {
        let b = || ZkClientBuilder::new("127.0.0.1:1");
        assert_eq!(
            err(b().session_timeout(Duration::ZERO)),
            "invalid argument: session timeout must be positive"
        );
        assert_eq!(
            err(b().default_acl(vec![])),
            "invalid argument: default ACL must not be empty"
        );
        assert_eq!(
            err(ZkClientBuilder::new("127.0.0.1:1,")),
            "invalid argument: connect string \"127.0.0.1:1,\" has an empty host"
        );
        assert!(err(ZkClientBuilder::new("127.0.0.1:1/a/")).starts_with("invalid path"));
    }
}
