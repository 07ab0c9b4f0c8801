//! The ZooKeeper server shared by the tests of this binary, and unique znode paths for them.
//!
//! Tests that inject no fault use [`shared_connect_string`]: one server per test process
//! (or the one named by `ZK_CONNECT`), each test under its own [`unique_path`]. Fault tests
//! start their own `TestingServer`.
//!
//! The shared server does not fsync its transaction log (`force_sync(false)`): the tests
//! measure the client's and the recipes' bounds, and on a machine shared with other work
//! an fsync can stall every write of every test for seconds. Its data still survives a
//! process kill; only an operating-system crash could lose it, and no test makes one.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

use zk_queue::testing::{connect_string_from_env, TestingServer};

static SHARED: OnceLock<TestingServer> = OnceLock::new();

/// Connect string of the server shared by all tests of this binary: `ZK_CONNECT` if set, else a
/// `TestingServer` started once, lazily (`OnceLock`), and kept for the life of the process.
///
/// The server is never dropped; its guard kills it when the test process exits.
pub fn shared_connect_string() -> String {
    match connect_string_from_env() {
        Some(connect) => connect,
        None => shared_server().connect_string(),
    }
}

/// The server behind [`shared_connect_string`], started on first use.
///
/// Use it only to observe the server (`ruok`, `four_letter_word`); faults on it would break the
/// other tests. Ignores `ZK_CONNECT`.
pub fn shared_server() -> &'static TestingServer {
    SHARED.get_or_init(|| {
        TestingServer::builder().force_sync(false).start().unwrap_or_else(|e| {
            panic!("could not start the shared zookeeper (set ZK_CONNECT to use an existing one): {e}")
        })
    })
}

/// A unique znode path for one test, `/it/<name>-<pid>-<counter>-<nanos>`, so tests run in
/// parallel and re-runs against an external server never collide.
pub fn unique_path(name: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let counter = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| elapsed.as_nanos())
        .unwrap_or_default();
    format!("/it/{name}-{}-{counter}-{nanos}", std::process::id())
}

/// Whether a ZooKeeper server JVM runs with process id `pid` (Linux: reads `/proc`).
///
/// A pid that was reused by another program does not count.
pub fn zookeeper_jvm_runs(pid: u32) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|cmdline| String::from_utf8_lossy(&cmdline).contains("ZooKeeperServerMain"))
        .unwrap_or(false)
}
