//! Settings of a [`TestingServer`](super::TestingServer), set through a consuming builder.

use std::time::Duration;

use super::error::ServerError;

/// Builds a [`TestingServer`](super::TestingServer) with non-default settings.
///
/// Created by [`TestingServer::builder`](super::TestingServer::builder); every setter consumes and returns the builder, and
/// [`start`](TestingServerBuilder::start) starts the server.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use zk_queue::testing::TestingServer;
///
/// let builder = TestingServer::builder()
///     .tick_time(Duration::from_millis(100))
///     .min_session_timeout(Duration::from_millis(200))
///     .container_check_interval(Duration::from_millis(100));
/// // `builder.start()` would now start the server.
/// # let _ = builder;
/// ```
#[derive(Debug, Clone)]
pub struct TestingServerBuilder {
    pub(super) tick_time: Duration,
    pub(super) min_session_timeout: Duration,
    pub(super) max_session_timeout: Duration,
    pub(super) container_check_interval: Option<Duration>,
    pub(super) jute_max_buffer: Option<usize>,
    pub(super) port: Option<u16>,
    pub(super) startup_timeout: Duration,
    pub(super) force_sync: bool,
    pub(super) max_heap_mb: Option<usize>,
    pub(super) extended_types: bool,
    pub(super) tls: Option<super::certs::ServerTls>,
    /// The secure client port asked for; `None`: a free one.
    pub(super) secure_port: Option<u16>,
    /// The four-letter words answered besides [`ALWAYS_ANSWERED`]; `None`: all.
    pub(super) four_letter_words: Option<Vec<String>>,
}

impl Default for TestingServerBuilder {
    fn default() -> Self {
        TestingServerBuilder {
            tick_time: Duration::from_millis(200),
            min_session_timeout: Duration::from_millis(400),
            max_session_timeout: Duration::from_secs(60),
            container_check_interval: None,
            jute_max_buffer: None,
            port: None,
            startup_timeout: Duration::from_secs(30),
            force_sync: true,
            max_heap_mb: None,
            extended_types: false,
            tls: None,
            secure_port: None,
            four_letter_words: None,
        }
    }
}

impl TestingServerBuilder {
    /// Sets the server's `tickTime`, its basic time unit (heartbeats, session expiry checks).
    ///
    /// Defaults to 200 ms.
    ///
    /// ```
    /// use std::time::Duration;
    /// use zk_queue::testing::TestingServer;
    /// let builder = TestingServer::builder().tick_time(Duration::from_millis(100));
    /// # let _ = builder;
    /// ```
    pub fn tick_time(mut self, tick_time: Duration) -> TestingServerBuilder {
        self.tick_time = tick_time;
        self
    }

    /// Sets the shortest session timeout the server grants (`minSessionTimeout`).
    ///
    /// Short timeouts make session-expiry tests fast. Defaults to 400 ms.
    ///
    /// ```
    /// use std::time::Duration;
    /// use zk_queue::testing::TestingServer;
    /// let builder = TestingServer::builder().tick_time(Duration::from_millis(100)).min_session_timeout(Duration::from_millis(200));
    /// # let _ = builder;
    /// ```
    pub fn min_session_timeout(mut self, timeout: Duration) -> TestingServerBuilder {
        self.min_session_timeout = timeout;
        self
    }

    /// Sets the longest session timeout the server grants (`maxSessionTimeout`).
    ///
    /// Defaults to 60 seconds.
    ///
    /// ```
    /// use std::time::Duration;
    /// use zk_queue::testing::TestingServer;
    /// let builder = TestingServer::builder().max_session_timeout(Duration::from_secs(10));
    /// # let _ = builder;
    /// ```
    pub fn max_session_timeout(mut self, timeout: Duration) -> TestingServerBuilder {
        self.max_session_timeout = timeout;
        self
    }

    /// Sets how often the server deletes empty container znodes
    /// (system property `znode.container.checkIntervalMs`).
    ///
    /// Defaults to the server's default (one minute).
    ///
    /// ```
    /// use std::time::Duration;
    /// use zk_queue::testing::TestingServer;
    /// let builder = TestingServer::builder().container_check_interval(Duration::from_millis(100));
    /// # let _ = builder;
    /// ```
    pub fn container_check_interval(mut self, interval: Duration) -> TestingServerBuilder {
        self.container_check_interval = Some(interval);
        self
    }

    /// Sets the largest packet the server accepts, in bytes (system property `jute.maxbuffer`).
    ///
    /// Defaults to the server's default (`0xfffff`, just under 1 MiB).
    ///
    /// ```
    /// use zk_queue::testing::TestingServer;
    /// let builder = TestingServer::builder().jute_max_buffer(64 * 1024);
    /// # let _ = builder;
    /// ```
    pub fn jute_max_buffer(mut self, bytes: usize) -> TestingServerBuilder {
        self.jute_max_buffer = Some(bytes);
        self
    }

    /// Sets the loopback port the server listens on.
    ///
    /// Defaults to a free port chosen by the operating system.
    ///
    /// ```
    /// use zk_queue::testing::TestingServer;
    /// let builder = TestingServer::builder().port(21810);
    /// # let _ = builder;
    /// ```
    pub fn port(mut self, port: u16) -> TestingServerBuilder {
        self.port = Some(port);
        self
    }

    /// Sets how long [`start`](TestingServerBuilder::start) and
    /// [`TestingServer::restart`](super::TestingServer::restart) wait for the server to answer `ruok`.
    ///
    /// Defaults to 30 seconds.
    ///
    /// ```
    /// use std::time::Duration;
    /// use zk_queue::testing::TestingServer;
    /// let builder = TestingServer::builder().startup_timeout(Duration::from_secs(90));
    /// # let _ = builder;
    /// ```
    pub fn startup_timeout(mut self, timeout: Duration) -> TestingServerBuilder {
        self.startup_timeout = timeout;
        self
    }

    /// Sets whether the server fsyncs its transaction log before acknowledging a write
    /// (system property `zookeeper.forceSync`).
    ///
    /// Turning it off makes writes much faster; data still survives
    /// [`kill`](super::TestingServer::kill), only an operating-system crash can lose it.
    /// Defaults to `true` (the server's default).
    ///
    /// ```
    /// use zk_queue::testing::TestingServer;
    /// let builder = TestingServer::builder().force_sync(false); // faster writes for tests
    /// # let _ = builder;
    /// ```
    pub fn force_sync(mut self, force_sync: bool) -> TestingServerBuilder {
        self.force_sync = force_sync;
        self
    }

    /// The server JVM's largest heap, in MiB (`-Xmx`). A server holds every
    /// znode in memory: a million small ones need about a gigabyte. Defaults
    /// to 256.
    ///
    /// ```
    /// use zk_queue::testing::TestingServer;
    /// let builder = TestingServer::builder().max_heap_mb(2048); // room for a million-item backlog
    /// # let _ = builder;
    /// ```
    pub fn max_heap_mb(mut self, mb: usize) -> TestingServerBuilder {
        self.max_heap_mb = Some(mb);
        self
    }

    /// Sets whether the server accepts ZooKeeper's extended node types, the
    /// TTL nodes ([`CreateMode::PersistentWithTtl`](crate::client::CreateMode::PersistentWithTtl))
    /// among them (system property `zookeeper.extendedTypesEnabled`). The
    /// server reaps expired TTL nodes at each
    /// [container check](TestingServerBuilder::container_check_interval).
    ///
    /// Defaults to off (the server's default): TTL creates are refused.
    ///
    /// ```
    /// use std::time::Duration;
    /// use zk_queue::testing::TestingServer;
    /// let builder = TestingServer::builder()
    ///     .extended_types(true)
    ///     .container_check_interval(Duration::from_millis(100)); // TTL nodes reaped quickly
    /// # let _ = builder;
    /// ```
    pub fn extended_types(mut self, on: bool) -> TestingServerBuilder {
        self.extended_types = on;
        self
    }

    /// Answers only these four-letter words (`4lw.commands.whitelist`),
    /// besides `ruok`, `conf`, `srvr` and `isro`, which starting a server and
    /// finding an ensemble's leader ask. Any other is refused with the server's "not in
    /// the whitelist" reply, as on a production server that allows few.
    /// Each word must be four lowercase ASCII letters, or
    /// [`start`](Self::start) fails. Defaults to every word.
    ///
    /// ```
    /// use zk_queue::testing::TestingServer;
    /// let builder = TestingServer::builder().four_letter_words(&["mntr"]); // no dump, no cons
    /// # let _ = builder;
    /// ```
    pub fn four_letter_words(mut self, words: &[&str]) -> TestingServerBuilder {
        self.four_letter_words = Some(words.iter().map(|w| (*w).to_owned()).collect());
        self
    }

    /// Opens a secure client port too (`secureClientPort`, on a free
    /// loopback port, or the one [`secure_port`](Self::secure_port) gives,
    /// kept across restarts: [`TestingServer::secure_port`](super::TestingServer::secure_port))
    /// that speaks TLS as `tls` says. Both ports are then served by
    /// ZooKeeper's Netty connection factory, and clients that present a
    /// certificate are known to ZooKeeper's `x509` scheme by its subject
    /// (`CN=alice`). Defaults to no secure port.
    ///
    /// ```no_run
    /// use zk_queue::testing::{ServerCertificate, TestCertificates, TestingServer};
    /// let certs = TestCertificates::generate()?;
    /// let server = TestingServer::builder()
    ///     .secure_client_port(certs.server_tls(ServerCertificate::Valid))
    ///     .start()?;
    /// assert!(server.secure_port().is_some());
    /// # Ok::<(), zk_queue::testing::ServerError>(())
    /// ```
    pub fn secure_client_port(mut self, tls: super::certs::ServerTls) -> TestingServerBuilder {
        self.tls = Some(tls);
        self
    }

    /// Sets the loopback port of the secure client port that
    /// [`secure_client_port`](Self::secure_client_port) opens (which it
    /// needs). Defaults to a free port chosen by the operating system.
    ///
    /// ```no_run
    /// use zk_queue::testing::{ServerCertificate, TestCertificates, TestingServer};
    /// let certs = TestCertificates::generate()?;
    /// let server = TestingServer::builder()
    ///     .secure_client_port(certs.server_tls(ServerCertificate::Valid))
    ///     .secure_port(21811)
    ///     .start()?;
    /// assert_eq!(server.secure_port(), Some(21811));
    /// # Ok::<(), zk_queue::testing::ServerError>(())
    /// ```
    pub fn secure_port(mut self, port: u16) -> TestingServerBuilder {
        self.secure_port = Some(port);
        self
    }

    /// Checks the settings before anything is started.
    pub(super) fn validate(&self) -> Result<(), ServerError> {
        let invalid = |reason: String| Err(ServerError::InvalidConfig { reason });
        if self.tick_time < Duration::from_millis(1) {
            return invalid(format!("tick time must be at least 1 ms, not {:?}", self.tick_time));
        }
        if self.min_session_timeout > self.max_session_timeout {
            return invalid(format!(
                "min session timeout {:?} exceeds max session timeout {:?}",
                self.min_session_timeout, self.max_session_timeout
            ));
        }
        if self.container_check_interval == Some(Duration::ZERO) {
            return invalid("container check interval must not be zero".to_owned());
        }
        if self.jute_max_buffer == Some(0) {
            return invalid("jute max buffer must not be zero".to_owned());
        }
        if self.port == Some(0) {
            return invalid("port must not be 0; leave it unset to pick a free port".to_owned());
        }
        if self.secure_port == Some(0) {
            return invalid("secure port must not be 0; leave it unset to pick a free port".to_owned());
        }
        if self.secure_port.is_some() && self.tls.is_none() {
            return invalid("a secure port needs the tls settings of secure_client_port".to_owned());
        }
        if self.secure_port.is_some() && self.secure_port == self.port {
            return invalid("the secure port must differ from the client port".to_owned());
        }
        let word = |w: &&String| w.len() == 4 && w.bytes().all(|b| b.is_ascii_lowercase());
        if let Some(bad) = self.four_letter_words.iter().flatten().find(|w| !word(w)) {
            return invalid(format!("{bad:?} is not a four-letter word"));
        }
        Ok(())
    }

    /// The `zoo.cfg` text for a server on `port` keeping its data in `data_dir`.
    pub(super) fn zoo_cfg(&self, port: u16, data_dir: &std::path::Path) -> String {
        format!(
            "tickTime={}\n\
             dataDir={}\n\
             clientPort={port}\n\
             clientPortAddress=127.0.0.1\n\
             admin.enableServer=false\n\
             4lw.commands.whitelist={}\n\
             minSessionTimeout={}\n\
             maxSessionTimeout={}\n",
            millis(self.tick_time),
            data_dir.display(),
            self.four_letter_whitelist(),
            millis(self.min_session_timeout),
            millis(self.max_session_timeout),
        )
    }

    /// The `4lw.commands.whitelist` value: `*`, or the words allowed.
    fn four_letter_whitelist(&self) -> String {
        match &self.four_letter_words {
            None => "*".to_owned(),
            Some(words) => {
                let mut all: Vec<String> = ALWAYS_ANSWERED.iter().map(|w| (*w).to_owned()).collect();
                all.extend(words.iter().filter(|w| !all.contains(w)).cloned().collect::<Vec<_>>());
                all.join(",")
            }
        }
    }

    /// JVM options for these settings: system properties (`-D...`), and a
    /// heap (`-Xmx`) that overrides the default one.
    pub(super) fn system_properties(&self) -> Vec<String> {
        let mut props = Vec::new();
        if let Some(mb) = self.max_heap_mb {
            props.push(format!("-Xmx{mb}m"));
        }
        if let Some(interval) = self.container_check_interval {
            props.push(format!("-Dznode.container.checkIntervalMs={}", millis(interval).max(1)));
        }
        if let Some(bytes) = self.jute_max_buffer {
            props.push(format!("-Djute.maxbuffer={bytes}"));
        }
        if !self.force_sync {
            props.push("-Dzookeeper.forceSync=no".to_owned());
        }
        if self.extended_types {
            props.push("-Dzookeeper.extendedTypesEnabled=true".to_owned());
        }
        props
    }
}

/// The four-letter words a test server always answers: its start asks
/// `ruok` and `conf`, an ensemble's `srvr` and `isro`.
const ALWAYS_ANSWERED: [&str; 4] = ["ruok", "conf", "srvr", "isro"];

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn defaults_match_the_documented_values() {
        let cfg = TestingServerBuilder::default().zoo_cfg(2181, Path::new("/tmp/x/data"));
        assert!(cfg.contains("tickTime=200\n"), "{cfg}");
        assert!(cfg.contains("minSessionTimeout=400\n"), "{cfg}");
        assert!(cfg.contains("maxSessionTimeout=60000\n"), "{cfg}");
        assert!(cfg.contains("clientPort=2181\n"), "{cfg}");
        assert!(cfg.contains("dataDir=/tmp/x/data\n"), "{cfg}");
        assert!(TestingServerBuilder::default().system_properties().is_empty());
    }

    #[test]
    fn setters_become_system_properties() {
        let props = TestingServerBuilder::default()
            .container_check_interval(Duration::from_millis(100))
            .jute_max_buffer(4096)
            .force_sync(false)
            .extended_types(true)
            .system_properties();
        assert_eq!(
            props,
            [
                "-Dznode.container.checkIntervalMs=100",
                "-Djute.maxbuffer=4096",
                "-Dzookeeper.forceSync=no",
                "-Dzookeeper.extendedTypesEnabled=true"
            ]
        );
    }

    #[test]
    fn a_secure_port_without_tls_settings_zero_or_the_client_port_is_rejected() {
        let reason = |b: TestingServerBuilder| match b.validate() {
            Err(ServerError::InvalidConfig { reason }) => reason,
            other => panic!("not refused: {other:?}"),
        };
        let tls = || super::super::certs::ServerTls::new("/tmp/server.pem", "/tmp/ca.pem");
        assert!(reason(TestingServerBuilder::default().secure_port(21811)).contains("needs the tls settings"));
        let zero = TestingServerBuilder::default().secure_client_port(tls()).secure_port(0);
        assert!(reason(zero).contains("must not be 0"));
        let same = TestingServerBuilder::default()
            .port(21811)
            .secure_client_port(tls())
            .secure_port(21811);
        assert!(reason(same).contains("must differ"));
        let good = TestingServerBuilder::default()
            .port(21810)
            .secure_client_port(tls())
            .secure_port(21811);
        assert!(good.validate().is_ok());
    }

    #[test]
    fn min_session_timeout_above_max_is_rejected() {
        let result = TestingServerBuilder::default()
            .min_session_timeout(Duration::from_secs(10))
            .max_session_timeout(Duration::from_secs(5))
            .validate();
        assert!(
            matches!(result, Err(ServerError::InvalidConfig { ref reason }) if reason.contains("min session timeout")),
            "{result:?}"
        );
    }

    #[test]
    fn four_letter_words_keep_those_a_start_needs_and_refuse_what_is_no_word() {
        let cfg = |b: TestingServerBuilder| b.zoo_cfg(2181, Path::new("/tmp/x/data"));
        assert!(cfg(TestingServerBuilder::default()).contains("4lw.commands.whitelist=*\n"));
        let some = cfg(TestingServerBuilder::default().four_letter_words(&["mntr", "srvr"]));
        assert!(
            some.contains("4lw.commands.whitelist=ruok,conf,srvr,isro,mntr\n"),
            "{some}"
        );
        for bad in ["dum", "DUMP", "dump,cons", "d\u{fc}mp"] {
            let result = TestingServerBuilder::default().four_letter_words(&[bad]).validate();
            assert!(
                matches!(result, Err(ServerError::InvalidConfig { ref reason }) if reason.contains("not a four-letter word")),
                "{bad}: {result:?}"
            );
        }
    }
}
