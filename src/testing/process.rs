//! A JVM started under a small `sh` guard, so that it dies with the process that started it.
//!
//! Rust cannot ask the kernel to kill a child when its parent dies without `unsafe`
//! (`prctl(PR_SET_PDEATHSIG)`), and a test binary keeps its shared server in a `static` that is never
//! dropped. So the JVM is started by [`GUARD_SCRIPT`], which holds the read end of a pipe whose only
//! write end lives in this process ([`GuardedJvm::control`]). When this process exits for any reason,
//! even `abort` or `SIGKILL`, the kernel closes that write end, the guard's `read` returns, and the
//! guard kills the JVM and removes the server's temporary directory.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use super::error::ServerError;

/// How long to wait for the JVM to be reaped after `SIGKILL`.
const KILL_WAIT: Duration = Duration::from_secs(10);

/// The wrapper run as `sh -c GUARD_SCRIPT zk-testing-guard <dir> <java> <args>...`.
///
/// - Starts the command in the background (its stdin is `/dev/null`, its output goes to the
///   wrapper's stderr, the server log) and prints its pid on the first line of stdout.
/// - A background guard blocks on `read` from the control pipe (fd 3, a copy of stdin). It reads
///   end-of-file only when the Rust process has gone away without stopping the server: it then
///   kills the JVM with `SIGKILL`, waits for it to be reaped and removes `<dir>`.
/// - The wrapper itself waits for the JVM, stops the guard (so an orderly stop never triggers the
///   clean-up) and exits with the JVM's status, so `Child::try_wait` on the wrapper tells when the
///   JVM has exited. Until then the JVM's pid cannot be reused, which makes signalling it safe.
const GUARD_SCRIPT: &str = r#"dir=$1
shift
"$@" >&2 &
pid=$!
echo "$pid"
exec 3<&0
{
    if read -r _line <&3; then exit 0; fi
    trap '' TERM
    kill -9 "$pid" 2>/dev/null
    n=0
    while kill -0 "$pid" 2>/dev/null && [ "$n" -lt 100 ]; do sleep 0.05; n=$((n + 1)); done
    rm -rf -- "$dir"
} >/dev/null &
guard=$!
wait "$pid"
code=$?
kill "$guard" 2>/dev/null
exit "$code"
"#;

/// What to run under the guard.
#[derive(Debug)]
pub(crate) struct JvmCommand<'a> {
    /// The `java` executable.
    pub(crate) java: &'a Path,
    /// Everything after `java`: JVM options, `-cp`, main class, program arguments.
    pub(crate) args: Vec<String>,
    /// Working directory; also removed by the guard if this process dies first.
    pub(crate) dir: &'a Path,
    /// File that receives the JVM's stdout and stderr (appended to).
    pub(crate) log: &'a Path,
}

/// A running (or exited, not yet cleaned up) JVM and its guard.
#[derive(Debug)]
pub(crate) struct GuardedJvm {
    /// The `sh` wrapper; it exits right after the JVM does, with the JVM's status.
    wrapper: Child,
    /// The only write end of the guard's control pipe.
    control: Option<ChildStdin>,
    /// The JVM's own pid, the target of every signal.
    pid: u32,
}

impl GuardedJvm {
    /// Starts `command` under the guard and returns once the JVM's pid is known.
    pub(crate) fn spawn(command: &JvmCommand<'_>) -> Result<GuardedJvm, ServerError> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(command.log)
            .map_err(|e| ServerError::io(format!("could not open server log {}", command.log.display()), e))?;
        let mut wrapper = Command::new("sh")
            .arg("-c")
            .arg(GUARD_SCRIPT)
            .arg("zk-testing-guard")
            .arg(command.dir)
            .arg(command.java)
            .args(&command.args)
            .current_dir(command.dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log))
            // Its own process group: Ctrl-C on the test run reaches only the test process, whose
            // exit then closes the control pipe, and the guard cleans up.
            .process_group(0)
            .spawn()
            .map_err(|e| ServerError::io("could not start sh to run java", e))?;
        let control = wrapper.stdin.take();
        let pid = match read_pid(&mut wrapper) {
            Ok(pid) => pid,
            Err(e) => {
                let _ = wrapper.kill();
                let _ = wrapper.wait();
                return Err(e);
            }
        };
        log::debug!("started java (pid {pid}) under guard sh (pid {})", wrapper.id());
        Ok(GuardedJvm { wrapper, control, pid })
    }

    /// The JVM's pid.
    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    /// The JVM's exit status if it has exited, `None` while it runs (or is paused).
    pub(crate) fn exit_status(&mut self) -> Result<Option<ExitStatus>, ServerError> {
        self.wrapper
            .try_wait()
            .map_err(|e| ServerError::io("could not check the server process", e))
    }

    /// Whether the JVM still runs (a paused JVM runs).
    pub(crate) fn is_alive(&mut self) -> bool {
        matches!(self.exit_status(), Ok(None))
    }

    /// Sends `signal` (`STOP`, `CONT`, `TERM`, `KILL`) to the JVM if it still runs.
    pub(crate) fn signal(&mut self, signal: &'static str) -> Result<(), ServerError> {
        if !self.is_alive() {
            return Err(ServerError::NotRunning);
        }
        log::debug!("sending SIG{signal} to zookeeper (pid {})", self.pid);
        send_signal(self.pid, signal)
    }

    /// Stops the JVM with `SIGTERM`, then `SIGKILL` if it has not exited after `grace`.
    pub(crate) fn terminate(&mut self, grace: Duration) -> Result<ExitStatus, ServerError> {
        if let Some(status) = self.exit_status()? {
            return Ok(status);
        }
        // A paused JVM would hold SIGTERM pending forever.
        self.signal_if_alive("CONT")?;
        self.signal_if_alive("TERM")?;
        if let Some(status) = self.wait_exit(grace)? {
            return Ok(status);
        }
        log::info!("zookeeper (pid {}) ignored SIGTERM for {grace:?}; killing it", self.pid);
        self.kill()
    }

    /// Kills the JVM with `SIGKILL` and waits for it to be reaped.
    pub(crate) fn kill(&mut self) -> Result<ExitStatus, ServerError> {
        if let Some(status) = self.exit_status()? {
            return Ok(status);
        }
        self.signal_if_alive("KILL")?;
        match self.wait_exit(KILL_WAIT)? {
            Some(status) => Ok(status),
            None => Err(ServerError::io(
                format!("zookeeper (pid {}) survived SIGKILL", self.pid),
                std::io::ErrorKind::TimedOut.into(),
            )),
        }
    }

    fn signal_if_alive(&mut self, signal: &'static str) -> Result<(), ServerError> {
        match self.signal(signal) {
            Err(ServerError::NotRunning) => Ok(()),
            other => other,
        }
    }

    /// Polls the wrapper until it exits or `timeout` passes.
    fn wait_exit(&mut self, timeout: Duration) -> Result<Option<ExitStatus>, ServerError> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.exit_status()? {
                return Ok(Some(status));
            }
            if Instant::now() >= deadline {
                return Ok(None);
            }
            thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for GuardedJvm {
    fn drop(&mut self) {
        if let Err(e) = self.kill() {
            log::warn!("could not kill zookeeper (pid {}): {e}", self.pid);
        }
        // Closing the pipe only matters if the wrapper still runs; then the guard kills the JVM.
        drop(self.control.take());
    }
}

fn read_pid(wrapper: &mut Child) -> Result<u32, ServerError> {
    let stdout = wrapper
        .stdout
        .take()
        .ok_or_else(|| ServerError::io("the guard's stdout was not captured", std::io::ErrorKind::Other.into()))?;
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .map_err(|e| ServerError::io("could not read the java pid from the guard", e))?;
    line.trim().parse::<u32>().map_err(|e| {
        ServerError::io(
            format!("the guard printed {line:?} instead of the java pid"),
            std::io::Error::new(std::io::ErrorKind::InvalidData, e),
        )
    })
}

/// Sends `SIG<signal>` to `pid` through the shell's `kill` builtin (no `unsafe`, no procps).
pub(crate) fn send_signal(pid: u32, signal: &'static str) -> Result<(), ServerError> {
    let output = Command::new("sh")
        .arg("-c")
        .arg(r#"kill -s "$1" "$2""#)
        .arg("zk-testing-kill")
        .arg(signal)
        .arg(pid.to_string())
        .stdin(Stdio::null())
        .output()
        .map_err(|e| ServerError::io(format!("could not run kill -s {signal} {pid}"), e))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(ServerError::Signal {
            signal,
            pid,
            reason: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        })
    }
}

/// Waits until every thread of `pid` is stopped (`stopped`) or none is, as
/// `/proc/<pid>/task/*/stat` reports; a signal's group stop of a
/// multi-threaded process completes after `kill` returns. Gives up silently
/// after `timeout`, or at once where `/proc` is not available.
pub(crate) fn wait_for_stop_state(pid: u32, stopped: bool, timeout: Duration) {
    let deadline = Instant::now() + timeout;
    let tasks = format!("/proc/{pid}/task");
    loop {
        let Ok(entries) = std::fs::read_dir(&tasks) else { return };
        let all_match = entries.flatten().all(|task| {
            let state = std::fs::read_to_string(task.path().join("stat")).ok().and_then(|stat| {
                stat.rsplit_once(')')
                    .and_then(|(_, rest)| rest.trim_start().chars().next())
            });
            // A thread that vanished or cannot be read does not hold things up.
            state.is_none_or(|c| (c == 'T' || c == 't') == stopped)
        });
        if all_match || Instant::now() >= deadline {
            return;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Finds `java` in `$JAVA_HOME/bin`, then on `PATH`.
pub(crate) fn find_java() -> Result<PathBuf, ServerError> {
    let from_home = std::env::var_os("JAVA_HOME").map(|home| Path::new(&home).join("bin/java"));
    let on_path = std::env::var_os("PATH")
        .map(|path| {
            std::env::split_paths(&path)
                .map(|dir| dir.join("java"))
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    from_home
        .into_iter()
        .chain(on_path)
        .find(|candidate| candidate.is_file())
        .ok_or(ServerError::JavaNotFound)
}
