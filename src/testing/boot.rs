//! Starting a [`TestingServer`]: the temporary directory, the port, and retries while the port is taken.

use std::thread;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::builder::TestingServerBuilder;
use super::error::ServerError;
use super::launch::{self, Launch};
use super::process;
use super::server::TestingServer;

/// How many times a start is tried when the JVM finds the port taken.
const START_ATTEMPTS: u32 = 3;

/// How long a start waits for a taken port (a set one, or the same one on restart) to be freed.
const PORT_WAIT: Duration = Duration::from_secs(2);

/// How often a taken port is checked.
const PORT_POLL: Duration = Duration::from_millis(100);

impl TestingServer {
    /// Creates the server's directory and starts it with `settings`.
    pub(super) fn launch(settings: TestingServerBuilder) -> Result<TestingServer, ServerError> {
        settings.validate()?;
        launch::check_zookeeper_installed()?;
        let java = process::find_java()?;
        let root = tempfile::Builder::new()
            .prefix("zk-testing-")
            .tempdir()
            .map_err(|e| ServerError::io("could not create a temporary directory", e))?;
        let data_dir = root.path().join("data");
        std::fs::create_dir(&data_dir)
            .map_err(|e| ServerError::io(format!("could not create {}", data_dir.display()), e))?;
        let port = match settings.port {
            Some(port) => port,
            None => launch::free_port()?,
        };
        let secure_port = match (&settings.tls, settings.secure_port) {
            (Some(_), Some(port)) => Some(port),
            (Some(_), None) => Some(launch::free_port()?),
            (None, _) => None,
        };
        let mut server = TestingServer {
            java,
            port,
            secure_port,
            cfg_path: root.path().join("zoo.cfg"),
            log_path: root.path().join("server.log"),
            data_dir,
            jvm: Mutex::new(None),
            root,
            settings,
        };
        let move_port = server.settings.port.is_none();
        server.boot(move_port)?;
        Ok(server)
    }

    /// Starts the JVM, retrying while the port is taken; `move_port` picks a new free port on
    /// each retry (only when the user did not ask for a port and the server never ran).
    pub(super) fn boot(&mut self, move_port: bool) -> Result<(), ServerError> {
        // A JVM left behind by a crash must not hold the port.
        if let Some(mut old) = self.jvm.get_mut().take() {
            old.kill()?;
        }
        let mut attempt = 1;
        loop {
            let started = Instant::now();
            self.wait_for_port(move_port)?;
            let mut cfg = self.settings.zoo_cfg(self.port, &self.data_dir);
            if let (Some(tls), Some(secure_port)) = (&self.settings.tls, self.secure_port) {
                cfg.push_str(&tls.zoo_cfg(secure_port));
            }
            std::fs::write(&self.cfg_path, cfg)
                .map_err(|e| ServerError::io(format!("could not write {}", self.cfg_path.display()), e))?;
            log::debug!(
                "starting zookeeper on port {} (attempt {attempt}), log {}",
                self.port,
                self.log_path.display()
            );
            let launch = Launch {
                java: &self.java,
                system_properties: self.settings.system_properties(),
                cfg: &self.cfg_path,
                root: self.root.path(),
                data_dir: &self.data_dir,
                log: &self.log_path,
                port: self.port,
                startup_timeout: self.settings.startup_timeout,
                main_class: launch::STANDALONE,
            };
            let log_start = launch::file_len(&self.log_path);
            match launch
                .run()
                .and_then(|jvm| self.wait_for_secure_port(jvm, started, log_start))
            {
                Ok(jvm) => {
                    *self.jvm.get_mut() = Some(jvm);
                    return Ok(());
                }
                Err(ServerError::PortInUse { port, .. }) if attempt < START_ATTEMPTS => {
                    attempt += 1;
                    if move_port && self.secure_port.is_some() && self.settings.secure_port.is_none() {
                        // It may be the secure port that was taken; clients
                        // read it from the server after a start.
                        self.secure_port = Some(launch::free_port()?);
                    }
                    if move_port {
                        self.port = launch::free_port()?;
                        log::debug!("port {port} was taken; trying port {}", self.port);
                    } else {
                        log::debug!("port {port} was taken; retrying");
                        thread::sleep(PORT_POLL);
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Makes sure the port can be bound before a JVM is spent on it: a taken port is waited for
    /// (it may be a server of ours still shutting down) or, when `move_port`, replaced.
    /// Waits until the JVM has bound the secure client port, if any, and it
    /// accepts connections, within the startup timeout counted from `started`
    /// (the JVM's log from byte `log_start` says it bound the port).
    fn wait_for_secure_port(
        &self,
        jvm: process::GuardedJvm,
        started: Instant,
        log_start: u64,
    ) -> Result<process::GuardedJvm, ServerError> {
        match self.secure_port {
            Some(port) => launch::wait_listening(
                jvm,
                port,
                started,
                self.settings.startup_timeout,
                (&self.log_path, log_start),
            ),
            None => Ok(jvm),
        }
    }

    fn wait_for_port(&mut self, move_port: bool) -> Result<(), ServerError> {
        let deadline = Instant::now() + PORT_WAIT;
        while !launch::port_is_free(self.port) {
            if move_port {
                self.port = launch::free_port()?;
            } else if Instant::now() >= deadline {
                return Err(ServerError::PortInUse {
                    port: self.port,
                    log_tail: String::new(),
                });
            } else {
                thread::sleep(PORT_POLL);
            }
        }
        Ok(())
    }
}
