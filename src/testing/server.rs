//! [`TestingServer`]: one real ZooKeeper server with a temporary data directory.

use std::path::{Path, PathBuf};
use std::time::Duration;

use parking_lot::Mutex;
use tempfile::TempDir;

use super::builder::TestingServerBuilder;
use super::error::ServerError;
use super::launch;
use super::probe;
use super::process::{self, GuardedJvm};

/// How long [`TestingServer::stop`] waits after `SIGTERM` before it kills.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// Bound of [`TestingServer::ruok`].
const RUOK_TIMEOUT: Duration = Duration::from_secs(1);

/// A real ZooKeeper server for tests, listening on a loopback port.
///
/// The server runs Debian's `zookeeper` package in its own JVM, keeps its data in a temporary
/// directory, and writes its log to `server.log` next to it. It can be stopped, killed, paused
/// and restarted on the same port and data to inject faults.
///
/// Dropping it kills the JVM and removes the directory. A server that is never dropped (kept in a
/// `static`) still dies, and its directory is still removed, when the test process exits, even
/// by `abort` or `SIGKILL`.
///
/// It is `Send` and `Sync`: threads of one test may pause, resume and probe it concurrently.
///
/// # Examples
///
/// ```no_run
/// use zk_queue::testing::TestingServer;
///
/// let mut server = TestingServer::start()?;
/// assert!(server.ruok());
/// server.restart()?; // same port, same data
/// assert!(server.ruok());
/// # Ok::<(), zk_queue::testing::ServerError>(())
/// ```
#[derive(Debug)]
pub struct TestingServer {
    pub(super) settings: TestingServerBuilder,
    pub(super) java: PathBuf,
    pub(super) port: u16,
    pub(super) secure_port: Option<u16>,
    pub(super) cfg_path: PathBuf,
    pub(super) data_dir: PathBuf,
    pub(super) log_path: PathBuf,
    pub(super) jvm: Mutex<Option<GuardedJvm>>,
    /// Declared last: the directory goes only after the JVM is gone (see `Drop`).
    pub(super) root: TempDir,
}

impl TestingServer {
    /// Starts a server with the default settings and waits until it answers `ruok`.
    ///
    /// # Errors
    ///
    /// As [`TestingServerBuilder::start`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_queue::testing::TestingServer;
    ///
    /// let server = TestingServer::start()?;
    /// println!("zookeeper at {}", server.connect_string());
    /// # Ok::<(), zk_queue::testing::ServerError>(())
    /// ```
    pub fn start() -> Result<TestingServer, ServerError> {
        TestingServer::builder().start()
    }

    /// Returns a builder for a server with non-default settings.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use std::time::{Duration, Instant};
    /// use zk_queue::testing::TestingServer;
    ///
    /// let server = TestingServer::builder()
    ///     .container_check_interval(Duration::from_millis(100))
    ///     .start()?;
    /// # Ok::<(), zk_queue::testing::ServerError>(())
    /// ```
    pub fn builder() -> TestingServerBuilder {
        TestingServerBuilder::default()
    }

    /// The connect string of the server, `127.0.0.1:<port>`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_queue::testing::TestingServer;
    ///
    /// let server = TestingServer::start()?;
    /// assert_eq!(server.connect_string(), format!("127.0.0.1:{}", server.port()));
    /// # Ok::<(), zk_queue::testing::ServerError>(())
    /// ```
    pub fn connect_string(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The connect string of the server's secure client port,
    /// `127.0.0.1:<secure port>`, if it has one
    /// ([`TestingServerBuilder::secure_client_port`]).
    ///
    /// ```no_run
    /// use zk_queue::testing::{ServerCertificate, TestCertificates, TestingServer};
    /// let certs = TestCertificates::generate()?;
    /// let server = TestingServer::builder()
    ///     .secure_client_port(certs.server_tls(ServerCertificate::Valid))
    ///     .start()?;
    /// assert_eq!(server.secure_connect_string(), server.secure_port().map(|p| format!("127.0.0.1:{p}")));
    /// # Ok::<(), zk_queue::testing::ServerError>(())
    /// ```
    pub fn secure_connect_string(&self) -> Option<String> {
        self.secure_port.map(|port| format!("127.0.0.1:{port}"))
    }

    /// The loopback port of the server's secure client port, if it has one;
    /// it stays the same across restarts unless it was taken meanwhile.
    ///
    /// ```no_run
    /// use zk_queue::testing::TestingServer;
    /// assert_eq!(TestingServer::start()?.secure_port(), None);
    /// # Ok::<(), zk_queue::testing::ServerError>(())
    /// ```
    pub fn secure_port(&self) -> Option<u16> {
        self.secure_port
    }

    /// The loopback port the server listens on; it stays the same across restarts.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_queue::testing::TestingServer;
    ///
    /// let mut server = TestingServer::start()?;
    /// let port = server.port();
    /// server.restart()?;
    /// assert_eq!(server.port(), port);
    /// # Ok::<(), zk_queue::testing::ServerError>(())
    /// ```
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The server's data directory (snapshots and transaction logs); it survives restarts.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_queue::testing::TestingServer;
    ///
    /// let server = TestingServer::start()?;
    /// assert!(server.data_dir().join("version-2").is_dir());
    /// # Ok::<(), zk_queue::testing::ServerError>(())
    /// ```
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// The file receiving the server's output, appended to by every start.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_queue::testing::TestingServer;
    ///
    /// let server = TestingServer::start()?;
    /// println!("server log: {}", server.log_path().display());
    /// # Ok::<(), zk_queue::testing::ServerError>(())
    /// ```
    pub fn log_path(&self) -> &Path {
        &self.log_path
    }

    /// The JVM's process id while the server runs (paused included), `None` when it is stopped.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_queue::testing::TestingServer;
    ///
    /// let mut server = TestingServer::start()?;
    /// assert!(server.pid().is_some());
    /// server.stop()?;
    /// assert_eq!(server.pid(), None);
    /// # Ok::<(), zk_queue::testing::ServerError>(())
    /// ```
    pub fn pid(&self) -> Option<u32> {
        let mut guard = self.jvm.lock();
        let jvm = guard.as_mut()?;
        jvm.is_alive().then(|| jvm.pid())
    }

    /// Whether the server's JVM runs; a paused server runs, a crashed one does not.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_queue::testing::TestingServer;
    ///
    /// let mut server = TestingServer::start()?;
    /// assert!(server.is_running());
    /// server.kill()?;
    /// assert!(!server.is_running());
    /// # Ok::<(), zk_queue::testing::ServerError>(())
    /// ```
    pub fn is_running(&self) -> bool {
        self.pid().is_some()
    }

    /// Whether the server answers `ruok` with `imok` within one second.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_queue::testing::TestingServer;
    ///
    /// let server = TestingServer::start()?;
    /// assert!(server.ruok());
    /// # Ok::<(), zk_queue::testing::ServerError>(())
    /// ```
    pub fn ruok(&self) -> bool {
        probe::ruok(launch::loopback(self.port), RUOK_TIMEOUT)
    }

    /// Sends a four-letter-word command (`ruok`, `mntr`, `wchs`, `cons`, `dump`, ...) and
    /// returns the server's reply. All commands are enabled.
    ///
    /// # Errors
    ///
    /// [`ServerError::Io`] when the server cannot be reached or does not answer within `timeout`
    /// (for example while it is paused).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use std::time::{Duration, Instant};
    /// use zk_queue::testing::TestingServer;
    ///
    /// let server = TestingServer::start()?;
    /// let watches = server.four_letter_word("wchs", Duration::from_secs(2))?;
    /// println!("{watches}");
    /// # Ok::<(), zk_queue::testing::ServerError>(())
    /// ```
    pub fn four_letter_word(&self, word: &str, timeout: Duration) -> Result<String, ServerError> {
        probe::four_letter_word(launch::loopback(self.port), word, timeout).map_err(|e| {
            ServerError::io(
                format!("four-letter word {word:?} to {} failed", self.connect_string()),
                e,
            )
        })
    }

    /// Stops the server gracefully, keeping its data: `SIGTERM`, then `SIGKILL` if the JVM has
    /// not exited within five seconds. Stopping a stopped server does nothing.
    ///
    /// # Errors
    ///
    /// [`ServerError::Signal`] or [`ServerError::Io`] if the JVM could not be signalled or waited for.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_queue::testing::TestingServer;
    ///
    /// let mut server = TestingServer::start()?;
    /// server.stop()?;
    /// assert!(!server.ruok());
    /// # Ok::<(), zk_queue::testing::ServerError>(())
    /// ```
    pub fn stop(&mut self) -> Result<(), ServerError> {
        if let Some(mut jvm) = self.jvm.get_mut().take() {
            let status = jvm.terminate(STOP_GRACE)?;
            log::info!("zookeeper on port {} stopped ({status})", self.port);
        }
        Ok(())
    }

    /// Kills the server with `SIGKILL`, keeping its data, like a crash of its machine's process.
    /// Killing a stopped server does nothing.
    ///
    /// # Errors
    ///
    /// [`ServerError::Signal`] or [`ServerError::Io`] if the JVM could not be signalled or waited for.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_queue::testing::TestingServer;
    ///
    /// let mut server = TestingServer::start()?;
    /// server.kill()?;
    /// server.restart()?; // recovers from its data directory
    /// # Ok::<(), zk_queue::testing::ServerError>(())
    /// ```
    pub fn kill(&mut self) -> Result<(), ServerError> {
        if let Some(mut jvm) = self.jvm.get_mut().take() {
            let status = jvm.kill()?;
            log::info!("zookeeper on port {} killed ({status})", self.port);
        }
        Ok(())
    }

    /// Stops the server if it runs, then starts it again on the same port with the same data,
    /// and waits until it answers `ruok`.
    ///
    /// # Errors
    ///
    /// As [`stop`](TestingServer::stop) and [`TestingServerBuilder::start`]; the port is retried
    /// a few times before [`ServerError::PortInUse`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_queue::testing::TestingServer;
    ///
    /// let mut server = TestingServer::start()?;
    /// server.restart()?;
    /// assert!(server.ruok());
    /// # Ok::<(), zk_queue::testing::ServerError>(())
    /// ```
    pub fn restart(&mut self) -> Result<(), ServerError> {
        self.stop()?;
        log::info!("restarting zookeeper on port {}", self.port);
        self.boot(false)
    }

    /// Freezes the server's JVM with `SIGSTOP`: connections stay open but nothing is answered,
    /// as with a long garbage-collection pause or a hung machine.
    ///
    /// # Errors
    ///
    /// [`ServerError::NotRunning`] if the server is stopped, [`ServerError::Signal`] if the
    /// signal could not be sent.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_queue::testing::TestingServer;
    ///
    /// let server = TestingServer::start()?;
    /// server.pause()?;
    /// assert!(!server.ruok());
    /// server.resume()?;
    /// assert!(server.ruok());
    /// # Ok::<(), zk_queue::testing::ServerError>(())
    /// ```
    pub fn pause(&self) -> Result<(), ServerError> {
        self.signal("STOP")?;
        // Return only once the JVM has really stopped serving.
        self.wait_for_stop_state(true);
        Ok(())
    }

    /// Lets a paused server's JVM continue with `SIGCONT`. Resuming a running server does nothing.
    ///
    /// # Errors
    ///
    /// [`ServerError::NotRunning`] if the server is stopped, [`ServerError::Signal`] if the
    /// signal could not be sent.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_queue::testing::TestingServer;
    ///
    /// let server = TestingServer::start()?;
    /// server.pause()?;
    /// server.resume()?;
    /// assert!(server.ruok());
    /// # Ok::<(), zk_queue::testing::ServerError>(())
    /// ```
    pub fn resume(&self) -> Result<(), ServerError> {
        self.signal("CONT")?;
        self.wait_for_stop_state(false);
        Ok(())
    }

    fn wait_for_stop_state(&self, stopped: bool) {
        if let Some(pid) = self.pid() {
            process::wait_for_stop_state(pid, stopped, Duration::from_secs(5));
        }
    }

    fn signal(&self, signal: &'static str) -> Result<(), ServerError> {
        match self.jvm.lock().as_mut() {
            Some(jvm) => jvm.signal(signal),
            None => Err(ServerError::NotRunning),
        }
    }
}

impl Drop for TestingServer {
    fn drop(&mut self) {
        // Kill, not stop: the data is about to be deleted, so a clean shutdown buys nothing.
        if let Some(mut jvm) = self.jvm.get_mut().take() {
            match jvm.kill() {
                Ok(_) => log::debug!("zookeeper on port {} killed on drop", self.port),
                Err(e) => log::warn!("could not kill zookeeper on port {}: {e}", self.port),
            }
        }
        // `root` (the TempDir) is removed after this, when the fields are dropped.
    }
}

impl TestingServerBuilder {
    /// Starts the server and waits until it answers `ruok`.
    ///
    /// # Errors
    ///
    /// [`ServerError::JavaNotFound`] or [`ServerError::ZooKeeperNotFound`] when Debian's
    /// `zookeeper` package is missing, [`ServerError::InvalidConfig`] for unusable settings,
    /// [`ServerError::PortInUse`] when a port set with [`port`](TestingServerBuilder::port)
    /// stays taken, and [`ServerError::Exited`] or [`ServerError::NotReady`] (with the server's
    /// log tail) when the server does not come up.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use zk_queue::testing::TestingServer;
    ///
    /// let server = TestingServer::builder()
    ///     .max_session_timeout(Duration::from_secs(5))
    ///     .start()?;
    /// println!("zookeeper at {}", server.connect_string());
    /// # Ok::<(), zk_queue::testing::ServerError>(())
    /// ```
    pub fn start(self) -> Result<TestingServer, ServerError> {
        TestingServer::launch(self)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn server_and_builder_are_send_and_sync() {
        fn check<T: Send + Sync + 'static>() {}
        check::<super::TestingServer>();
        check::<super::TestingServerBuilder>();
    }
}
