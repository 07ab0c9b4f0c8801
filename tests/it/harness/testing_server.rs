//! The test harness itself: `zk_queue::testing::TestingServer` starts a real server, injects
//! faults, and never leaves a JVM behind.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use zk_queue::testing::{ServerError, TestingServer};
use zk_queue::{client::CreateMode, ZkClient};

use crate::support::server::{shared_connect_string, shared_server, unique_path, zookeeper_jvm_runs};

/// Environment variable that makes the orphan helper run (its value is the way it leaves).
const ORPHAN_MODE: &str = "ZK_QUEUE_ORPHAN_HELPER";
/// Full name of the orphan helper test, run in a child process.
const ORPHAN_HELPER: &str = "harness::testing_server::orphan_helper_starts_a_server_and_leaves_without_drop";
/// Line prefix through which the orphan helper reports its server.
const ORPHAN_MARKER: &str = "orphan-check ";

fn connect(connect: &str) -> anyhow::Result<ZkClient> {
    ZkClient::builder(connect)
        .session_timeout(Duration::from_secs(5))
        .connection_timeout(Duration::from_secs(5))
        .connect()
        .with_context(|| format!("connecting to {connect}"))
}

/// Polls `condition` every 20 ms until it holds or `timeout` passes; returns whether it held.
fn wait_until(timeout: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if condition() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        thread::sleep(Duration::from_millis(20));
    }
}

/// The server's temporary directory (zoo.cfg, server.log, data/).
fn root_dir(server: &TestingServer) -> PathBuf {
    server.data_dir().parent().expect("data dir has a parent").to_path_buf()
}

#[test]
fn server_answers_ruok_after_start() -> anyhow::Result<()> {
    let server = TestingServer::start()?;
    assert!(server.ruok());
    assert!(server.is_running());
    let pid = server.pid().context("a started server has a pid")?;
    assert!(zookeeper_jvm_runs(pid), "pid {pid} is not a zookeeper jvm");
    assert_eq!(server.connect_string(), format!("127.0.0.1:{}", server.port()));
    assert!(server.data_dir().join("version-2").is_dir());
    // The server's output goes to its log file, not to the test's terminal.
    let log = std::fs::read_to_string(server.log_path())?;
    assert!(
        log.contains("ZooKeeperServerMain") || log.contains("binding to port"),
        "{log}"
    );
    Ok(())
}

#[test]
fn builder_settings_reach_the_server() -> anyhow::Result<()> {
    let server = TestingServer::builder()
        .tick_time(Duration::from_millis(100))
        .min_session_timeout(Duration::from_millis(300))
        .max_session_timeout(Duration::from_secs(7))
        .container_check_interval(Duration::from_millis(250))
        .jute_max_buffer(2 << 20)
        .start()?;
    let conf = server.four_letter_word("conf", Duration::from_secs(5))?;
    for line in ["tickTime=100", "minSessionTimeout=300", "maxSessionTimeout=7000"] {
        assert!(conf.lines().any(|l| l == line), "{line} missing from conf:\n{conf}");
    }
    let pid = server.pid().context("running server has a pid")?;
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline"))?;
    let args: Vec<&str> = std::str::from_utf8(&cmdline)?.split('\0').collect();
    assert!(args.contains(&"-Dznode.container.checkIntervalMs=250"), "{args:?}");
    assert!(args.contains(&"-Djute.maxbuffer=2097152"), "{args:?}");
    Ok(())
}

#[test]
fn restart_reuses_port_and_answers_again() -> anyhow::Result<()> {
    let mut server = TestingServer::start()?;
    let port = server.port();
    let data_dir = server.data_dir().to_path_buf();
    let old_pid = server.pid().context("running server has a pid")?;
    server.restart()?;
    assert_eq!(server.port(), port);
    assert_eq!(server.data_dir(), data_dir);
    let new_pid = server.pid().context("restarted server has a pid")?;
    assert_ne!(new_pid, old_pid, "restart must start a new jvm");
    assert!(!zookeeper_jvm_runs(old_pid), "the old jvm {old_pid} still runs");
    assert!(server.ruok());
    Ok(())
}

#[test]
fn pause_stops_answers_until_resume() -> anyhow::Result<()> {
    let server = TestingServer::start()?;
    server.pause()?;
    let paused = server.four_letter_word("ruok", Duration::from_millis(300));
    let resumed = server.resume();
    match paused {
        Err(ServerError::Io { source, .. }) => assert!(
            matches!(
                source.kind(),
                std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock
            ),
            "a paused server must time out, got {source:?}"
        ),
        other => bail!("a paused server answered ruok: {other:?}"),
    }
    resumed?;
    assert!(server.is_running());
    assert!(server.ruok());
    Ok(())
}

#[test]
fn kill_then_restart_recovers() -> anyhow::Result<()> {
    let mut server = TestingServer::start()?;
    let path = unique_path("kill-restart");
    {
        let client = connect(&server.connect_string())?;
        client.ensure_path("/it")?;
        client.create(&path, b"kept", CreateMode::Persistent)?;
    }
    let pid = server.pid().context("running server has a pid")?;
    server.kill()?;
    assert!(!server.is_running());
    assert!(!zookeeper_jvm_runs(pid), "killed jvm {pid} still runs");
    assert!(!server.ruok());
    assert!(matches!(server.pause(), Err(ServerError::NotRunning)));
    server.restart()?;
    let client = connect(&server.connect_string())?;
    let (data, _) = client.get_data(&path)?;
    assert_eq!(data, b"kept");
    Ok(())
}

#[test]
fn stop_is_graceful_and_keeps_data() -> anyhow::Result<()> {
    let mut server = TestingServer::start()?;
    let pid = server.pid().context("running server has a pid")?;
    server.pause()?;
    // Stopping a paused server resumes it first, so SIGTERM is handled, not left pending.
    let started = Instant::now();
    server.stop()?;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "stop needed {:?}",
        started.elapsed()
    );
    assert!(!zookeeper_jvm_runs(pid));
    assert!(!server.is_running());
    server.stop()?; // stopping a stopped server does nothing
    assert!(server.data_dir().join("version-2").is_dir());
    server.restart()?;
    assert!(server.ruok());
    Ok(())
}

#[test]
fn drop_stops_the_jvm() -> anyhow::Result<()> {
    let server = TestingServer::start()?;
    let pid = server.pid().context("running server has a pid")?;
    let root = root_dir(&server);
    server.pause()?; // dropping must work on a paused server too
    drop(server);
    assert!(!zookeeper_jvm_runs(pid), "jvm {pid} survived drop");
    assert!(!root.exists(), "{} survived drop", root.display());
    Ok(())
}

#[test]
fn taken_port_is_reported() -> anyhow::Result<()> {
    let holder = TcpListener::bind("127.0.0.1:0")?;
    let port = holder.local_addr()?.port();
    let result = TestingServer::builder().port(port).start();
    match result {
        Err(ServerError::PortInUse { port: reported, .. }) => assert_eq!(reported, port),
        other => bail!("expected PortInUse for port {port}, got {other:?}"),
    }
    Ok(())
}

#[test]
fn startup_is_bounded() {
    let bound = Duration::from_millis(100);
    let started = Instant::now();
    let result = TestingServer::builder().startup_timeout(bound).start();
    assert!(
        matches!(result, Err(ServerError::NotReady { timeout, .. }) if timeout == bound),
        "a jvm cannot serve within {bound:?}: {result:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "gave up after {:?}",
        started.elapsed()
    );
}

#[test]
fn shared_server_is_started_once() {
    let connects: Vec<String> = (0..4)
        .map(|_| thread::spawn(shared_connect_string))
        .collect::<Vec<_>>()
        .into_iter()
        .map(|handle| handle.join().expect("shared_connect_string panicked"))
        .collect();
    assert!(connects.windows(2).all(|w| w[0] == w[1]), "{connects:?}");
    if std::env::var_os("ZK_CONNECT").is_none() {
        let server = shared_server();
        assert_eq!(server.connect_string(), connects[0]);
        let pid = server.pid().expect("the shared server runs");
        assert_eq!(shared_server().pid(), Some(pid));
        assert!(server.ruok());
    }
}

#[test]
fn unique_paths_differ() {
    let a = unique_path("same");
    let b = unique_path("same");
    assert_ne!(a, b);
    assert!(a.starts_with("/it/same-"), "{a}");
}

/// Runs the orphan helper in a child test process; returns it with its server's pid and dir.
fn spawn_orphan_helper(mode: &str) -> anyhow::Result<(Child, u32, PathBuf)> {
    let mut child = Command::new(std::env::current_exe()?)
        .args([ORPHAN_HELPER, "--exact", "--ignored", "--nocapture", "--test-threads=1"])
        .env(ORPHAN_MODE, mode)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let stdout = child.stdout.take().context("child stdout")?;
    let mut transcript = String::new();
    for line in BufReader::new(stdout).lines() {
        let line = line?;
        if let Some(report) = line.find(ORPHAN_MARKER).map(|at| &line[at + ORPHAN_MARKER.len()..]) {
            let (pid, dir) = report.split_once(' ').context("marker has pid and dir")?;
            return Ok((child, pid.parse()?, PathBuf::from(dir)));
        }
        transcript.push_str(&line);
        transcript.push('\n');
    }
    let mut stderr = String::new();
    if let Some(mut err) = child.stderr.take() {
        err.read_to_string(&mut stderr)?;
    }
    let _ = child.wait();
    bail!("the orphan helper reported no server:\n{transcript}\n{stderr}")
}

fn assert_cleaned_up(pid: u32, dir: &Path) {
    assert!(
        wait_until(Duration::from_secs(10), || !zookeeper_jvm_runs(pid)),
        "zookeeper jvm {pid} outlived its test process"
    );
    assert!(
        wait_until(Duration::from_secs(10), || !dir.exists()),
        "{} outlived its test process",
        dir.display()
    );
}

#[test]
fn server_dies_when_its_test_process_is_killed() -> anyhow::Result<()> {
    let (mut child, pid, dir) = spawn_orphan_helper("hang")?;
    assert!(zookeeper_jvm_runs(pid), "the helper's server {pid} is not running");
    child.kill()?; // SIGKILL: no destructor, no exit handler runs
    child.wait()?;
    assert_cleaned_up(pid, &dir);
    Ok(())
}

#[test]
fn server_dies_when_its_test_process_exits_without_drop() -> anyhow::Result<()> {
    let (mut child, pid, dir) = spawn_orphan_helper("exit")?;
    let status = child.wait()?;
    assert!(status.success(), "helper failed: {status}");
    assert_cleaned_up(pid, &dir);
    Ok(())
}

/// Not a test of its own: the two `server_dies_when_its_test_process_*` tests run it in a child
/// process, with `ZK_QUEUE_ORPHAN_HELPER` set to how it should leave. Without that variable it
/// does nothing, so `cargo test -- --ignored` stays harmless.
#[test]
#[ignore = "run in a child process by the server_dies_when_its_test_process_* tests"]
fn orphan_helper_starts_a_server_and_leaves_without_drop() {
    let Ok(mode) = std::env::var(ORPHAN_MODE) else {
        return;
    };
    // Like the shared server: in a static that is never dropped.
    static SERVER: OnceLock<TestingServer> = OnceLock::new();
    let server = SERVER.get_or_init(|| TestingServer::start().expect("start the helper's server"));
    assert!(server.ruok());
    let pid = server.pid().expect("the helper's server runs");
    let mut out = std::io::stdout().lock();
    writeln!(out, "\n{ORPHAN_MARKER}{pid} {}", root_dir(server).display()).expect("report");
    out.flush().expect("flush");
    drop(out);
    if mode == "exit" {
        std::process::exit(0);
    }
    thread::sleep(Duration::from_secs(60));
}
