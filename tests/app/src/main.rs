//! The outage scenario, run as an application that depends on zk-queue.
//!
//! A real ZooKeeper server is taken down ten times (stopped gracefully or killed, in turn), each
//! time for as long as the client's session timeout, and restarted on the same data. Through all
//! of it the client must keep its one session, and with it its ephemeral node: a restarted server
//! gives the sessions it reloads a whole timeout again, so only a client that gives up by itself,
//! or comes back too late, loses its session. After each restart the first request must be served
//! soon after the server serves again.
//!
//! The client must also log quietly: at most one line at WARN or above per outage (the
//! disconnection), and none for a clean close.
//!
//! Each round reports on one line; the first round that breaks a promise ends the run with a
//! message saying which and a non-zero exit status. `RUST_LOG=debug` shows the client's log.

mod loudness;

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};
use loudness::Loudness;
use zk_queue::testing::TestingServer;
use zk_queue::{
    client::{CreateMode, RetryForever},
    ConnectionState, Error, ZkClient,
};

/// The session timeout the client asks for, and how long each outage lasts.
const SESSION_TIMEOUT: Duration = Duration::from_secs(4);

/// The server's `tickTime`.
const TICK_TIME: Duration = Duration::from_millis(500);

/// The shortest session timeout the server grants; [`SESSION_TIMEOUT`] lies between the two bounds,
/// so the server grants it as asked.
const MIN_SESSION_TIMEOUT: Duration = Duration::from_secs(2);

/// The longest session timeout the server grants.
const MAX_SESSION_TIMEOUT: Duration = Duration::from_secs(8);

/// How many times the server is taken down and restarted.
const ROUNDS: usize = 10;

/// The longest the client may take to serve its first request after the server serves again:
/// it tries again at least once a second. (A server answers `ruok` before it serves sessions,
/// longer before on a loaded machine, so the bound counts from its first served `conf`.)
const SERVE_WITHIN: Duration = Duration::from_secs(1);

/// Added to [`SERVE_WITHIN`]: it absorbs scheduling delays on a loaded 2-core machine (the
/// probe and request threads waiting for a core), which are no delay of the client's. An eighth
/// of the bound, as the integration suite's `support::Bound` margins.
const LOAD_MARGIN: Duration = Duration::from_millis(125);

/// What a round allows: the bound and its load margin.
const SERVE_ALLOWED: Duration = SERVE_WITHIN.saturating_add(LOAD_MARGIN);

/// How often the probe asks the restarting server `conf`.
const PROBE_INTERVAL: Duration = Duration::from_millis(10);

/// Bound of one `ruok` or `conf` exchange (connect, write, read).
const PROBE_TIMEOUT: Duration = Duration::from_millis(500);

/// The client's request timeout: a request waits this long for a reconnection before it fails
/// and is sent again.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(2);

/// The client retries a request that failed for the connection this often, so that the retry
/// policy's sleeps add nothing worth counting to the time a request takes.
const RETRY_SLEEP: Duration = Duration::from_millis(10);

/// How long after the server went down a round waits for it to serve again and for a request
/// to be served.
const ROUND_DEADLINE: Duration = Duration::from_secs(40);

/// No round starts after this much time: the run ends within about three minutes however slow
/// the machine is.
const RUN_BUDGET: Duration = Duration::from_secs(140);

/// The ephemeral node that witnesses the session.
const WITNESS: &str = "/outage-scenario-witness";

/// The most lines at WARN or above the client may log for one outage: the disconnection.
const LOUD_LINES_PER_OUTAGE: usize = 1;

fn main() -> ExitCode {
    let loudness = Loudness::install();
    match run(loudness) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("outage scenario FAILED: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// How a round takes the server down.
#[derive(Clone, Copy, Debug)]
enum Outage {
    /// [`TestingServer::stop`]: `SIGTERM`, a clean shutdown.
    Stop,
    /// [`TestingServer::kill`]: `SIGKILL`, a crash.
    Kill,
}

impl Outage {
    fn of_round(round: usize) -> Outage {
        if round % 2 == 0 {
            Outage::Stop
        } else {
            Outage::Kill
        }
    }

    fn name(self) -> &'static str {
        match self {
            Outage::Stop => "stop",
            Outage::Kill => "kill",
        }
    }
}

/// What one round measured.
struct Round {
    outage: Outage,
    /// From the moment the server was down to the moment it served `conf` again.
    down: Duration,
    /// From the moment the server served `conf` again to the end of the first request that was
    /// served; negative if that request was served before the probe heard the server.
    served_after_up: f64,
    /// The session after the round.
    session: i64,
    /// The owner of the witness after the round, `None` if it is gone.
    witness_owner: Option<i64>,
    /// The connection states the client reported since the previous round (filled in by the caller,
    /// who listens).
    states: Vec<ConnectionState>,
}

fn run(loudness: &Loudness) -> Result<()> {
    let run_started = Instant::now();
    let mut server = TestingServer::builder()
        .tick_time(TICK_TIME)
        .min_session_timeout(MIN_SESSION_TIMEOUT)
        .max_session_timeout(MAX_SESSION_TIMEOUT)
        .start()
        .context("starting a ZooKeeper server (Debian's `zookeeper` package)")?;
    let address = SocketAddr::from((Ipv4Addr::LOCALHOST, server.port()));
    let client = ZkClient::builder(&server.connect_string())
        .session_timeout(SESSION_TIMEOUT)
        .connection_timeout(Duration::from_secs(10))
        .request_timeout(REQUEST_TIMEOUT)
        .retry_policy(RetryForever::new(RETRY_SLEEP))
        .connect()
        .with_context(|| format!("connecting to {}", server.connect_string()))?;
    let states = client.state_listener();
    let session = client.session_id().context("reading the session id")?;
    let (witness, stat) = client
        .create(WITNESS, b"", CreateMode::Ephemeral)
        .with_context(|| format!("creating the ephemeral witness {WITNESS}"))?;
    ensure!(
        stat.ephemeral_owner == session,
        "the witness {witness} belongs to session 0x{:x}, not to the client's 0x{session:x}",
        stat.ephemeral_owner
    );
    println!(
        "outage scenario: server {}, session 0x{session:x} (timeout {SESSION_TIMEOUT:?}), {ROUNDS} outages of \
         {SESSION_TIMEOUT:?} each, first request within {SERVE_WITHIN:?} (allowed {SERVE_ALLOWED:?} with a \
         {LOAD_MARGIN:?} load margin) of the server serving again",
        server.connect_string()
    );

    // Skip the state the listener starts with (`Connected`).
    states.try_iter().for_each(drop);
    let connecting = loudness.take();
    ensure!(
        connecting.is_empty(),
        "connecting logged at WARN or above: {connecting:?}"
    );
    let limit = SERVE_ALLOWED.as_secs_f64();
    let mut slowest = f64::NEG_INFINITY;
    for number in 0..ROUNDS {
        ensure!(
            run_started.elapsed() < RUN_BUDGET,
            "out of time: {number} of {ROUNDS} rounds took {:.1} s",
            run_started.elapsed().as_secs_f64()
        );
        let mut round = outage_round(&mut server, &client, &witness, address, Outage::of_round(number))
            .with_context(|| format!("round {number}"))?;
        round.states = states.try_iter().collect();
        println!(
            "round {number} ({}): down {:.2} s, first request served {:+.3} s after the server served, \
             session 0x{:x}, states {:?}",
            round.outage.name(),
            round.down.as_secs_f64(),
            round.served_after_up,
            round.session,
            round.states
        );
        let mut broken = Vec::new();
        if round.states.contains(&ConnectionState::Lost) {
            broken.push("the client reported its session lost (ConnectionState::Lost)".to_owned());
        }
        if round.session != session {
            broken.push(format!(
                "the session changed from 0x{session:x} to 0x{:x}",
                round.session
            ));
        }
        match round.witness_owner {
            None => broken.push(format!("the ephemeral witness {witness} is gone")),
            Some(owner) if owner != session => broken.push(format!(
                "the witness {witness} now belongs to session 0x{owner:x}, not 0x{session:x}"
            )),
            Some(_) => {}
        }
        let loud = loudness.take();
        if loud.len() > LOUD_LINES_PER_OUTAGE {
            broken.push(format!(
                "the client logged {} lines at WARN or above for one outage (at most \
                 {LOUD_LINES_PER_OUTAGE}): {loud:?}",
                loud.len()
            ));
        }
        if round.served_after_up > limit {
            broken.push(format!(
                "the first request was served {:.3} s after the server served again, more than the \
                 {SERVE_ALLOWED:?} allowed ({SERVE_WITHIN:?} + a {LOAD_MARGIN:?} load margin)",
                round.served_after_up
            ));
        }
        if !broken.is_empty() {
            bail!(
                "round {number} ({}, down {:.2} s): {}",
                round.outage.name(),
                round.down.as_secs_f64(),
                broken.join("; ")
            );
        }
        slowest = slowest.max(round.served_after_up);
    }
    // A loss the client reported after the last round's checks.
    let late: Vec<ConnectionState> = states.try_iter().collect();
    ensure!(
        !late.contains(&ConnectionState::Lost),
        "the client reported its session lost after the last round: states {late:?}"
    );
    loudness.take();
    client.close();
    let closing = loudness.take();
    ensure!(closing.is_empty(), "a clean close logged at WARN or above: {closing:?}");
    println!(
        "outage scenario passed: {ROUNDS} outages of {SESSION_TIMEOUT:?}, session 0x{session:x} and its \
         ephemeral node kept throughout, first request served at most {slowest:.3} s after the server \
         served again (limit {limit:.1} s), {:.1} s in all",
        run_started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Takes the server down by `outage`, keeps it down for [`SESSION_TIMEOUT`] and restarts it,
/// while a probe waits for the server to serve again and a worker sends requests until one is
/// served.
fn outage_round(
    server: &mut TestingServer,
    client: &ZkClient,
    witness: &str,
    address: SocketAddr,
    outage: Outage,
) -> Result<Round> {
    match outage {
        Outage::Stop => server.stop(),
        Outage::Kill => server.kill(),
    }
    .with_context(|| format!("{} the server", outage.name()))?;
    let down_since = Instant::now();
    ensure!(
        !answers_ruok(address),
        "the server still answers `ruok` after the {} returned",
        outage.name()
    );
    let deadline = down_since + ROUND_DEADLINE;
    let give_up = AtomicBool::new(false);
    let (restarted, up, served) = thread::scope(|s| {
        let probe = s.spawn(|| wait_until_serving(address, deadline, &give_up));
        let worker = s.spawn(|| first_served(client, witness, deadline, &give_up));
        sleep_until(down_since + SESSION_TIMEOUT);
        let restarted = server.restart();
        if restarted.is_err() {
            give_up.store(true, Ordering::SeqCst);
        }
        (restarted, probe.join(), worker.join())
    });
    restarted.context("restarting the server")?;
    let up = match up {
        Ok(Some(up)) => up,
        Ok(None) => bail!("the restarted server did not serve `conf` within {ROUND_DEADLINE:?} of going down"),
        Err(_) => bail!("the probe thread panicked"),
    };
    let served = match served {
        Ok(Ok(served)) => served,
        Ok(Err(e)) => {
            return Err(e).context(format!(
                "no request was served within {ROUND_DEADLINE:?} of the server going down ({:.2} s after it \
                 served again)",
                deadline.saturating_duration_since(up).as_secs_f64()
            ))
        }
        Err(_) => bail!("the request thread panicked"),
    };
    let session = client
        .session_id()
        .context("reading the session id after the restart")?;
    let witness_owner = client
        .exists(witness)
        .with_context(|| format!("looking for the witness {witness} after the restart"))?
        .map(|stat| stat.ephemeral_owner);
    Ok(Round {
        outage,
        down: up.saturating_duration_since(down_since),
        served_after_up: seconds_between(up, served),
        session,
        witness_owner,
        states: Vec::new(),
    })
}

/// Asks `conf` every [`PROBE_INTERVAL`] until the server serves it, and returns when it did;
/// `None` at `deadline` or when told to give up.
fn wait_until_serving(address: SocketAddr, deadline: Instant, give_up: &AtomicBool) -> Option<Instant> {
    while Instant::now() < deadline && !give_up.load(Ordering::SeqCst) {
        if serves_conf(address) {
            return Some(Instant::now());
        }
        thread::sleep(PROBE_INTERVAL);
    }
    None
}

/// Whether the server at `address` serves: it answers `conf` with its configuration, which it
/// does only once it serves sessions (before, it says it is not serving).
fn serves_conf(address: SocketAddr) -> bool {
    let Some(mut stream) = ask(address, b"conf") else {
        return false;
    };
    // The reply counts as soon as it names the client port (its first line), as a `ruok`'s does
    // once its four bytes are in.
    let mut reply = Vec::new();
    let mut chunk = [0u8; 512];
    while let Ok(n @ 1..) = stream.read(&mut chunk) {
        reply.extend_from_slice(&chunk[..n]);
        if String::from_utf8_lossy(&reply).contains("clientPort=") {
            return true;
        }
    }
    false
}

/// Whether the server at `address` answers ZooKeeper's `ruok` with `imok`.
///
/// The reply counts when its four bytes are in: a starting server may hold the connection open
/// for a while after answering, and waiting for it to close would date the answer too late.
fn answers_ruok(address: SocketAddr) -> bool {
    let Some(mut stream) = ask(address, b"ruok") else {
        return false;
    };
    let mut reply = [0u8; 4];
    stream.read_exact(&mut reply).is_ok() && &reply == b"imok"
}

/// Sends the four-letter word `word` to the server at `address`; the connection to read its
/// reply from, each step (connect, write, each read) within [`PROBE_TIMEOUT`].
fn ask(address: SocketAddr, word: &[u8; 4]) -> Option<TcpStream> {
    let mut stream = TcpStream::connect_timeout(&address, PROBE_TIMEOUT).ok()?;
    stream.set_write_timeout(Some(PROBE_TIMEOUT)).ok()?;
    stream.set_read_timeout(Some(PROBE_TIMEOUT)).ok()?;
    stream.write_all(word).ok()?;
    Some(stream)
}

/// Sends `exists(witness)` again and again until one is served, and returns when it was; the last
/// error at `deadline` or when told to give up.
fn first_served(client: &ZkClient, witness: &str, deadline: Instant, give_up: &AtomicBool) -> Result<Instant> {
    let mut last_error: Option<Error> = None;
    while Instant::now() < deadline && !give_up.load(Ordering::SeqCst) {
        match client.exists(witness) {
            Ok(_) => return Ok(Instant::now()),
            Err(e) => {
                last_error = Some(e);
                thread::sleep(RETRY_SLEEP);
            }
        }
    }
    match last_error {
        Some(e) => Err(e).context("the last request failed"),
        None => bail!("no request was sent"),
    }
}

/// `later - earlier` in seconds, negative if `later` came first.
fn seconds_between(earlier: Instant, later: Instant) -> f64 {
    match later.checked_duration_since(earlier) {
        Some(after) => after.as_secs_f64(),
        None => -earlier.duration_since(later).as_secs_f64(),
    }
}

fn sleep_until(at: Instant) {
    thread::sleep(at.saturating_duration_since(Instant::now()));
}
