//! `zkq top`'s full-screen view, run in a real terminal (a tmux session of
//! its own, 80 × 24) against the shared server: what the screen shows of a
//! growing queue, a mutex with a holder and two waiters, and a leader latch;
//! Enter opening the queue; `q` quitting with the terminal restored.

use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Duration;

use zk_queue::recipes::{LeaderLatch, Mutex};
use zk_queue::testing::TestingServer;
use zk_queue::ZkClient;

use crate::support::queues::producer;
use crate::support::server::{shared_connect_string, unique_path};
use crate::support::{client, client_of, eventually};

/// How long a condition may take, under load.
const WAIT: Duration = Duration::from_secs(30);

/// A tmux server of the test's own (its own socket), with one 80 × 24
/// session; killed on drop.
struct Terminal {
    socket: String,
}

impl Terminal {
    /// Runs `command` (a shell command line) in a new 80 × 24 terminal of
    /// a tmux server named for `test` and this process.
    fn start(test: &str, command: &str) -> Terminal {
        let socket = format!("zkq-{test}-{}", std::process::id());
        let terminal = Terminal { socket };
        terminal.tmux(&["new-session", "-d", "-s", "top", "-x", "80", "-y", "24", command]);
        terminal
    }

    fn tmux(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket])
            .args(args)
            .output()
            .expect("tmux runs (scripts/install-deps.sh installs it)");
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The screen's text.
    fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-t", "top"])
    }

    fn keys(&self, keys: &str) {
        self.tmux(&["send-keys", "-t", "top", keys]);
    }

    /// Waits until the screen shows what `shows` looks for; returns it.
    fn until(&self, what: &str, mut shows: impl FnMut(&str) -> bool) -> String {
        let mut seen = String::new();
        eventually(WAIT, what, || {
            seen = self.screen();
            shows(&seen)
        });
        seen
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        let _ = Command::new("tmux").args(["-L", &self.socket, "kill-server"]).output();
    }
}

/// Sets its flag when dropped.
struct SetOnDrop<'a>(&'a AtomicBool);

impl Drop for SetOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

fn session_of(zk: &ZkClient) -> String {
    format!("0x{:x}", zk.session_id().unwrap())
}

/// The depth the queue row named `name` shows, if the screen has it.
fn depth_of(screen: &str, name: &str) -> Option<u64> {
    let row = screen.lines().find(|l| l.trim_start_matches('│').starts_with(name))?;
    row.trim_start_matches('│').split_whitespace().nth(2)?.parse().ok()
}

#[test]
fn cli_top_shows_a_growing_queue_a_locks_holder_and_waiters_and_a_leader_in_a_real_terminal() {
    let root = unique_path("cli-top-screen");
    let (a, b, c) = (client(), client(), client());
    let at = |name: &str| format!("{root}/{name}");
    let count = |path: &str| a.get_children(path).map_or(0, |(names, _)| names.len());
    let growing = producer(&a, &at("growing")).build_queue().unwrap();
    growing.put("first".into()).unwrap();
    let holder = Mutex::builder(&a, &at("mutex")).build().unwrap();
    let first = Mutex::builder(&b, &at("mutex")).build().unwrap();
    let second = Mutex::builder(&c, &at("mutex")).build().unwrap();
    let leader = LeaderLatch::builder(&a, &at("latch")).id("alpha").build().unwrap();
    leader.await_leadership_timeout(WAIT).unwrap();
    let follower = LeaderLatch::builder(&b, &at("latch")).id("beta").build().unwrap();
    eventually(WAIT, "beta's latch node", || count(&at("latch")) == 2);

    let stop = AtomicBool::new(false);
    thread::scope(|s| {
        // Dropped first, also when an assertion fails, so every thread ends.
        let _stop = SetOnDrop(&stop);
        let _guard = holder.lock().unwrap();
        s.spawn(|| drop(first.lock().unwrap()));
        eventually(WAIT, "the first waiter's node", || count(&at("mutex")) == 2);
        s.spawn(|| drop(second.lock().unwrap()));
        eventually(WAIT, "the second waiter's node", || count(&at("mutex")) == 3);
        s.spawn(|| {
            while !stop.load(Ordering::Acquire) {
                growing.put("more".into()).unwrap();
                thread::sleep(Duration::from_millis(20));
            }
        });

        let zkq = env!("CARGO_BIN_EXE_zkq");
        let connect = shared_connect_string();
        let terminal = Terminal::start("screen", &format!(
            "{zkq} --connect {connect} top {root} --interval 200ms; echo EXITED $?; stty -a | tr ' ' '\\n' | grep -x -e icanon -e -icanon; sleep 60"
        ));
        let screen = terminal.until("the queue's row", |s| depth_of(s, "growing").is_some());
        let depth = depth_of(&screen, "growing").unwrap();
        terminal.until("the queue's depth grows", |s| {
            depth_of(s, "growing").is_some_and(|d| d > depth)
        });

        let screen = terminal.until("the mutex and the latch", |s| {
            s.contains(&format!("mutex {}", at("mutex"))) && s.contains(&format!("leader-latch {}", at("latch")))
        });
        let lines: Vec<&str> = screen.lines().collect();
        let mutex_at = lines
            .iter()
            .position(|l| l.contains(&format!("mutex {}", at("mutex"))))
            .unwrap();
        let line = |offset: usize| lines[mutex_at + offset];
        assert!(
            line(1).contains("1 holder") && line(1).contains(&session_of(&a)),
            "{screen}"
        );
        assert!(
            line(2).contains("2 waiter") && line(2).contains(&session_of(&b)),
            "{screen}"
        );
        assert!(
            line(3).contains("3 waiter") && line(3).contains(&session_of(&c)),
            "{screen}"
        );
        let latch_at = lines
            .iter()
            .position(|l| l.contains(&format!("leader-latch {}", at("latch"))))
            .unwrap();
        assert!(lines[latch_at + 1].contains("1 leader alpha"), "{screen}");
        assert!(lines[latch_at + 2].contains("2 waiter beta"), "{screen}");

        // The one queue's row is chosen: Enter opens it.
        terminal.keys("Enter");
        terminal.until("the opened queue's head items", |s| {
            s.contains(&format!("{}: its first 10 items", at("growing"))) && s.contains("queue-0000000000")
        });
        terminal.keys("Escape");
        terminal.until("the list again", |s| s.contains("coordination (2)"));
        terminal.keys("?");
        terminal.until("the help", |s| {
            s.contains("put/s, take/s: items put and taken per second")
        });
        terminal.keys("?");
        terminal.until("the list again", |s| s.contains("coordination (2)"));
        // Resized, the view fills the new size.
        terminal.tmux(&["resize-window", "-t", "top", "-x", "100", "-y", "30"]);
        terminal.until("the view at 100 × 30", |s| {
            s.lines().count() == 30 && s.lines().nth(1).is_some_and(|l| l.chars().count() == 100)
        });
        terminal.keys("q");
        let screen = terminal.until("zkq exits, and the terminal's mode is printed", |s| {
            s.contains("EXITED") && s.lines().any(|l| l.trim().ends_with("icanon"))
        });
        assert!(screen.contains("EXITED 0"), "{screen}");
        // Raw mode off, and the main screen back (the alternate screen's
        // boxes gone).
        let after: Vec<&str> = screen.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
        assert!(after.contains(&"icanon"), "{screen}");
        assert!(!screen.contains("coordination"), "the view's screen is left: {screen}");
    });
    leader.close().unwrap();
    follower.close().unwrap();
}

#[test]
fn cli_top_says_when_the_server_is_gone_keeps_the_last_figures_and_resumes() {
    // A server of its own, to stop and start again.
    let mut server = TestingServer::start().unwrap();
    let connect = server.connect_string();
    let zk = client_of(&connect);
    let path = unique_path("cli-top-outage");
    let queue = producer(&zk, &format!("{path}/jobs")).build_queue().unwrap();
    for i in 0..3 {
        queue.put(format!("job-{i}")).unwrap();
    }
    queue.close();
    zk.close();

    let zkq = env!("CARGO_BIN_EXE_zkq");
    let terminal = Terminal::start(
        "outage",
        &format!(
            "{zkq} --connect {connect} --session-timeout 4s top {path} --interval 200ms; echo EXITED $?; sleep 60"
        ),
    );
    terminal.until("the queue's row", |s| depth_of(s, "jobs") == Some(3));
    server.stop().unwrap();
    let screen = terminal.until("the view says the server is gone", |s| s.contains("NO SERVER"));
    assert_eq!(
        depth_of(&screen, "jobs"),
        Some(3),
        "the last figures are kept: {screen}"
    );
    server.restart().unwrap();
    terminal.until("the view resumes", |s| {
        !s.contains("NO SERVER") && depth_of(s, "jobs") == Some(3)
    });
    terminal.keys("q");
    let screen = terminal.until("zkq exits", |s| s.contains("EXITED"));
    assert!(screen.contains("EXITED 0"), "{screen}");
}
