//! Runs `interop/python/kazoo_peer.py`: kazoo's own `Queue` and
//! `LockingQueue` in a Python process, sharing a queue with the tests.
//!
//! The interpreter is `$KAZOO_PYTHON`, else `/usr/bin/python3` (Debian's,
//! which sees the `python3-kazoo` package), else `python3` on `PATH`. A
//! missing interpreter or kazoo fails the test with a hint, never skips it.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::OnceLock;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use serde_json::Value;

/// What to do when the tools are missing.
const INSTALL_HINT: &str = "the kazoo interop tests need Python 3 with kazoo: the Debian package \
     `python3-kazoo` (scripts/install-deps.sh installs it), or set KAZOO_PYTHON to an \
     interpreter that imports kazoo";

/// The peer's own whole-run timeout (it exits with code 3 after it).
const PEER_TIMEOUT: Duration = Duration::from_secs(90);

/// The longest wait for a line the peer is expected to print: a kazoo
/// client's start and a few requests on a loaded machine.
pub const LINE_WAIT: Duration = Duration::from_secs(30);

/// The interpreter, checked once to import kazoo; panics with the hint if it
/// cannot.
fn python() -> &'static str {
    static PYTHON: OnceLock<Result<String, String>> = OnceLock::new();
    let found = PYTHON.get_or_init(|| {
        let python = std::env::var("KAZOO_PYTHON").unwrap_or_else(|_| {
            if Path::new("/usr/bin/python3").is_file() {
                "/usr/bin/python3".to_owned()
            } else {
                "python3".to_owned()
            }
        });
        match Command::new(&python).args(["-c", "import kazoo.recipe.queue"]).output() {
            Ok(out) if out.status.success() => Ok(python),
            Ok(out) => Err(format!(
                "`{python}` cannot import kazoo ({}): {INSTALL_HINT}",
                String::from_utf8_lossy(&out.stderr).trim()
            )),
            Err(e) => Err(format!("cannot run `{python}` ({e}): {INSTALL_HINT}")),
        }
    });
    match found {
        Ok(python) => python,
        Err(e) => panic!("{e}"),
    }
}

/// A running kazoo peer; killed when dropped.
pub struct KazooPeer {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    stderr: Option<JoinHandle<String>>,
    description: String,
}

impl KazooPeer {
    /// Starts `kazoo_peer.py <args...>` and waits until its kazoo client is
    /// connected.
    pub fn spawn(args: &[&str]) -> KazooPeer {
        KazooPeer::spawn_with(args, false)
    }

    /// Like [`spawn`](Self::spawn); with `wait_go`, a get or consume peer
    /// starts only on [`send`](Self::send)`("go")`.
    pub fn spawn_with(args: &[&str], wait_go: bool) -> KazooPeer {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("interop/python/kazoo_peer.py");
        assert!(script.is_file(), "{} is missing", script.display());
        let mut child = Command::new(python())
            .arg(&script)
            .args(args)
            .env("PEER_TIMEOUT", PEER_TIMEOUT.as_secs().to_string())
            .env("PEER_WAIT_GO", if wait_go { "1" } else { "0" })
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("starting the kazoo peer: {e}: {INSTALL_HINT}"));
        let stdout = child.stdout.take().expect("stdout is piped");
        let mut stderr = child.stderr.take().expect("stderr is piped");
        let (tx, lines) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = thread::spawn(move || {
            let mut text = String::new();
            let _ = stderr.read_to_string(&mut text);
            text
        });
        let mut peer = KazooPeer {
            stdin: child.stdin.take(),
            child,
            lines,
            stderr: Some(stderr),
            description: format!("kazoo peer {args:?}"),
        };
        let ready = peer.next_line();
        assert_eq!(ready["ready"], true, "{}: first line {ready}", peer.description);
        peer
    }

    /// The next JSON line the peer prints; panics (with its stderr) if none
    /// comes within [`LINE_WAIT`].
    pub fn next_line(&mut self) -> Value {
        match self.lines.recv_timeout(LINE_WAIT) {
            Ok(line) => {
                serde_json::from_str(&line).unwrap_or_else(|e| panic!("{}: bad line {line:?}: {e}", self.description))
            }
            Err(RecvTimeoutError::Timeout) => self.fail(&format!("no line within {LINE_WAIT:?}")),
            Err(RecvTimeoutError::Disconnected) => self.fail("exited before the line expected"),
        }
    }

    /// The next JSON line if one comes within `wait`; `None` if none does
    /// (or the peer's output ended).
    pub fn try_next_line(&mut self, wait: Duration) -> Option<Value> {
        let line = self.lines.recv_timeout(wait).ok()?;
        Some(serde_json::from_str(&line).unwrap_or_else(|e| panic!("{}: bad line {line:?}: {e}", self.description)))
    }

    /// Sends one line to the peer's stdin.
    pub fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        writeln!(stdin, "{line}")
            .and_then(|()| stdin.flush())
            .unwrap_or_else(|e| panic!("{}: {e}", self.description));
    }

    /// Closes its stdin, reads every line left and checks that it exited
    /// with success within [`LINE_WAIT`].
    pub fn finish(mut self) -> Vec<Value> {
        drop(self.stdin.take());
        let deadline = Instant::now() + LINE_WAIT;
        let mut rest = Vec::new();
        loop {
            match self
                .lines
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            {
                Ok(line) => rest.push(serde_json::from_str(&line).expect("a JSON line")),
                Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => self.fail("did not finish"),
            }
        }
        while Instant::now() < deadline {
            match self.child.try_wait() {
                Ok(Some(status)) if status.success() => return rest,
                Ok(Some(status)) => self.fail(&format!("exited with {status}")),
                Ok(None) => thread::sleep(Duration::from_millis(20)),
                Err(e) => self.fail(&format!("waiting for it: {e}")),
            }
        }
        self.fail("did not exit")
    }

    /// Kills the peer and panics with what went wrong and its stderr.
    fn fail(&mut self, what: &str) -> ! {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let stderr = self.stderr.take().and_then(|h| h.join().ok()).unwrap_or_default();
        panic!("{}: {what}; stderr:\n{stderr}", self.description)
    }
}

impl Drop for KazooPeer {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Puts `items` (priority, data) in order through kazoo's `Queue`
/// (`kind` "queue") or `LockingQueue` ("locking") at `path`.
pub fn kazoo_put(connect: &str, path: &str, kind: &str, items: &[(u16, String)]) {
    let mut peer = KazooPeer::spawn(&["put", connect, path, kind]);
    for (priority, data) in items {
        peer.send(&format!("{priority} {data}"));
        let put = peer.next_line();
        assert_eq!(put["put"], data.as_str(), "kazoo put {put}");
    }
    peer.finish();
}
