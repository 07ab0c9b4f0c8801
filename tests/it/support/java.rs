//! Compiles and runs the Java queue peers in `interop/java/` so tests can share
//! a queue with the real Java recipes (classic ZooKeeper and Apache Curator).
//!
//! The sources are compiled once per test process into
//! `$CARGO_TARGET_TMPDIR/java-peers/<content hash>/`. The directory name is a
//! hash of the sources, the classpath and the `javac` flags, so an up-to-date
//! build is reused and any edit triggers a rebuild. Each build goes into a private temporary
//! directory that is then renamed into place, so concurrent test processes
//! never see a half-written build.
//!
//! The peer is `QueuePeer <mode> <connectString> <queuePath> <count> [prefix]`
//! (see `interop/java/QueuePeer.java` and `interop/java/CuratorModes.java` for
//! the modes). Items taken are printed one per stdout line; [`run_peer`] and
//! [`PeerProcess::wait`] return them, [`PeerProcess::wait_output`] also their
//! arrival times and the peer's stderr.
//!
//! The `curator-put*` modes read their items from stdin
//! ([`PeerCommand::stdin_lines`]); the `curator-*` modes take `-Dpeer.*`
//! options ([`PeerCommand::property`] and the typed setters such as
//! [`PeerCommand::lock_path`]).
//!
//! Requirements: `javac`/`java` (JDK 17) on `PATH` and the Debian packages
//! `zookeeper` and `libcurator-recipes-java` (jars in `/usr/share/java`).

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::{Arc, OnceLock};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{anyhow, bail, Context};

use super::peer_output::{Output, TimedLines};

include!("../../../interop/java/jars.rs");

/// Flags for `javac` besides paths. `-implicit:none` (with `-sourcepath` set to
/// the peers' directory) matters: some Debian jars also ship `.java` sources,
/// which `javac` would otherwise compile into the output.
const JAVAC_FLAGS: &[&str] = &["-encoding", "UTF-8", "-Xlint:all,-path,-processing", "-implicit:none"];

/// The peer's main class.
const MAIN_CLASS: &str = "QueuePeer";

/// The exit code with which the peer reports that its whole-run timeout passed.
pub const EXIT_TIMEOUT: i32 = 3;

/// The peer's default whole-run timeout.
pub const DEFAULT_PEER_TIMEOUT: Duration = Duration::from_secs(60);

/// How much longer than the peer's own timeout the Rust side waits before it
/// kills the process (covers JVM start-up and a slow machine).
const KILL_GRACE: Duration = Duration::from_secs(30);

/// What to do when the tools are missing.
const INSTALL_HINT: &str = "the Java interop tests need `javac`/`java` (JDK 17) and the Debian \
     packages `zookeeper` and `libcurator-recipes-java`; run the test command from README.md, \
     which installs them";

/// The classpath for running the peers: the compiled peers, then the jars.
///
/// Compiles the peers on first use. Panics if that fails; use [`run_peer`] or
/// [`spawn_peer`] to get the failure as an error instead.
pub fn peer_classpath() -> String {
    try_peer_classpath().unwrap_or_else(|e| panic!("{e:#}"))
}

/// [`peer_classpath`], returning failures as errors.
fn try_peer_classpath() -> anyhow::Result<String> {
    let classes = compiled_peers()?;
    Ok(format!("{}:{}", classes.display(), jar_classpath()))
}

/// The jars, joined with `:`.
fn jar_classpath() -> String {
    JARS.iter()
        .map(|jar| format!("{JAR_DIR}/{jar}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// The items a `*-offer` mode offers: `prefix + i` for `i` in `0..count`.
pub fn expected_items(prefix: &str, count: usize) -> Vec<String> {
    (0..count).map(|i| format!("{prefix}{i}")).collect()
}

/// Runs a peer to completion and returns the lines it printed on stdout
/// (the items taken; nothing for the offer modes).
///
/// Uses [`DEFAULT_PEER_TIMEOUT`]; see [`PeerCommand`] for other settings.
pub fn run_peer(mode: &str, connect: &str, path: &str, count: usize, prefix: &str) -> anyhow::Result<Vec<String>> {
    PeerCommand::new(mode, connect, path, count).prefix(prefix).run()
}

/// Starts a peer in the background; [`PeerProcess::wait`] collects its output.
///
/// Uses [`DEFAULT_PEER_TIMEOUT`]; see [`PeerCommand`] for other settings.
pub fn spawn_peer(mode: &str, connect: &str, path: &str, count: usize, prefix: &str) -> anyhow::Result<PeerProcess> {
    PeerCommand::new(mode, connect, path, count).prefix(prefix).spawn()
}

/// One invocation of the peer, with the settings [`run_peer`] leaves at their
/// defaults.
#[derive(Debug, Clone)]
pub struct PeerCommand {
    mode: String,
    connect: String,
    path: String,
    count: usize,
    prefix: Option<String>,
    timeout: Duration,
    /// `(key, value)` pairs passed as `-Dkey=value`, in order.
    properties: Vec<(String, String)>,
    /// Lines fed to the peer's stdin, which is then closed; `None`: no stdin.
    stdin_lines: Option<Vec<String>>,
    /// Stdin is kept open until [`PeerProcess::stop`] closes it.
    stdin_held: bool,
}

/// A Curator consumer's `ErrorMode` (`-Dpeer.errorMode`), consulted only in
/// lock-safe mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorMode {
    /// Re-create a failed item at the back of the queue (Curator's default).
    Requeue,
    /// Delete a failed item.
    Delete,
}

impl ErrorMode {
    fn as_str(self) -> &'static str {
        match self {
            ErrorMode::Requeue => "REQUEUE",
            ErrorMode::Delete => "DELETE",
        }
    }
}

impl PeerCommand {
    /// A peer in `mode` on the queue at `path`, handling `count` items.
    pub fn new(mode: &str, connect: &str, path: &str, count: usize) -> Self {
        PeerCommand {
            mode: mode.to_owned(),
            connect: connect.to_owned(),
            path: path.to_owned(),
            count,
            prefix: None,
            timeout: DEFAULT_PEER_TIMEOUT,
            properties: Vec::new(),
            stdin_lines: None,
            stdin_held: false,
        }
    }

    /// Feeds `lines` to the peer's stdin, each followed by `\n`, then closes
    /// it (the `curator-put*` modes read exactly `count` lines). Without this
    /// the peer's stdin is empty. Lines must not contain `\n` or `\r`.
    pub fn stdin_lines<I, S>(mut self, lines: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.stdin_lines = Some(lines.into_iter().map(Into::into).collect());
        self
    }

    /// Passes the Java system property `-D<key>=<value>` (the full key, e.g.
    /// `peer.lockPath`). Later settings of a key override earlier ones, and
    /// all of them override [`PeerCommand::timeout`]'s `peer.timeout.ms`.
    pub fn property(mut self, key: &str, value: impl ToString) -> Self {
        self.properties.push((key.to_owned(), value.to_string()));
        self
    }

    /// `-Dpeer.lockPath`: the Curator queue's lock path (lock-safe mode).
    pub fn lock_path(self, path: &str) -> Self {
        self.property("peer.lockPath", path)
    }

    /// `-Dpeer.failFirst`: the Curator consumer throws for its first `n`
    /// deliveries (printing `failed <item>` on stderr, nothing on stdout).
    pub fn fail_first(self, n: usize) -> Self {
        self.property("peer.failFirst", n)
    }

    /// `-Dpeer.errorMode`: the Curator consumer's error mode (needs a lock path).
    pub fn error_mode(self, mode: ErrorMode) -> Self {
        self.property("peer.errorMode", mode.as_str())
    }

    /// `-Dpeer.consumeDelayMs`: the Curator consumer sleeps this long at the
    /// start of every delivery, holding the item (and its lock, if any).
    pub fn consume_delay(self, delay: Duration) -> Self {
        self.property("peer.consumeDelayMs", delay.as_millis())
    }

    /// `-Dpeer.stopAtStdinEof`: the consumer runs until its count is
    /// reached or [`PeerProcess::stop`] closes its stdin, whichever comes
    /// first; then it dispatches nothing more and exits once the item being
    /// processed is printed. For a consumer that competes with others and
    /// may never reach its count. Not with [`PeerCommand::stdin_lines`].
    pub fn stop_at_stdin_eof(mut self) -> Self {
        self.stdin_held = true;
        self.property("peer.stopAtStdinEof", true)
    }

    /// The prefix of offered items (the peer's default is `item-`).
    pub fn prefix(mut self, prefix: &str) -> Self {
        self.prefix = Some(prefix.to_owned());
        self
    }

    /// The peer's whole-run timeout, after which it exits with [`EXIT_TIMEOUT`].
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Runs the peer to completion; see [`run_peer`].
    pub fn run(&self) -> anyhow::Result<Vec<String>> {
        self.spawn()?.wait()
    }

    /// Runs the peer to completion and returns its whole output; see
    /// [`PeerProcess::wait_output`].
    pub fn run_output(&self) -> anyhow::Result<PeerOutput> {
        self.spawn()?.wait_output()
    }

    /// Starts the peer in the background; see [`spawn_peer`].
    pub fn spawn(&self) -> anyhow::Result<PeerProcess> {
        if self.stdin_held && self.stdin_lines.is_some() {
            bail!("a Java peer's stdin is either fed lines or held open until stop, not both");
        }
        let stdin_text = match &self.stdin_lines {
            Some(lines) => {
                if let Some(bad) = lines.iter().find(|line| line.contains(['\n', '\r'])) {
                    bail!("a stdin line for the Java peer contains a line break: {bad:?}");
                }
                Some(lines.iter().flat_map(|line| [line.as_str(), "\n"]).collect::<String>())
            }
            None => None,
        };
        let classpath = try_peer_classpath()?;
        let mut command = Command::new("java");
        command.arg(format!("-Dpeer.timeout.ms={}", self.timeout.as_millis()));
        for (key, value) in &self.properties {
            command.arg(format!("-D{key}={value}"));
        }
        command
            // Quick start-up and a small footprint: many peers may run at once.
            .args(["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx256m"])
            .arg("-cp")
            .arg(&classpath)
            .arg(MAIN_CLASS)
            .args([&self.mode, &self.connect, &self.path])
            .arg(self.count.to_string());
        if let Some(prefix) = &self.prefix {
            command.arg(prefix);
        }
        let mut child = command
            .stdin(if stdin_text.is_some() || self.stdin_held {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| missing_tool_error("java", e))?;

        // A thread, so a large input cannot deadlock against the peer's output.
        // Write errors (the peer exited early, e.g. on a bad mode) are ignored:
        // the exit status tells what happened.
        let held_stdin = if self.stdin_held { child.stdin.take() } else { None };
        let stdin = stdin_text.map(|text| {
            let mut pipe = child.stdin.take().expect("stdin is piped");
            thread::spawn(move || {
                let _ = pipe.write_all(text.as_bytes());
                // Dropping the pipe closes it: the peer sees EOF.
            })
        });
        let stdout = child.stdout.take().expect("stdout is piped");
        let stderr = child.stderr.take().expect("stderr is piped");
        let stdout_log = Arc::new(Output::default());
        let log = Arc::clone(&stdout_log);
        let stdout = thread::spawn(move || log.read_lines(stdout));
        let stderr_log = Arc::new(Output::default());
        let log = Arc::clone(&stderr_log);
        let stderr = thread::spawn(move || log.read_text(stderr));
        Ok(PeerProcess {
            child: Some(child),
            held_stdin,
            stdin,
            stdout: Some(stdout),
            stdout_log,
            stderr: Some(stderr),
            stderr_log,
            description: format!("Java peer `{}` on {}", self.mode, self.path),
            deadline: Instant::now() + self.timeout + KILL_GRACE,
        })
    }
}

/// Everything a successful peer run printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerOutput {
    /// The stdout lines (items taken, or names listed).
    pub lines: Vec<String>,
    /// When the test process read each line of `lines` (same index), by the
    /// wall clock, so it can be compared with epoch times given to the peer.
    pub arrivals: Vec<SystemTime>,
    /// Everything the peer wrote on stderr (e.g. `failed <item>` lines, and
    /// `done <count>` last).
    pub stderr: String,
}

impl PeerOutput {
    /// The `<x>` of every stderr line `<tag> <x>`, in order (e.g. tag
    /// `failed` gives the items whose delivery the consumer failed).
    pub fn stderr_tagged(&self, tag: &str) -> Vec<String> {
        self.stderr
            .lines()
            .filter_map(|line| line.strip_prefix(tag)?.strip_prefix(' '))
            .map(str::to_owned)
            .collect()
    }
}

/// A peer running in the background. Dropping it kills the process.
#[derive(Debug)]
pub struct PeerProcess {
    child: Option<Child>,
    /// The open stdin of a [`PeerCommand::stop_at_stdin_eof`] peer.
    held_stdin: Option<ChildStdin>,
    stdin: Option<JoinHandle<()>>,
    stdout: Option<JoinHandle<std::io::Result<()>>>,
    stdout_log: Arc<Output<TimedLines>>,
    stderr: Option<JoinHandle<()>>,
    stderr_log: Arc<Output<String>>,
    description: String,
    deadline: Instant,
}

impl PeerProcess {
    /// The operating-system process id.
    pub fn id(&self) -> u32 {
        self.child.as_ref().expect("child is present").id()
    }

    /// Waits until a `curator-consume*` peer has started its queue (it prints
    /// `ready` on stderr), so items put from now on are seen by its watch.
    ///
    /// Fails if the peer exits first or `timeout` passes.
    pub fn wait_ready(&self, timeout: Duration) -> anyhow::Result<()> {
        self.wait_for_stderr_line("ready", timeout)
    }

    /// How many lines the peer has printed on stdout so far (for a
    /// consumer: the items taken), so a test can wait on any of several
    /// peers.
    pub fn lines_printed(&self) -> usize {
        self.stdout_log.with(|lines| lines.len())
    }

    /// Waits until the peer has printed at least `n` lines on stdout (for a
    /// consumer: taken `n` items), so a test can hold a competitor back
    /// until the peer has taken part.
    ///
    /// Fails, with the stderr so far, if the peer closes stdout (exits)
    /// first or `timeout` passes.
    pub fn wait_for_lines(&self, n: usize, timeout: Duration) -> anyhow::Result<()> {
        let unmet = match self
            .stdout_log
            .wait_until(Instant::now() + timeout, |lines| lines.len() >= n)
        {
            Ok(()) => return Ok(()),
            Err(unmet) => unmet,
        };
        let printed = self.lines_printed();
        bail!(
            "{} {} after printing {printed} of {n} lines on stdout\n--- peer stderr ---\n{}",
            self.description,
            unmet.as_str(),
            self.stderr_log.with(|text| text.trim_end().to_owned())
        );
    }

    /// Waits until the peer has printed `line` as a whole line on stderr.
    ///
    /// Fails, with the stderr so far, if the peer closes stderr (exits) first
    /// or `timeout` passes.
    pub fn wait_for_stderr_line(&self, line: &str, timeout: Duration) -> anyhow::Result<()> {
        let deadline = Instant::now() + timeout;
        let unmet = match self
            .stderr_log
            .wait_until(deadline, |text| text.lines().any(|l| l == line))
        {
            Ok(()) => return Ok(()),
            Err(unmet) => unmet,
        };
        bail!(
            "{} {} before printing {line:?} on stderr\n--- peer stderr ---\n{}",
            self.description,
            unmet.as_str(),
            self.stderr_log.with(|text| text.trim_end().to_owned())
        );
    }

    /// Closes the stdin of a [`PeerCommand::stop_at_stdin_eof`] peer, so it
    /// finishes the item it is processing and exits, then returns its
    /// stdout lines as [`PeerProcess::wait`] does.
    pub fn stop(mut self) -> anyhow::Result<Vec<String>> {
        if self.held_stdin.take().is_none() {
            bail!("{}: stop needs a peer started with stop_at_stdin_eof", self.description);
        }
        self.wait()
    }

    /// Waits for the peer to finish and returns its stdout lines.
    ///
    /// Fails, with the peer's stderr in the message, if it exits with a
    /// non-zero code or outlives its own timeout (then it is killed).
    pub fn wait(self) -> anyhow::Result<Vec<String>> {
        self.wait_output().map(|output| output.lines)
    }

    /// Like [`PeerProcess::wait`], but also returns when each stdout line was
    /// read and the peer's stderr.
    pub fn wait_output(mut self) -> anyhow::Result<PeerOutput> {
        let mut child = self.child.take().expect("child is present");
        let status = loop {
            if let Some(status) = child.try_wait()? {
                break Some(status);
            }
            if Instant::now() >= self.deadline {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            thread::sleep(Duration::from_millis(20));
        };
        let stderr = match self.stderr.take().expect("stderr reader is present").join() {
            Ok(()) => self.stderr_log.with(std::mem::take),
            Err(_) => "<stderr reader panicked>".to_owned(),
        };
        let stdout = self
            .stdout
            .take()
            .expect("stdout reader is present")
            .join()
            .map_err(|_| anyhow!("{}: stdout reader panicked", self.description))?
            .map(|()| self.stdout_log.with(std::mem::take));
        if let Some(stdin) = self.stdin.take() {
            // The child has exited, so its end of the pipe is closed and the
            // writer has finished or failed.
            let _ = stdin.join();
        }
        match status {
            Some(status) if status.success() => {
                let timed = stdout.with_context(|| format!("{}: reading stdout failed", self.description))?;
                let (arrivals, lines) = timed.into_iter().unzip();
                Ok(PeerOutput {
                    lines,
                    arrivals,
                    stderr,
                })
            }
            Some(status) => bail!(
                "{} {}\n--- peer stderr ---\n{}",
                self.description,
                describe_exit(status),
                stderr.trim_end()
            ),
            None => bail!(
                "{} was still running after its timeout plus {:?} and was killed\n\
                 --- peer stderr ---\n{}",
                self.description,
                KILL_GRACE,
                stderr.trim_end()
            ),
        }
    }
}

impl Drop for PeerProcess {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// "exited with code 3 (peer timeout)" and the like.
fn describe_exit(status: ExitStatus) -> String {
    match status.code() {
        Some(EXIT_TIMEOUT) => format!("exited with code {EXIT_TIMEOUT} (peer timed out)"),
        Some(code) => format!("exited with code {code}"),
        None => format!("was terminated ({status})"),
    }
}

/// An error for a tool that could not be started.
fn missing_tool_error(tool: &str, error: std::io::Error) -> anyhow::Error {
    if error.kind() == std::io::ErrorKind::NotFound {
        anyhow!("`{tool}` was not found: {INSTALL_HINT}")
    } else {
        anyhow!("could not start `{tool}`: {error}")
    }
}

/// The directory of compiled peer classes, compiling them on first use.
fn compiled_peers() -> anyhow::Result<&'static Path> {
    static COMPILED: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    COMPILED
        .get_or_init(|| compile_peers().map_err(|e| format!("{e:#}")))
        .as_deref()
        .map_err(|e| anyhow!("compiling the Java peers failed: {e}"))
}

/// Compiles the peers unless an up-to-date build exists; returns its directory.
fn compile_peers() -> anyhow::Result<PathBuf> {
    let missing: Vec<_> = JARS
        .iter()
        .filter(|jar| !Path::new(JAR_DIR).join(jar).is_file())
        .collect();
    if !missing.is_empty() {
        bail!("missing jars in {JAR_DIR}: {missing:?}; {INSTALL_HINT}");
    }

    let source_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("interop/java");
    let mut sources = Vec::new();
    collect_sources(&source_dir, &mut sources).with_context(|| format!("listing {}", source_dir.display()))?;
    sources.sort();
    if sources.is_empty() {
        bail!("no Java sources in {}", source_dir.display());
    }

    let classpath = jar_classpath();
    let mut hash = Fnv64::new();
    hash.write(classpath.as_bytes());
    for flag in JAVAC_FLAGS {
        hash.write(flag.as_bytes());
    }
    for source in &sources {
        let relative = source.strip_prefix(&source_dir).unwrap_or(source);
        hash.write(relative.to_string_lossy().as_bytes());
        hash.write(&fs::read(source).with_context(|| format!("reading {}", source.display()))?);
    }

    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("java-peers");
    let output = root.join(format!("{:016x}", hash.finish()));
    if output.is_dir() {
        return Ok(output);
    }

    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let staging = root.join(format!(".build-{}-{nanos}", std::process::id()));
    fs::create_dir_all(&staging).with_context(|| format!("creating {}", staging.display()))?;

    let started = Instant::now();
    let result = Command::new("javac")
        .args(JAVAC_FLAGS)
        .arg("-sourcepath")
        .arg(&source_dir)
        .arg("-d")
        .arg(&staging)
        .arg("-cp")
        .arg(&classpath)
        .args(&sources)
        .stdin(Stdio::null())
        .output();
    let result = match result {
        Ok(result) => result,
        Err(e) => {
            let _ = fs::remove_dir_all(&staging);
            return Err(missing_tool_error("javac", e));
        }
    };
    if !result.status.success() {
        let _ = fs::remove_dir_all(&staging);
        bail!(
            "javac {}:\n{}{}",
            describe_exit(result.status),
            String::from_utf8_lossy(&result.stdout),
            String::from_utf8_lossy(&result.stderr)
        );
    }
    eprintln!(
        "compiled the Java peers into {} in {:?}",
        output.display(),
        started.elapsed()
    );

    // The rename publishes the build atomically; if another process won the
    // race its build is identical, so use that one.
    if let Err(e) = fs::rename(&staging, &output) {
        let _ = fs::remove_dir_all(&staging);
        if !output.is_dir() {
            return Err(e).with_context(|| format!("moving the build to {}", output.display()));
        }
    }
    Ok(output)
}

/// Appends the `.java` files under `dir` (recursively) to `out`.
fn collect_sources(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            collect_sources(&path, out)?;
        } else if path.extension().is_some_and(|ext| ext == "java") {
            out.push(path);
        }
    }
    Ok(())
}

/// 64-bit FNV-1a: a hash that, unlike `DefaultHasher`, is stable across Rust
/// releases, so build directories stay valid.
struct Fnv64(u64);

impl Fnv64 {
    fn new() -> Self {
        Fnv64(0xcbf2_9ce4_8422_2325)
    }

    /// Hashes `bytes` followed by their length, so fields cannot run together.
    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes.iter().chain(&(bytes.len() as u64).to_le_bytes()) {
            self.0 ^= u64::from(byte);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}
