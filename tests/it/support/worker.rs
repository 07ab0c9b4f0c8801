//! A queue consumer (lock-safe, or plain) in a separate OS process, so a test can `kill -9` it
//! mid-item: the test binary runs itself on the ignored entry test
//! `faults::killed_consumers::worker_process`, configured through environment variables.
//!
//! The worker appends `<item> <node> <micros>` to its output file (and
//! flushes) *before* working on an item, as a consumer whose side effect comes
//! first would, so the file lists every delivery it began (see
//! [`super::tally`]). It also appends `#session <id>` for each session it
//! has, `#lost` when its session expires and `#lease-lost <path>` when an
//! acknowledge was fenced off.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::tally::now_micros;
use zk_queue::{
    ConnectionState, ConsumeError, Error, ItemMeta, QueueBuilder, QueueConsumer, StringSerializer, ZkClient,
};

/// The entry test the worker process runs.
const ENTRY: &str = "faults::killed_consumers::worker_process";
const CONNECT: &str = "ZKQ_WORKER_CONNECT";
const QUEUE: &str = "ZKQ_WORKER_QUEUE";
const LOCKS: &str = "ZKQ_WORKER_LOCKS";
const OUT: &str = "ZKQ_WORKER_OUT";
const DELAY_MS: &str = "ZKQ_WORKER_DELAY_MS";
const WINDOW: &str = "ZKQ_WORKER_CLAIM_WINDOW";
const SESSION_MS: &str = "ZKQ_WORKER_SESSION_MS";
const THREADS: &str = "ZKQ_WORKER_THREADS";
const PRIORITY: &str = "ZKQ_WORKER_PRIORITY";

/// What a worker process consumes, and how.
#[derive(Clone, Debug)]
pub struct WorkerConfig {
    pub connect: String,
    pub queue: String,
    /// The lock path; empty for a plain (at-most-once) consumer.
    pub locks: String,
    /// How long each item takes, so a kill lands mid-item.
    pub delay: Duration,
    pub claim_window: usize,
    pub session_timeout: Duration,
    /// Consumer threads: with as many as `claim_window`, every lease held is
    /// an item being worked on.
    pub threads: usize,
    /// Built as a priority queue (it takes plain items too).
    pub priority: bool,
}

/// A running worker process; killed with `SIGKILL` on drop.
pub struct Worker {
    child: Child,
    out: PathBuf,
}

impl Worker {
    /// Starts worker number `n`, writing to `<dir>/worker-<n>.out`.
    pub fn spawn(config: &WorkerConfig, dir: &Path, n: usize) -> Worker {
        let out = dir.join(format!("worker-{n}.out"));
        let stderr = File::create(dir.join(format!("worker-{n}.err"))).expect("worker stderr file");
        let child = Command::new(std::env::current_exe().expect("the test binary"))
            .args([ENTRY, "--exact", "--ignored", "--nocapture", "--test-threads=1"])
            .env(CONNECT, &config.connect)
            .env(QUEUE, &config.queue)
            .env(LOCKS, &config.locks)
            .env(OUT, &out)
            .env(DELAY_MS, config.delay.as_millis().to_string())
            .env(WINDOW, config.claim_window.to_string())
            .env(SESSION_MS, config.session_timeout.as_millis().to_string())
            .env(THREADS, config.threads.to_string())
            .env(PRIORITY, if config.priority { "1" } else { "0" })
            .env(
                "RUST_LOG",
                std::env::var("ZKQ_WORKER_LOG").unwrap_or_else(|_| "zk_queue=info".to_owned()),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .expect("spawn a worker process");
        Worker { child, out }
    }

    /// Waits until the worker's queue runs; panics after `within`.
    pub fn wait_ready(&self, within: Duration) {
        let deadline = Instant::now() + within;
        while !read_lines(&self.out).iter().any(|l| l == "#ready") {
            assert!(
                Instant::now() < deadline,
                "worker {} not ready within {within:?}",
                self.out.display()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `kill -9`: no chance to release a lock or acknowledge anything.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.kill();
    }
}

fn read_lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Records deliveries in the output file.
struct Recording {
    out: Mutex<File>,
    delay: Duration,
    client: ZkClient,
}

impl Recording {
    fn line(&self, line: &str) {
        let mut out = self.out.lock().unwrap();
        out.write_all(format!("{line}\n").as_bytes())
            .expect("write the worker's output");
        out.flush().expect("flush the worker's output");
    }

    fn session(&self) {
        if let Ok(id) = self.client.session_id() {
            self.line(&format!("#session {id}"));
        }
    }
}

impl QueueConsumer<String> for Recording {
    fn consume(&self, item: String) -> Result<(), ConsumeError> {
        unreachable!("the queue calls consume_with_meta, not {item}")
    }

    fn consume_with_meta(&self, item: String, meta: &ItemMeta) -> Result<(), ConsumeError> {
        // Recorded before the work: a kill or an expiry after this line is a
        // delivery whose effect happened and whose acknowledge did not.
        self.line(&format!("{item} {} {}", meta.name(), now_micros()));
        std::thread::sleep(self.delay);
        Ok(())
    }

    fn state_changed(&self, state: ConnectionState) {
        match state {
            ConnectionState::Lost => self.line("#lost"),
            ConnectionState::Reconnected => self.session(),
            _ => {}
        }
    }

    fn error(&self, error: &Error) {
        if let Error::LeaseLost { path } = error {
            self.line(&format!("#lease-lost {path}"));
        }
    }
}

/// The body of the worker process, configured by the environment; does
/// nothing without it.
pub fn run_from_env() {
    let Ok(connect) = std::env::var(CONNECT) else {
        return;
    };
    let _ = env_logger::builder().is_test(false).try_init();
    let var = |name: &str| std::env::var(name).unwrap_or_else(|_| panic!("{name} is set"));
    let number = |name: &str| var(name).parse::<u64>().unwrap_or_else(|e| panic!("{name}: {e}"));
    let session = Duration::from_millis(number(SESSION_MS));
    let out = OpenOptions::new()
        .create(true)
        .append(true)
        .open(var(OUT))
        .expect("open the worker's output");
    let client = ZkClient::builder(&connect)
        .session_timeout(session)
        .connection_timeout(session)
        .request_timeout(session)
        .connect()
        .expect("the worker connects");
    let recording = Recording {
        out: Mutex::new(out),
        delay: Duration::from_millis(number(DELAY_MS)),
        client: client.clone(),
    };
    recording.session();
    let out = recording.out.lock().unwrap().try_clone().expect("the output again");
    let mut builder = QueueBuilder::new(&client, &var(QUEUE), StringSerializer)
        .consumer(recording)
        .consumer_threads(usize::try_from(number(THREADS)).expect("a thread count"))
        .claim_window(usize::try_from(number(WINDOW)).expect("a window"));
    let locks = var(LOCKS);
    if !locks.is_empty() {
        builder = builder.lock_path(&locks);
    }
    // Held until killed.
    let _queue: Box<dyn std::any::Any> = if number(PRIORITY) == 1 {
        Box::new(builder.build_priority_queue(0).expect("the worker's queue"))
    } else {
        Box::new(builder.build_queue().expect("the worker's queue"))
    };
    let mut out = out;
    out.write_all(b"#ready\n")
        .and_then(|()| out.flush())
        .expect("report ready");
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}
