//! Starting one ZooKeeper JVM and waiting until it answers: classpath, readiness, log tail.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpListener};
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::error::ServerError;
use super::probe;
use super::process::{GuardedJvm, JvmCommand};

/// Directory of Debian's Java libraries.
const JAVA_LIB_DIR: &str = "/usr/share/java";

/// The ZooKeeper jar; its manifest's `Class-Path` pulls in most dependencies.
pub(crate) const ZOOKEEPER_JAR: &str = "/usr/share/java/zookeeper.jar";

/// Jars on the classpath besides the manifest's; `slf4j-simple` makes the server log readable,
/// `netty-codec` and `netty-resolver` complete the Netty connection factory of a secure port.
const CLASSPATH_JARS: [&str; 7] = [
    "zookeeper.jar",
    "zookeeper-jute.jar",
    "slf4j-api.jar",
    "slf4j-simple.jar",
    "netty-handler.jar",
    "netty-codec.jar",
    "netty-resolver.jar",
];

/// JVM options that keep each server small and quick to start.
const JVM_OPTIONS: [&str; 9] = [
    "-Xms32m",
    "-Xmx256m",
    "-Xss512k",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-XX:-UsePerfData",
    "-Djava.awt.headless=true",
    "-Dorg.slf4j.simpleLogger.showDateTime=true",
    "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
];

/// Main class of a standalone server.
pub(crate) const STANDALONE: &str = "org.apache.zookeeper.server.ZooKeeperServerMain";

/// Main class of an ensemble member.
pub(crate) const QUORUM_PEER: &str = "org.apache.zookeeper.server.quorum.QuorumPeerMain";

/// How often readiness is polled.
const POLL_INTERVAL: Duration = Duration::from_millis(50);

/// Bound of one `ruok` probe while waiting for readiness.
const PROBE_TIMEOUT: Duration = Duration::from_millis(500);

/// Lines of server log quoted in startup errors.
const TAIL_LINES: usize = 30;

/// One server start: everything needed to run the JVM once.
#[derive(Debug)]
pub(crate) struct Launch<'a> {
    pub(crate) java: &'a Path,
    pub(crate) system_properties: Vec<String>,
    pub(crate) cfg: &'a Path,
    pub(crate) root: &'a Path,
    pub(crate) data_dir: &'a Path,
    pub(crate) log: &'a Path,
    pub(crate) port: u16,
    pub(crate) startup_timeout: Duration,
    /// [`STANDALONE`] or [`QUORUM_PEER`].
    pub(crate) main_class: &'static str,
}

impl Launch<'_> {
    /// Starts the JVM and waits until it answers `ruok` as the server owning `data_dir`.
    ///
    /// On any error the JVM is killed before returning.
    pub(crate) fn run(&self) -> Result<GuardedJvm, ServerError> {
        let started = Instant::now();
        let (mut jvm, log_start) = self.spawn()?;
        self.wait_ready(&mut jvm, log_start)?;
        log::info!(
            "zookeeper ready at 127.0.0.1:{} (pid {}) after {:?}",
            self.port,
            jvm.pid(),
            started.elapsed()
        );
        Ok(jvm)
    }

    /// Starts the JVM without waiting for it; returns it with the log offset
    /// its output starts at.
    pub(crate) fn spawn(&self) -> Result<(GuardedJvm, u64), ServerError> {
        let log_start = file_len(self.log);
        let mut args: Vec<String> = JVM_OPTIONS.iter().map(|s| (*s).to_owned()).collect();
        args.extend(self.system_properties.iter().cloned());
        args.push("-cp".to_owned());
        args.push(classpath());
        args.push(self.main_class.to_owned());
        args.push(self.cfg.display().to_string());
        let jvm = GuardedJvm::spawn(&JvmCommand {
            java: self.java,
            args,
            dir: self.root,
            log: self.log,
        })?;
        Ok((jvm, log_start))
    }

    /// Waits until the JVM serves requests as the server owning `data_dir`;
    /// kills it on failure.
    pub(crate) fn wait_ready(&self, jvm: &mut GuardedJvm, log_start: u64) -> Result<(), ServerError> {
        let result = self.poll_ready(jvm, log_start);
        if result.is_err() {
            let _ = jvm.kill();
        }
        result
    }

    fn poll_ready(&self, jvm: &mut GuardedJvm, log_start: u64) -> Result<(), ServerError> {
        let addr = loopback(self.port);
        let deadline = Instant::now() + self.startup_timeout;
        loop {
            if let Some(status) = jvm.exit_status()? {
                let log_tail = log_tail(self.log, log_start);
                return Err(if log_tail.contains("Address already in use") {
                    ServerError::PortInUse {
                        port: self.port,
                        log_tail,
                    }
                } else {
                    ServerError::Exited { status, log_tail }
                });
            }
            if probe::ruok(addr, PROBE_TIMEOUT) {
                // A server answers `imok` before it serves requests, and `imok` could come from
                // another server that holds the port while ours fails to bind it. `conf` answers
                // only once the server serves, and names the data directory of the one that answered.
                match probe::four_letter_word(addr, "conf", PROBE_TIMEOUT * 4) {
                    Ok(conf) => match served_data_dir(&conf) {
                        Some(dir) if dir.starts_with(self.data_dir) => return Ok(()),
                        Some(dir) => {
                            return Err(ServerError::PortInUse {
                                port: self.port,
                                log_tail: format!(
                                    "another zookeeper server (data in {}) answers on this port",
                                    dir.display()
                                ),
                            })
                        }
                        None => log::trace!("zookeeper on port {} is not serving yet", self.port),
                    },
                    Err(e) => log::debug!("conf on port {} failed: {e}", self.port),
                }
            }
            if Instant::now() >= deadline {
                return Err(ServerError::NotReady {
                    timeout: self.startup_timeout,
                    log_tail: log_tail(self.log, log_start),
                });
            }
            thread::sleep(POLL_INTERVAL);
        }
    }
}

/// Waits until this JVM has bound `port` and the port accepts connections
/// (a server opens its secure client port after answering `ruok` on the
/// plain one), within `timeout` counted from `started`. The JVM's own `log`
/// (from byte `log_start`) must say it bound the port: a listener of another
/// server on it must not pass for ours, which then exits unable to bind it
/// ([`ServerError::PortInUse`], so that the start is tried again). Kills the
/// JVM on failure, quoting its log.
pub(crate) fn wait_listening(
    mut jvm: GuardedJvm,
    port: u16,
    started: Instant,
    timeout: Duration,
    (log, log_start): (&Path, u64),
) -> Result<GuardedJvm, ServerError> {
    let bound = format!("bound to port {port}");
    loop {
        let ours = log_since(log, log_start).is_ok_and(|text| text.lines().any(|l| l.trim_end().ends_with(&bound)));
        if ours && std::net::TcpStream::connect_timeout(&loopback(port), POLL_INTERVAL).is_ok() {
            return Ok(jvm);
        }
        if let Some(status) = jvm.exit_status()? {
            let log_tail = log_tail(log, log_start);
            return Err(if log_tail.contains("Address already in use") {
                ServerError::PortInUse { port, log_tail }
            } else {
                ServerError::Exited { status, log_tail }
            });
        }
        if started.elapsed() >= timeout {
            let _ = jvm.kill();
            return Err(ServerError::NotReady {
                timeout,
                log_tail: log_tail(log, log_start),
            });
        }
        thread::sleep(POLL_INTERVAL);
    }
}

/// The classpath of a server.
fn classpath() -> String {
    CLASSPATH_JARS
        .iter()
        .map(|jar| format!("{JAVA_LIB_DIR}/{jar}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// Checks that Debian's ZooKeeper jar is installed.
pub(crate) fn check_zookeeper_installed() -> Result<(), ServerError> {
    let jar = PathBuf::from(ZOOKEEPER_JAR);
    if jar.is_file() {
        Ok(())
    } else {
        Err(ServerError::ZooKeeperNotFound { path: jar })
    }
}

/// The loopback address of `port`.
pub(crate) fn loopback(port: u16) -> SocketAddr {
    SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port))
}

/// A loopback port that was free a moment ago, and that no earlier call in
/// this process returned: two servers starting at once are never handed one
/// port (the second to bind it would find the first's listener there).
pub(crate) fn free_port() -> Result<u16, ServerError> {
    static HANDED_OUT: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());
    loop {
        let port = TcpListener::bind(loopback(0))
            .and_then(|listener| listener.local_addr())
            .map(|addr| addr.port())
            .map_err(|e| ServerError::io("could not find a free loopback port", e))?;
        if HANDED_OUT.lock().insert(port) {
            return Ok(port);
        }
    }
}

/// Whether `port` can be bound on loopback now (with `SO_REUSEADDR`, as ZooKeeper binds it).
pub(crate) fn port_is_free(port: u16) -> bool {
    TcpListener::bind(loopback(port)).is_ok()
}

/// The data directory named by a `conf` reply; `None` while the server does not serve yet
/// (it then answers "This ZooKeeper instance is not currently serving requests").
fn served_data_dir(conf: &str) -> Option<&Path> {
    conf.lines()
        .find_map(|line| line.strip_prefix("dataDir="))
        .map(|dir| Path::new(dir.trim()))
}

pub(crate) fn file_len(path: &Path) -> u64 {
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

/// What was written to `log` after byte `start` (its last 64 KiB at most).
fn log_since(log: &Path, start: u64) -> std::io::Result<String> {
    const MAX_BYTES: u64 = 64 * 1024;
    let mut file = File::open(log)?;
    let len = file.metadata()?.len();
    file.seek(SeekFrom::Start(start.max(len.saturating_sub(MAX_BYTES))))?;
    let mut bytes = Vec::new();
    file.take(MAX_BYTES).read_to_end(&mut bytes)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// The last [`TAIL_LINES`] lines written to `log` after byte `start`.
pub(crate) fn log_tail(log: &Path, start: u64) -> String {
    match log_since(log, start) {
        Ok(text) => {
            let lines: Vec<&str> = text.lines().collect();
            lines[lines.len().saturating_sub(TAIL_LINES)..].join("\n")
        }
        Err(e) => format!("(could not read {}: {e})", log.display()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conf_reply_names_the_data_dir_once_serving() {
        let conf = "clientPort=2181\ndataDir=/tmp/zk-testing-a/data/version-2\ntickTime=200\n";
        let dir = served_data_dir(conf).expect("a serving server names its data dir");
        assert!(dir.starts_with("/tmp/zk-testing-a/data"));
        assert!(!dir.starts_with("/tmp/zk-testing-b/data"));
        let starting = "This ZooKeeper instance is not currently serving requests\n";
        assert_eq!(served_data_dir(starting), None);
    }

    /// A stand-in for a JVM that could not bind its secure port: it logs
    /// what ZooKeeper logs then, after `delay`, and exits.
    fn failing_to_bind(dir: &Path, log: &Path, delay: &str) -> GuardedJvm {
        let script = format!("sleep {delay}; echo 'java.net.BindException: Address already in use'; exit 1");
        GuardedJvm::spawn(&JvmCommand {
            java: Path::new("/bin/sh"),
            args: vec!["-c".to_owned(), script],
            dir,
            log,
        })
        .expect("spawn the stand-in")
    }

    #[test]
    fn another_listener_on_the_secure_port_does_not_pass_for_the_server() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = dir.path().join("server.log");
        // Another server listens on the port this one was to bind.
        let other = TcpListener::bind(loopback(0)).expect("bind");
        let port = other.local_addr().expect("addr").port();
        let jvm = failing_to_bind(dir.path(), &log, "0.3");
        let started = Instant::now();
        match wait_listening(jvm, port, started, Duration::from_secs(20), (&log, 0)) {
            Err(ServerError::PortInUse { port: taken, .. }) => assert_eq!(taken, port),
            Ok(_) => panic!("the other server's listener passed for ours"),
            Err(e) => panic!("not a taken port: {e}"),
        }
    }

    #[test]
    fn log_tail_keeps_the_last_lines_after_the_start_offset() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = dir.path().join("server.log");
        std::fs::write(&log, "old run\n").expect("write");
        let start = file_len(&log);
        let new: String = (0..40).map(|i| format!("line {i}\n")).collect();
        std::fs::write(&log, format!("old run\n{new}")).expect("write");
        let tail = log_tail(&log, start);
        assert!(!tail.contains("old run"), "{tail}");
        assert!(tail.starts_with("line 10\n"), "{tail}");
        assert!(tail.ends_with("line 39"), "{tail}");
    }
}
