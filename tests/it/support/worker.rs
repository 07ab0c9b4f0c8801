//! A queue consumer (lock-safe, or plain) in a separate OS process, so a test can `kill -9` it
//! mid-item: the test binary runs itself on the ignored entry test
//! `faults::killed_consumers::worker_process`, configured through environment variables.
//!
//! The worker appends `<item> <node> <micros> <session>` to its output file
//! (and flushes) *before* working on an item, as a consumer whose side effect
//! comes first would, so the file lists every delivery it began, and
//! `#done <item> <node> <micros>` once the work returned `Ok`, just before
//! the consumer returns: an item is finished only with that line (see
//! [`super::tally`]). For each session it has, the worker creates an
//! ephemeral marker `<queue>-sessions/<session id in hex>` and then appends
//! `#session <id>`, so a test can see the server expire that session (the
//! marker vanishes). It appends `#lost <id>` when a server said session `id`
//! expired and `#lease-lost <path>` when an acknowledge was fenced off.
//!
//! A test can hold a worker's work open: while its hold file
//! (`worker-<n>.hold`, see [`Worker::hold`]) exists, each item the worker
//! begins at a node's first record is recorded, then `#held <item> <node>`
//! appended, and its work waits until the file is gone. So a kill can be made to land on begun,
//! unfinished work, however short each item's work is otherwise.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::tally::now_micros;
use zk_queue::client::CreateMode;
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

impl WorkerConfig {
    /// Where the workers keep an ephemeral marker of each of their sessions.
    pub fn sessions_path(&self) -> String {
        sessions_path(&self.queue)
    }

    /// The marker of session `id` (see [`sessions_path`](Self::sessions_path)).
    pub fn session_marker(&self, id: i64) -> String {
        format!("{}/{id:x}", self.sessions_path())
    }
}

fn sessions_path(queue: &str) -> String {
    format!("{queue}-sessions")
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

    /// Holds the worker's work open: each item it begins from now on waits,
    /// recorded as begun and not finished, until the worker is killed (or
    /// [`release`](Self::release)d).
    pub fn hold(&self) {
        File::create(hold_path(&self.out)).expect("the worker's hold file");
    }

    /// Lets held work go on.
    pub fn release(&self) {
        let _ = std::fs::remove_file(hold_path(&self.out));
    }

    /// Waits until the worker holds `items` items begun and unfinished
    /// (see [`hold`](Self::hold)); whether it did within `within`.
    pub fn wait_holding(&self, items: usize, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        loop {
            let held = read_lines(&self.out).iter().filter(|l| l.starts_with("#held ")).count();
            if held >= items {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// `kill -9`: no chance to release a lock or acknowledge anything.
    /// Returns whether the kill ended the process: it was running and is gone
    /// now, ended by `SIGKILL` (a worker that had died of something else, or
    /// that the signal did not end, fails this).
    pub fn kill(&mut self) -> bool {
        use std::os::unix::process::ExitStatusExt;
        /// `SIGKILL`'s number on every Unix.
        const SIGKILL: i32 = 9;
        let running = matches!(self.child.try_wait(), Ok(None));
        let _ = self.child.kill();
        let status = self.child.wait();
        running && status.is_ok_and(|s| s.signal() == Some(SIGKILL))
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.kill();
        self.release();
    }
}

/// The hold file of the worker writing to `out`.
fn hold_path(out: &Path) -> PathBuf {
    out.with_extension("hold")
}

fn read_lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

thread_local! {
    /// The node of the record this consumer thread was handed last.
    static LAST_NODE: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

/// Records deliveries in the output file.
struct Recording {
    out: Mutex<File>,
    delay: Duration,
    /// While this file exists, begun work waits.
    hold: PathBuf,
    client: ZkClient,
    /// Where the session markers go.
    sessions: String,
    /// The session recorded last (`#session`).
    session: Mutex<i64>,
}

impl Recording {
    fn line(&self, line: &str) {
        let mut out = self.out.lock().unwrap();
        out.write_all(format!("{line}\n").as_bytes())
            .expect("write the worker's output");
        out.flush().expect("flush the worker's output");
    }

    /// Records the client's session if it is a new one, after creating its
    /// marker.
    fn session(&self) {
        let Ok(id) = self.client.session_id() else { return };
        let mut recorded = self.session.lock().unwrap();
        if *recorded == id {
            return;
        }
        if self.mark(id) {
            *recorded = id;
            self.line(&format!("#session {id}"));
        }
    }

    /// Creates the ephemeral marker of session `id`; false if the session
    /// was replaced first.
    fn mark(&self, id: i64) -> bool {
        let marker = format!("{}/{id:x}", self.sessions);
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.client.session_id().is_ok_and(|now| now == id) {
            let owner = match self.client.create(&marker, b"", CreateMode::Ephemeral) {
                Ok((_, stat)) => Some(stat.ephemeral_owner),
                // Our own create, whose reply was lost: the owner tells.
                Err(Error::NodeExists { .. }) => self.client.exists(&marker).ok().flatten().map(|s| s.ephemeral_owner),
                Err(_) => None,
            };
            match owner {
                Some(owner) if owner == id => return true,
                // Created under a session that replaced `id`.
                Some(_) => return false,
                None => {
                    assert!(Instant::now() < deadline, "{marker} could not be created");
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
        }
        false
    }
}

impl QueueConsumer<String> for Recording {
    fn consume(&self, item: String) -> Result<(), ConsumeError> {
        unreachable!("the queue calls consume_with_meta, not {item}")
    }

    fn consume_with_meta(&self, item: String, meta: &ItemMeta) -> Result<(), ConsumeError> {
        // The session the item was handed over in: the queue hands over no
        // item of a session a server said expired, and the next session
        // replaces it only after that.
        let session = self.client.session_id().unwrap_or(0);
        // Recorded before the work: a kill or an expiry after this line is a
        // delivery whose effect happened and whose acknowledge did not.
        self.line(&format!("{item} {} {} {session}", meta.name(), now_micros()));
        // Held at a node's first record, so that the nodes held are the
        // last ones the worker's threads began.
        let first_record = LAST_NODE.with(|last| last.replace(meta.name().to_owned()) != meta.name());
        if first_record && self.hold.exists() {
            self.line(&format!("#held {item} {}", meta.name()));
            while self.hold.exists() {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        std::thread::sleep(self.delay);
        // The work returned `Ok`: the item is finished, whatever becomes of
        // its acknowledge.
        self.line(&format!("#done {item} {} {}", meta.name(), now_micros()));
        Ok(())
    }

    fn state_changed(&self, state: ConnectionState) {
        match state {
            // The session recorded last is the one that expired: a new one
            // is recorded only when the client reconnects after this.
            ConnectionState::Lost => {
                let lost = *self.session.lock().unwrap();
                self.line(&format!("#lost {lost}"));
            }
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
    // Microseconds, as the output file's times.
    let _ = env_logger::builder()
        .is_test(false)
        .format_timestamp_micros()
        .try_init();
    let var = |name: &str| std::env::var(name).unwrap_or_else(|_| panic!("{name} is set"));
    let number = |name: &str| var(name).parse::<u64>().unwrap_or_else(|e| panic!("{name}: {e}"));
    let session = Duration::from_millis(number(SESSION_MS));
    let out_path = PathBuf::from(var(OUT));
    let out = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&out_path)
        .expect("open the worker's output");
    let client = ZkClient::builder(&connect)
        .session_timeout(session)
        .connection_timeout(session)
        .request_timeout(session)
        .connect()
        .expect("the worker connects");
    let queue = var(QUEUE);
    let recording = Recording {
        out: Mutex::new(out),
        delay: Duration::from_millis(number(DELAY_MS)),
        hold: hold_path(&out_path),
        client: client.clone(),
        sessions: sessions_path(&queue),
        session: Mutex::new(0),
    };
    client
        .ensure_path(&recording.sessions)
        .expect("the session markers' parent");
    recording.session();
    let out = recording.out.lock().unwrap().try_clone().expect("the output again");
    let mut builder = QueueBuilder::new(&client, &queue, StringSerializer)
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
