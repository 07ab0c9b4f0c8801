//! A queue consumer (lock-safe, or plain) in a separate OS process, so a test can `kill -9` it
//! mid-item: the test binary runs itself on the ignored entry test
//! `faults::killed_consumers::worker_process`, configured through environment variables.
//!
//! The worker appends `payload\n` to its output file (and flushes) before
//! returning `Ok` for an item, so the file lists every item it finished. It
//! also appends `#lost` when its session expires and `#lease-lost <path>`
//! when an acknowledge was fenced off.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use zk_queue::{ConnectionState, ConsumeError, Error, QueueBuilder, QueueConsumer, StringSerializer, ZkClient};

/// The entry test the worker process runs.
const ENTRY: &str = "faults::killed_consumers::worker_process";
const CONNECT: &str = "ZKQ_WORKER_CONNECT";
const QUEUE: &str = "ZKQ_WORKER_QUEUE";
const LOCKS: &str = "ZKQ_WORKER_LOCKS";
const OUT: &str = "ZKQ_WORKER_OUT";
const DELAY_MS: &str = "ZKQ_WORKER_DELAY_MS";
const WINDOW: &str = "ZKQ_WORKER_CLAIM_WINDOW";
const SESSION_MS: &str = "ZKQ_WORKER_SESSION_MS";

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
            .env("RUST_LOG", "zk_queue=info")
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

/// What the workers writing to `dir` did, all together.
#[derive(Debug, Default)]
pub struct Tally {
    /// How often each item was finished.
    pub finished: HashMap<String, usize>,
    /// Sessions that expired under a worker.
    pub sessions_lost: usize,
    /// Acknowledges fenced off because the lease was lost.
    pub leases_lost: usize,
}

impl Tally {
    pub fn read(dir: &Path) -> Tally {
        let mut tally = Tally::default();
        let mut outs: Vec<PathBuf> = std::fs::read_dir(dir)
            .expect("the workers' directory")
            .map(|e| e.expect("a directory entry").path())
            .filter(|p| p.extension().is_some_and(|e| e == "out"))
            .collect();
        outs.sort();
        for out in outs {
            for line in read_lines(&out) {
                match line.as_str() {
                    "#ready" => {}
                    "#lost" => tally.sessions_lost += 1,
                    l if l.starts_with("#lease-lost") => tally.leases_lost += 1,
                    item => *tally.finished.entry(item.to_owned()).or_default() += 1,
                }
            }
        }
        tally
    }

    /// Items finished more than once, counted once per extra time.
    pub fn duplicates(&self) -> usize {
        self.finished.values().map(|n| n - 1).sum()
    }

    /// How many distinct items of `expected` were finished.
    pub fn distinct_of<'a>(&self, expected: impl IntoIterator<Item = &'a String>) -> usize {
        expected.into_iter().filter(|e| self.finished.contains_key(*e)).count()
    }
}

/// Records finished items in the output file.
struct Recording {
    out: Mutex<File>,
    delay: Duration,
}

impl Recording {
    fn line(&self, line: &str) {
        let mut out = self.out.lock().unwrap();
        out.write_all(format!("{line}\n").as_bytes())
            .expect("write the worker's output");
        out.flush().expect("flush the worker's output");
    }
}

impl QueueConsumer<String> for Recording {
    fn consume(&self, item: String) -> Result<(), ConsumeError> {
        std::thread::sleep(self.delay);
        // Recorded before the queue hears Ok: a kill after this line is a
        // delivery the queue does not know was finished.
        self.line(&item);
        Ok(())
    }

    fn state_changed(&self, state: ConnectionState) {
        if state == ConnectionState::Lost {
            self.line("#lost");
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
    let recording = Recording {
        out: Mutex::new(out),
        delay: Duration::from_millis(number(DELAY_MS)),
    };
    let client = ZkClient::builder(&connect)
        .session_timeout(session)
        .connection_timeout(session)
        .request_timeout(session)
        .connect()
        .expect("the worker connects");
    let out = recording.out.lock().unwrap().try_clone().expect("the output again");
    let mut builder = QueueBuilder::new(&client, &var(QUEUE), StringSerializer)
        .consumer(recording)
        .claim_window(usize::try_from(number(WINDOW)).expect("a window"));
    let locks = var(LOCKS);
    if !locks.is_empty() {
        builder = builder.lock_path(&locks);
    }
    let _queue = builder.build_queue().expect("the worker's queue");
    let mut out = out;
    out.write_all(b"#ready\n")
        .and_then(|()| out.flush())
        .expect("report ready");
    // Runs until killed.
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}
