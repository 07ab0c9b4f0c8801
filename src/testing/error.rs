//! The error type of the testing harness.

use std::error::Error as StdError;
use std::fmt;
use std::io;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::time::Duration;

/// Why a [`TestingServer`](super::TestingServer) could not start, stop or be signalled.
///
/// Errors that happen while the server starts carry the tail of the server's log
/// (see [`ServerError::log_tail`]), and print it in their message.
///
/// # Examples
///
/// ```no_run
/// use zk_queue::testing::{ServerError, TestingServer};
///
/// match TestingServer::start() {
///     Ok(server) => println!("zookeeper at {}", server.connect_string()),
///     Err(ServerError::JavaNotFound) => eprintln!("skipping: no java"),
///     Err(e) => panic!("{e}"),
/// }
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum ServerError {
    /// No `java` executable was found in `$JAVA_HOME/bin` or on `PATH`.
    JavaNotFound,
    /// The ZooKeeper server jar is missing.
    ZooKeeperNotFound {
        /// Where the jar was looked for.
        path: PathBuf,
    },
    /// The builder was given settings the server cannot use.
    InvalidConfig {
        /// What is wrong with the settings.
        reason: String,
    },
    /// An I/O operation of the harness failed.
    Io {
        /// What the harness was doing.
        context: String,
        /// The underlying error.
        source: io::Error,
    },
    /// The client port is taken by another process.
    PortInUse {
        /// The port that could not be bound.
        port: u16,
        /// The last lines the server logged.
        log_tail: String,
    },
    /// The server process exited while the harness waited for it to answer.
    Exited {
        /// How the process ended.
        status: ExitStatus,
        /// The last lines the server logged.
        log_tail: String,
    },
    /// The server did not answer `ruok` within the startup bound.
    NotReady {
        /// The startup bound that passed.
        timeout: Duration,
        /// The last lines the server logged.
        log_tail: String,
    },
    /// The operation needs a running server, and the server is stopped.
    NotRunning,
    /// A signal could not be delivered to the server process.
    Signal {
        /// The signal's name, without the `SIG` prefix (`STOP`, `CONT`, `TERM`, `KILL`).
        signal: &'static str,
        /// The process the signal was meant for.
        pid: u32,
        /// What `kill` reported.
        reason: String,
    },
}

impl ServerError {
    /// The last lines the server logged, for errors raised while it started.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_queue::testing::TestingServer;
    ///
    /// if let Err(e) = TestingServer::start() {
    ///     eprintln!("{}", e.log_tail().unwrap_or("(no server log)"));
    /// }
    /// ```
    pub fn log_tail(&self) -> Option<&str> {
        match self {
            ServerError::PortInUse { log_tail, .. }
            | ServerError::Exited { log_tail, .. }
            | ServerError::NotReady { log_tail, .. } => Some(log_tail),
            _ => None,
        }
    }

    pub(crate) fn io(context: impl Into<String>, source: io::Error) -> ServerError {
        ServerError::Io {
            context: context.into(),
            source,
        }
    }
}

impl fmt::Display for ServerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerError::JavaNotFound => {
                f.write_str("java not found in $JAVA_HOME/bin or on PATH; install it with `apt-get install zookeeper`")
            }
            ServerError::ZooKeeperNotFound { path } => write!(
                f,
                "zookeeper jar not found at {}; install it with `apt-get install zookeeper`",
                path.display()
            ),
            ServerError::InvalidConfig { reason } => {
                write!(f, "invalid testing server settings: {reason}")
            }
            ServerError::Io { context, .. } => f.write_str(context),
            ServerError::PortInUse { port, log_tail } => {
                write!(f, "port {port} is already in use")?;
                write_tail(f, log_tail)
            }
            ServerError::Exited { status, log_tail } => {
                write!(f, "zookeeper exited during startup ({status})")?;
                write_tail(f, log_tail)
            }
            ServerError::NotReady { timeout, log_tail } => {
                write!(f, "zookeeper did not answer ruok within {timeout:?}")?;
                write_tail(f, log_tail)
            }
            ServerError::NotRunning => f.write_str("the zookeeper server is not running"),
            ServerError::Signal { signal, pid, reason } => {
                write!(f, "could not send SIG{signal} to process {pid}: {reason}")
            }
        }
    }
}

fn write_tail(f: &mut fmt::Formatter<'_>, log_tail: &str) -> fmt::Result {
    if log_tail.is_empty() {
        Ok(())
    } else {
        write!(f, "; server log ends with:\n{log_tail}")
    }
}

impl StdError for ServerError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        match self {
            ServerError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_error_exposes_its_source_and_keeps_it_out_of_the_message() {
        let e = ServerError::io(
            "could not write zoo.cfg",
            io::Error::new(io::ErrorKind::PermissionDenied, "denied"),
        );
        assert_eq!(e.to_string(), "could not write zoo.cfg");
        assert_eq!(e.source().map(|s| s.to_string()), Some("denied".into()));
    }

    #[test]
    fn startup_errors_print_the_log_tail() {
        let e = ServerError::NotReady {
            timeout: Duration::from_secs(30),
            log_tail: "line one\nline two".into(),
        };
        assert_eq!(
            e.to_string(),
            "zookeeper did not answer ruok within 30s; server log ends with:\nline one\nline two"
        );
        assert_eq!(e.log_tail(), Some("line one\nline two"));
        assert_eq!(ServerError::NotRunning.log_tail(), None);
    }

    #[test]
    fn missing_jar_message_names_the_package() {
        let e = ServerError::ZooKeeperNotFound {
            path: PathBuf::from("/usr/share/java/zookeeper.jar"),
        };
        assert!(e.to_string().contains("apt-get install zookeeper"), "{e}");
    }

    #[test]
    fn error_is_send_and_sync() {
        fn check<T: Send + Sync + 'static>() {}
        check::<ServerError>();
    }
}
