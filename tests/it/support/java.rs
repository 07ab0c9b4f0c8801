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
//! (see `interop/java/QueuePeer.java` for the modes). Items taken are printed
//! one per stdout line; [`run_peer`] and [`PeerProcess::wait`] return them.
//!
//! Requirements: `javac`/`java` (JDK 17) on `PATH` and the Debian packages
//! `zookeeper` and `libcurator-recipes-java` (jars in `/usr/share/java`).

use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{anyhow, bail, Context};

/// Where Debian installs the jars.
const JAR_DIR: &str = "/usr/share/java";

/// The jars the peer needs; together they are sufficient even without the
/// `Class-Path` entries of the jars' manifests.
const JARS: &[&str] = &[
    "zookeeper.jar",
    "zookeeper-jute.jar",
    "zookeeper-recipes-queue.jar",
    "curator-client.jar",
    "curator-framework.jar",
    "curator-recipes.jar",
    "guava.jar",
    "slf4j-api.jar",
    "slf4j-nop.jar",
];

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
        }
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

    /// Starts the peer in the background; see [`spawn_peer`].
    pub fn spawn(&self) -> anyhow::Result<PeerProcess> {
        let classpath = try_peer_classpath()?;
        let mut command = Command::new("java");
        command
            .arg(format!("-Dpeer.timeout.ms={}", self.timeout.as_millis()))
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
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| missing_tool_error("java", e))?;

        let stdout = child.stdout.take().expect("stdout is piped");
        let stderr = child.stderr.take().expect("stderr is piped");
        let stdout = thread::spawn(move || BufReader::new(stdout).lines().collect());
        let stderr = thread::spawn(move || {
            let mut text = String::new();
            // Best effort: whatever was read before an error is still useful.
            let _ = BufReader::new(stderr).read_to_string(&mut text);
            text
        });
        Ok(PeerProcess {
            child: Some(child),
            stdout: Some(stdout),
            stderr: Some(stderr),
            description: format!("Java peer `{}` on {}", self.mode, self.path),
            deadline: Instant::now() + self.timeout + KILL_GRACE,
        })
    }
}

/// A peer running in the background. Dropping it kills the process.
#[derive(Debug)]
pub struct PeerProcess {
    child: Option<Child>,
    stdout: Option<JoinHandle<std::io::Result<Vec<String>>>>,
    stderr: Option<JoinHandle<String>>,
    description: String,
    deadline: Instant,
}

impl PeerProcess {
    /// The operating-system process id.
    pub fn id(&self) -> u32 {
        self.child.as_ref().expect("child is present").id()
    }

    /// Waits for the peer to finish and returns its stdout lines.
    ///
    /// Fails, with the peer's stderr in the message, if it exits with a
    /// non-zero code or outlives its own timeout (then it is killed).
    pub fn wait(mut self) -> anyhow::Result<Vec<String>> {
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
        let stderr = self
            .stderr
            .take()
            .expect("stderr reader is present")
            .join()
            .unwrap_or_else(|_| "<stderr reader panicked>".to_owned());
        let stdout = self
            .stdout
            .take()
            .expect("stdout reader is present")
            .join()
            .map_err(|_| anyhow!("{}: stdout reader panicked", self.description))?;
        match status {
            Some(status) if status.success() => {
                stdout.with_context(|| format!("{}: reading stdout failed", self.description))
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
