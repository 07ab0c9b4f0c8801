//! Shared helpers for the integration tests.

pub mod bound;
pub mod contention;
pub mod expiry;
pub mod java;
pub mod leases;
pub mod ledger;
pub mod logs;
pub mod peer_output;
pub mod queues;
pub mod recorder;
pub mod server;
pub mod sightings;
pub mod stop;
pub mod tally;
pub mod worker;
pub mod workload;

pub use bound::{Bound, AT_ONCE};
pub use stop::Stop;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use zk_queue::testing::{FaultProxy, TestingServer};
use zk_queue::{
    client::{CreateMode, RetryNTimes},
    ConnectionState, ZkClient,
};

/// Polls `condition` until it holds; panics with `what` after `within`.
pub fn eventually(within: Duration, what: &str, condition: impl FnMut() -> bool) {
    assert!(eventually_or(within, condition), "not within {within:?}: {what}");
}

/// Polls `condition` until it holds or `within` passes; returns whether it
/// held, for a caller whose failure message says what it saw.
pub fn eventually_or(within: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + within;
    while !condition() {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// The binary of the example `name`. `cargo test` builds the examples into
/// `target/<profile>/examples/`, beside the `deps/` this test binary runs
/// from; `cargo test --test it` alone does not, so build it first then
/// (`cargo build --example <name>`).
pub fn example_exe(name: &str) -> PathBuf {
    let test_exe = std::env::current_exe().expect("the test binary");
    let profile_dir = test_exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("the test binary runs from target/<profile>/deps");
    let exe = profile_dir
        .join("examples")
        .join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    assert!(
        exe.is_file(),
        "{} is missing: build it with `cargo build --example {name}`",
        exe.display()
    );
    exe
}

/// Runs `call`, asserts it returned within `bound` (plus its load margin,
/// see [`Bound`]), and returns its result.
pub fn within<R: std::fmt::Debug>(what: &str, bound: impl Into<Bound>, call: impl FnOnce() -> R) -> R {
    let bound = bound.into();
    let started = Instant::now();
    let result = call();
    let took = started.elapsed();
    eprintln!("{what}: {took:?}, {bound}");
    assert!(bound.holds(took), "{what} returned after {took:?}, {bound}: {result:?}");
    result
}

/// A new client (its own session) of the shared server.
pub fn client() -> ZkClient {
    client_of(&server::shared_connect_string())
}

/// A client through `proxy` whose retries come quickly (20, 100 ms apart),
/// so a fault the proxy injects is retried within the test.
pub fn proxied_client(proxy: &FaultProxy) -> ZkClient {
    ZkClient::builder(&proxy.connect_string())
        .session_timeout(Duration::from_secs(10))
        .connection_timeout(Duration::from_secs(5))
        .request_timeout(Duration::from_secs(5))
        .retry_policy(RetryNTimes::new(20, Duration::from_millis(100)))
        .connect()
        .unwrap()
}

/// A new client of the server at `connect`, with timeouts suited to tests.
pub fn client_of(connect: &str) -> ZkClient {
    ZkClient::builder(connect)
        .session_timeout(Duration::from_secs(10))
        .connection_timeout(Duration::from_secs(10))
        .request_timeout(Duration::from_secs(10))
        .connect()
        .unwrap_or_else(|e| panic!("connecting to {connect}: {e}"))
}

/// A client of `connect` whose session the server expires 2 s into a
/// partition and whose requests give up quickly: for fault tests.
pub fn short_session_client(connect: &str) -> ZkClient {
    ZkClient::builder(connect)
        .session_timeout(Duration::from_secs(2))
        .connection_timeout(Duration::from_secs(2))
        .request_timeout(Duration::from_secs(1))
        .retry_policy(RetryNTimes::new(1, Duration::from_millis(100)))
        .connect()
        .unwrap_or_else(|e| panic!("connecting to {connect}: {e}"))
}

/// Creates a `queue-` node under `path` (made first if missing) for each of
/// `values`, in order, in one pipelined batch, each holding a frame of that
/// one record.
pub fn put_framed(client: &ZkClient, path: &str, values: &[String]) {
    client.ensure_path(path).unwrap();
    let nodes: Vec<(String, Vec<u8>)> = values
        .iter()
        .map(|v| (format!("{path}/queue-"), frame(&[v.as_bytes()])))
        .collect();
    let created = client.create_many(&nodes, CreateMode::PersistentSequential).unwrap();
    assert!(created.iter().all(Result::is_ok), "{created:?}");
}

/// The data of Curator's item frame (`ItemSerializer`) holding `records`.
pub fn frame(records: &[&[u8]]) -> Vec<u8> {
    let mut out = 0x0001_0001_i32.to_be_bytes().to_vec();
    for record in records {
        out.push(1);
        out.extend_from_slice(&(record.len() as i32).to_be_bytes());
        out.extend_from_slice(record);
    }
    out.push(2);
    out
}

/// Waits until `states` delivers `wanted`, failing after `within`.
pub fn wait_for_state(
    states: &crossbeam_channel::Receiver<ConnectionState>,
    wanted: ConnectionState,
    within: Duration,
) {
    let deadline = Instant::now() + within;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match states.recv_timeout(left) {
            Ok(state) if state == wanted => return,
            Ok(_) => {}
            Err(e) => panic!("no {wanted:?} within {within:?}: {e}"),
        }
    }
}

/// Partitions `client` (connected through `proxy`) from the server until the
/// server has expired its session, then heals the partition: the client
/// learns of the expiry when it reconnects ([`ConnectionState::Lost`], then
/// [`ConnectionState::Reconnected`] on a new session).
pub fn expire_session(proxy: &FaultProxy, client: &ZkClient, direct: &ZkClient) {
    let marker = session_marker(client, direct);
    proxy.blackhole();
    wait_for_server_expiry(direct, &marker);
    proxy.heal();
}

/// An ephemeral node of `client`'s session, for [`wait_for_server_expiry`].
pub fn session_marker(client: &ZkClient, direct: &ZkClient) -> String {
    let parent = server::unique_path("session-marker");
    direct.ensure_path(&parent).unwrap();
    client
        .create(&format!("{parent}/of"), b"", CreateMode::Ephemeral)
        .unwrap()
        .0
}

/// Waits until `direct`, a client of the server itself, sees `marker` (a
/// [`session_marker`]) vanish: the server expired that session, which is
/// then a fact, not a guess.
pub fn wait_for_server_expiry(direct: &ZkClient, marker: &str) {
    eventually(Duration::from_secs(30), "the server expires the session", || {
        direct.exists(marker).unwrap().is_none()
    });
}

/// How many watches `server` holds: data and child watches of every session
/// (`mntr`'s `zk_watch_count`; `wchs`, `wchc` and `wchp` count data watches
/// only, so they never show a queue's child watch).
pub fn watch_count(server: &TestingServer) -> usize {
    let report = server
        .four_letter_word("mntr", Duration::from_secs(5))
        .unwrap_or_else(|e| panic!("mntr: {e}"));
    report
        .lines()
        .find_map(|line| line.strip_prefix("zk_watch_count"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no zk_watch_count in the mntr report: {report}"))
}

/// Waits until `server` holds exactly `n` watches. On a server of the test's
/// own where only a waiting call watches, that call has listed its node and
/// left its watch: a change of the node from now on wakes it.
pub fn wait_for_watches(server: &TestingServer, n: usize) {
    eventually(Duration::from_secs(30), &format!("{n} watches on the server"), || {
        watch_count(server) == n
    });
}

/// Closes a client if the thread panics while this guard lives, so a test
/// that fails while another thread is blocked on that client (in `take`,
/// say) ends instead of waiting for that thread for ever.
pub struct CloseOnPanic<'a>(pub &'a ZkClient);

impl Drop for CloseOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.close();
        }
    }
}

/// The children of `path`, sorted (none if it is missing).
pub fn nodes(client: &ZkClient, path: &str) -> Vec<String> {
    match client.get_children(path) {
        Ok((mut children, _)) => {
            children.sort();
            children
        }
        Err(zk_queue::Error::NoNode { .. }) => Vec::new(),
        Err(e) => panic!("listing {path}: {e}"),
    }
}
