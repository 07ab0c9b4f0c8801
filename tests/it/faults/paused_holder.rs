//! A holder whose whole process is paused (`kill -STOP`) past its session
//! timeout, as a long garbage-collection pause or a stalled virtual machine
//! would pause it: while it sleeps the server expires its session and
//! another participant takes the mutex, the selector's leadership, the
//! latch's and a semaphore lease. When it resumes, its first look at what it
//! holds must already say "nothing", before its client's own thread has run
//! and noticed the loss.
//!
//! The holder runs in a child process (this test binary, on the ignored
//! entry test `holder_process`). It checks what it holds in a tight loop and
//! prints a line whenever the answer changes or the loop was paused, with
//! the wall-clock time the check began.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

use zk_queue::recipes::{LeaderLatch, LeaderSelector, Mutex, Semaphore};

use super::WAIT;
use crate::support::server::{shared_connect_string, unique_path};
use crate::support::tally::now_micros;
use crate::support::{client, eventually, nodes, short_session_client};

const ENTRY: &str = "faults::paused_holder::holder_process";
const CONNECT: &str = "ZKQ_HOLDER_CONNECT";
const PATH: &str = "ZKQ_HOLDER_PATH";

/// A gap in the holder's loop this long is the pause (the loop never
/// sleeps): the first check after it is printed.
const GAP: Duration = Duration::from_millis(200);

/// The recipes' paths under `base`.
fn paths(base: &str) -> [String; 4] {
    ["election", "lock", "latch", "semaphore"].map(|name| format!("{base}/{name}"))
}

/// The holder: takes the four, prints `#held` once it holds them all, then
/// `<micros> <selector> <mutex> <latch> <lease>` (1 = says it holds) on
/// every change and after every pause, until killed.
#[test]
#[ignore = "run in a child process by a_holder_paused_past_its_session_claims_nothing_when_it_resumes"]
fn holder_process() {
    let (connect, base) = (std::env::var(CONNECT).unwrap(), std::env::var(PATH).unwrap());
    let client = short_session_client(&connect);
    let [election, lock, latch, semaphore] = paths(&base);
    let selector = LeaderSelector::builder(&client, &election, |leader: &zk_queue::recipes::LeaderContext<'_>| {
        let _ = leader.lost().recv();
    })
    .build()
    .unwrap();
    let mutex = Mutex::builder(&client, &lock).build().unwrap();
    let guard = mutex.lock().unwrap();
    let latch = LeaderLatch::builder(&client, &latch).build().unwrap();
    latch.await_leadership().unwrap();
    let semaphore = Semaphore::builder(&client, &semaphore).max_leases(1).build().unwrap();
    let lease = semaphore.acquire().unwrap();
    let holds = || {
        [
            selector.has_leadership(),
            guard.is_held(),
            latch.has_leadership(),
            lease.is_held(),
        ]
    };
    eventually(WAIT, "it holds all four", || holds().iter().all(|&h| h));
    // Until the test stops reading (then it kills this process).
    let mut out = std::io::stdout();
    if writeln!(out, "#held").is_err() {
        return;
    }
    let (mut last, mut at) = (None, Instant::now());
    loop {
        let began = now_micros();
        let now = holds();
        if last != Some(now) || at.elapsed() >= GAP {
            let flags: Vec<&str> = now.iter().map(|&h| if h { "1" } else { "0" }).collect();
            if writeln!(out, "#holds {began} {}", flags.join(" ")).is_err() {
                return;
            }
            last = Some(now);
        }
        at = Instant::now();
        thread::yield_now();
    }
}

/// One line of the holder's: when the check began and what it said.
struct Check {
    began: u64,
    holds: [bool; 4],
}

fn parse(line: &str) -> Option<Check> {
    let (_, line) = line.split_once("#holds ")?;
    let mut fields = line.split(' ');
    let began = fields.next()?.parse().ok()?;
    let mut holds = [false; 4];
    for h in &mut holds {
        *h = fields.next()? == "1";
    }
    Some(Check { began, holds })
}

/// The holder's process, killed (and continued first, if stopped) however
/// the test ends: it never sleeps, so it must not outlive a failed test.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-CONT", &self.0.id().to_string()]).status();
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `kill -<signal> <pid>`.
fn signal(child: &Child, signal: &str) {
    let status = Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill {signal}");
}

#[test]
fn a_holder_paused_past_its_session_claims_nothing_when_it_resumes() {
    let connect = shared_connect_string();
    let base = unique_path("paused-holder");
    let mut child = Killed(
        Command::new(std::env::current_exe().unwrap())
            .args([ENTRY, "--exact", "--ignored", "--nocapture", "--test-threads=1"])
            .env(CONNECT, &connect)
            .env(PATH, &base)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let (lines, heard) = mpsc::channel::<String>();
    let stdout = child.0.stdout.take().unwrap();
    thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                return;
            }
        }
    });
    let next = || heard.recv_timeout(WAIT).expect("the holder prints");
    // (The test harness may begin the first line with the test's name.)
    while !next().ends_with("#held") {}

    // The other participant queues for each of the four, on a client of its own.
    let other = client();
    let [election, lock, latch, semaphore] = paths(&base);
    let began = Arc::new([0, 0, 0, 0].map(AtomicU64::new));
    let mark = |n: usize| {
        let began = Arc::clone(&began);
        move || began[n].store(now_micros(), Ordering::Release)
    };
    let on_lead = mark(0);
    let selector = LeaderSelector::builder(
        &other,
        &election,
        move |leader: &zk_queue::recipes::LeaderContext<'_>| {
            on_lead();
            let _ = leader.lost().recv();
        },
    )
    .build()
    .unwrap();
    let mutex = Mutex::builder(&other, &lock).build().unwrap();
    let latch = LeaderLatch::builder(&other, &latch).build().unwrap();
    let semaphore = Semaphore::builder(&other, &semaphore).max_leases(1).build().unwrap();
    let admin = client();
    let [e, _, t, _] = paths(&base);
    eventually(WAIT, "the selector and the latch have two in line", || {
        nodes(&admin, &e).len() == 2 && nodes(&admin, &t).len() == 2
    });

    // Checks that began after `stopped` were made after the pause.
    signal(&child.0, "-STOP");
    let stopped = now_micros();
    thread::scope(|scope| {
        let (lock_mark, lease_mark) = (mark(1), mark(3));
        // Each is held on its own thread (a mutex guard stays on its
        // thread) until the checks are over.
        let (release, released) = crossbeam_channel::bounded::<()>(0);
        let (mutex, semaphore) = (&mutex, &semaphore);
        let released_too = released.clone();
        let guard = scope.spawn(move || {
            let guard = mutex.lock_timeout(WAIT).unwrap();
            assert!(guard.is_some(), "the mutex, once the holder's session expired");
            lock_mark();
            let _ = released.recv();
        });
        let lease = scope.spawn(move || {
            let lease = semaphore.acquire_timeout(WAIT).unwrap();
            assert!(lease.is_some(), "a lease, once the holder's session expired");
            lease_mark();
            let _ = released_too.recv();
        });
        assert!(latch.await_leadership_timeout(WAIT).unwrap(), "the latch");
        mark(2)();
        eventually(WAIT, "the selector's closure runs", || {
            began[0].load(Ordering::Acquire) > 0
        });
        eventually(WAIT, "the mutex and a lease are taken", || {
            began[1].load(Ordering::Acquire) > 0 && began[3].load(Ordering::Acquire) > 0
        });

        let resuming = now_micros();
        signal(&child.0, "-CONT");
        // The holder's checks after it resumed, until it says it holds nothing.
        let mut after = Vec::new();
        loop {
            let Some(check) = parse(&next()) else { continue };
            if check.began <= stopped {
                continue;
            }
            assert!(check.began >= resuming, "a check began while the holder was stopped");
            let done = check.holds.iter().all(|&h| !h);
            after.push(check);
            if done {
                break;
            }
        }
        eprintln!(
            "paused {} ms; first check {} µs after resuming: {:?}",
            (resuming - stopped) / 1000,
            after[0].began.saturating_sub(resuming),
            after[0].holds
        );
        let names = ["selector leadership", "mutex", "latch leadership", "semaphore lease"];
        for check in &after {
            for (n, name) in names.iter().enumerate() {
                let theirs = began[n].load(Ordering::Acquire);
                assert!(
                    !(check.holds[n] && check.began > theirs),
                    "the resumed holder said it held the {name} at {}, {} µs after the other took it",
                    check.began,
                    check.began - theirs
                );
            }
        }
        drop(release);
        guard.join().unwrap();
        lease.join().unwrap();
    });
    drop(child);
    selector.close().unwrap();
    latch.close().unwrap();
}
