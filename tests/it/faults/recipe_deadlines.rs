//! Every coordination recipe's timed and `try_` calls against one table:
//! each returns by its deadline (or, for a `try_` call, within the second
//! it may wait for a server) with the server down and with it stalled, and
//! says so in the crate's one vocabulary: `Error::Unreachable` while no
//! server can be reached, `Error::Timeout` while a connected server does
//! not answer, nothing held (`Ok(None)`, `false`) when it was waiting for
//! its turn; never `Error::ConnectionLoss`, not even from a request in
//! flight when the client gives the stalled connection up.
//!
//! Each timed call is first made while another participant holds (the
//! fault lands once it waits on the server for its turn), then again with
//! the fault in place from the start. With the server stalled, every call
//! goes round again and again until the client gives the stalled
//! connection up, so that moment lands inside calls that wait for an
//! answer, then once more.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Duration;

use zk_queue::recipes::{Barrier, DoubleBarrier, LeaderLatch, Mutex, RwLock, Semaphore, SemaphoreMutex};
use zk_queue::testing::{FaultProxy, TestingServer};
use zk_queue::{ConnectionState, Error, ZkClient};

use crate::support::{self, client_of, eventually, nodes, within, Bound};

/// The deadline the timed calls are given.
const DEADLINE: Duration = Duration::from_secs(2);

/// How long a `try_` call may wait for a server, as documented.
const TRY_WAIT: Duration = Duration::from_secs(1);

/// How late a call may return while the server is down: only the time to
/// notice.
const LATE_WHEN_DOWN: Duration = Duration::from_millis(200);

/// How late a call may return while the server is stalled: an answer in
/// flight may take a second more, as documented.
const LATE_WHEN_STALLED: Duration = Duration::from_secs(1);

/// The longest wait for anything else.
const WAIT: Duration = Duration::from_secs(30);

type Call<'a> = Box<dyn Fn() -> Result<bool, Error> + Send + Sync + 'a>;
type Waiting<'a> = Box<dyn Fn() -> bool + Send + Sync + 'a>;

/// One row of the table: a call, how long it may take (before the
/// lateness the fault allows), and, for a call that waits for its turn,
/// how to see from the server that it waits.
struct Row<'a> {
    name: &'static str,
    bound: Duration,
    waiting: Option<Waiting<'a>>,
    call: Call<'a>,
}

fn timed<'a>(name: &'static str, waiting: Waiting<'a>, call: Call<'a>) -> Row<'a> {
    Row {
        name,
        bound: DEADLINE,
        waiting: Some(waiting),
        call,
    }
}

fn try_call<'a>(name: &'static str, call: Call<'a>) -> Row<'a> {
    Row {
        name,
        bound: TRY_WAIT,
        waiting: None,
        call,
    }
}

/// Whether the server at `connect` has answered every request of
/// `session` it received (its `cons` report: `queued=0`).
fn nothing_pending(connect: &str, session: i64) -> bool {
    let mut stream = TcpStream::connect(connect).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    stream.write_all(b"cons").unwrap();
    let mut report = String::new();
    stream.read_to_string(&mut report).unwrap();
    let sid = format!("sid=0x{session:x}");
    report
        .lines()
        .find(|line| line.contains(&sid))
        .is_some_and(|line| line.contains("(queued=0,"))
}

/// Whether the server at `connect` holds a data watch on `path` (its
/// `wchp` report).
fn watched(connect: &str, path: &str) -> bool {
    let mut stream = TcpStream::connect(connect).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    stream.write_all(b"wchp").unwrap();
    let mut report = String::new();
    stream.read_to_string(&mut report).unwrap();
    report.lines().any(|line| line.trim() == path)
}

/// The recipes' handles of one participant, on `client`.
struct Handles {
    mutex: Mutex,
    readers: RwLock,
    writers: RwLock,
    semaphore: Semaphore,
    many: Semaphore,
    semaphore_mutex: SemaphoreMutex,
    barrier: Barrier,
    entering: DoubleBarrier,
    leaving: DoubleBarrier,
    latch: LeaderLatch,
}

impl Handles {
    fn new(client: &ZkClient, member: &str) -> Handles {
        let double = |path: &str| DoubleBarrier::builder(client, path, 2).id(member).build().unwrap();
        Handles {
            mutex: Mutex::builder(client, "/mutex").build().unwrap(),
            readers: RwLock::builder(client, "/rwlock-readers").build().unwrap(),
            writers: RwLock::builder(client, "/rwlock-writers").build().unwrap(),
            semaphore: Semaphore::builder(client, "/semaphore").max_leases(1).build().unwrap(),
            many: Semaphore::builder(client, "/semaphore-many")
                .max_leases(2)
                .build()
                .unwrap(),
            semaphore_mutex: SemaphoreMutex::new(client, "/semaphore-mutex").unwrap(),
            barrier: Barrier::new(client, "/barrier").unwrap(),
            entering: double("/double-enter"),
            leaving: double("/double-leave"),
            latch: LeaderLatch::builder(client, "/latch").id(member).build().unwrap(),
        }
    }
}

/// The table: `ours`' calls, with the server at `connect` (and `admin`,
/// its client) to tell that a call waits.
fn table<'a>(ours: &'a Handles, admin: &'a ZkClient, connect: &'a str, session: i64) -> Vec<Row<'a>> {
    let count = move |path: &'static str, n: usize| -> Waiting<'a> { Box::new(move || nodes(admin, path).len() == n) };
    let watch = move |path: &'static str| -> Waiting<'a> { Box::new(move || watched(connect, path)) };
    // A semaphore's waiter holds the semaphore's lock (`locks/`), has its
    // lease beside the others, and the server has answered its listing of
    // them. Its first, fast try also makes a lease for a moment (taken back
    // when it finds none free), so the lease count alone would not tell
    // that it waits.
    let semaphore_waits = move |path: &'static str, leases: usize| -> Waiting<'a> {
        Box::new(move || {
            nodes(admin, &format!("{path}/locks")).len() == 1
                && nodes(admin, &format!("{path}/leases")).len() == leases
                && nothing_pending(connect, session)
        })
    };
    vec![
        timed(
            "Mutex::lock_timeout",
            count("/mutex", 2),
            Box::new(|| Ok(ours.mutex.lock_timeout(DEADLINE)?.is_some())),
        ),
        timed(
            "RwLock::read_timeout",
            count("/rwlock-readers", 2),
            Box::new(|| Ok(ours.readers.read_timeout(DEADLINE)?.is_some())),
        ),
        timed(
            "RwLock::write_timeout",
            count("/rwlock-writers", 2),
            Box::new(|| Ok(ours.writers.write_timeout(DEADLINE)?.is_some())),
        ),
        timed(
            "Semaphore::acquire_timeout",
            semaphore_waits("/semaphore", 2),
            Box::new(|| Ok(ours.semaphore.acquire_timeout(DEADLINE)?.is_some())),
        ),
        timed(
            "Semaphore::acquire_many_timeout",
            semaphore_waits("/semaphore-many", 3),
            Box::new(|| Ok(ours.many.acquire_many_timeout(2, DEADLINE)?.is_some())),
        ),
        timed(
            "SemaphoreMutex::lock_timeout",
            semaphore_waits("/semaphore-mutex", 2),
            Box::new(|| Ok(ours.semaphore_mutex.lock_timeout(DEADLINE)?.is_some())),
        ),
        timed(
            "Barrier::wait_timeout",
            watch("/barrier"),
            Box::new(|| ours.barrier.wait_timeout(DEADLINE)),
        ),
        Row {
            // As documented: a member that gives up at its deadline takes
            // its node back, waiting up to a second more for that.
            bound: DEADLINE + TRY_WAIT,
            ..timed(
                "DoubleBarrier::enter_timeout",
                watch("/double-enter/ready"),
                Box::new(|| ours.entering.enter_timeout(DEADLINE)),
            )
        },
        timed(
            "DoubleBarrier::leave_timeout",
            watch("/double-leave/b"),
            Box::new(|| ours.leaving.leave_timeout(DEADLINE)),
        ),
        timed(
            "LeaderLatch::await_leadership_timeout",
            Box::new(|| ours.latch.our_path().is_some()),
            Box::new(|| ours.latch.await_leadership_timeout(DEADLINE)),
        ),
        try_call("Mutex::try_lock", Box::new(|| Ok(ours.mutex.try_lock()?.is_some()))),
        try_call("RwLock::try_read", Box::new(|| Ok(ours.readers.try_read()?.is_some()))),
        try_call(
            "RwLock::try_write",
            Box::new(|| Ok(ours.writers.try_write()?.is_some())),
        ),
        try_call(
            "Semaphore::try_acquire",
            Box::new(|| Ok(ours.semaphore.try_acquire()?.is_some())),
        ),
        try_call(
            "Semaphore::try_acquire_many",
            Box::new(|| Ok(ours.many.try_acquire_many(2)?.is_some())),
        ),
        try_call(
            "SemaphoreMutex::try_lock",
            Box::new(|| Ok(ours.semaphore_mutex.try_lock()?.is_some())),
        ),
    ]
}

/// Runs every row's call at once, each on a thread of its own, `rounds`
/// times back to back (until `more` says no more, checked after each
/// call), asserting each call's bound (plus `late`); returns each row's
/// results.
fn every_call(rows: &[Row<'_>], late: Duration, more: &(dyn Fn() -> bool + Sync)) -> Vec<Vec<Result<bool, Error>>> {
    thread::scope(|s| {
        let running: Vec<_> = rows
            .iter()
            .map(|row| {
                s.spawn(move || {
                    let mut results = Vec::new();
                    loop {
                        results.push(within(row.name, Bound::past(row.bound, late), || (row.call)()));
                        if !more() {
                            return results;
                        }
                    }
                })
            })
            .collect();
        running.into_iter().map(|r| r.join().unwrap()).collect()
    })
}

/// The other participant's holds (besides its leadership), which keep
/// ours waiting, while `body` runs.
fn hold_and_wait<R>(ours: &Handles, theirs: &Handles, body: impl FnOnce() -> R) -> R {
    let _mutex = theirs.mutex.lock().unwrap();
    let _write = theirs.readers.write().unwrap();
    let _read = theirs.writers.read().unwrap();
    let _lease = theirs.semaphore.acquire().unwrap();
    let _one_of_two = theirs.many.acquire().unwrap();
    let _locked = theirs.semaphore_mutex.lock().unwrap();
    theirs.barrier.set_barrier().unwrap();
    // Both members in, so ours (`a`, the lowest) waits for `b` to leave.
    thread::scope(|s| {
        s.spawn(|| ours.leaving.enter().unwrap());
        theirs.leaving.enter().unwrap();
    });
    body()
}

/// Whether `result` is `Error::Unreachable`.
fn unreachable(result: &Result<bool, Error>) -> bool {
    matches!(result, Err(Error::Unreachable { .. }))
}

#[test]
fn every_recipe_s_timed_and_try_calls_return_by_their_deadline_with_unreachable_with_the_server_down() {
    let mut server = TestingServer::start().unwrap();
    let connect = server.connect_string();
    let (admin, their_client, our_client) = (client_of(&connect), client_of(&connect), client_of(&connect));
    let theirs = Handles::new(&their_client, "b");
    theirs.latch.await_leadership().unwrap();
    let ours = Handles::new(&our_client, "a");
    let states = our_client.state_listener();
    hold_and_wait(&ours, &theirs, || {
        let rows = table(&ours, &admin, &connect, our_client.session_id().unwrap());
        let waiting: Vec<&Row> = rows.iter().filter(|row| row.waiting.is_some()).collect();
        thread::scope(|s| {
            let calls: Vec<_> = waiting
                .iter()
                .map(|row| s.spawn(|| within(row.name, Bound::past(row.bound, LATE_WHEN_DOWN), || (row.call)())))
                .collect();
            for row in &waiting {
                let is_waiting = row.waiting.as_ref().unwrap();
                eventually(WAIT, &format!("{} waits for its turn", row.name), is_waiting);
            }
            server.stop().unwrap();
            for (row, call) in waiting.iter().zip(calls) {
                let result = call.join().unwrap();
                assert!(unreachable(&result), "{} while waiting: {result:?}", row.name);
            }
        });
        support::wait_for_state(&states, ConnectionState::Suspended, WAIT);
        // Down from the start of the call, too.
        for (row, results) in rows.iter().zip(every_call(&rows, LATE_WHEN_DOWN, &|| false)) {
            assert!(unreachable(&results[0]), "{}: {:?}", row.name, results[0]);
        }
    });
}

#[test]
fn every_recipe_s_timed_and_try_calls_return_by_their_deadline_with_the_server_stalled_never_with_connection_loss() {
    let server = TestingServer::start().unwrap();
    let connect = server.connect_string();
    let proxy = FaultProxy::start(&connect).unwrap();
    let (admin, their_client) = (client_of(&connect), client_of(&connect));
    let our_client = support::proxied_client(&proxy);
    let theirs = Handles::new(&their_client, "b");
    theirs.latch.await_leadership().unwrap();
    let ours = Handles::new(&our_client, "a");
    let states = our_client.state_listener();
    hold_and_wait(&ours, &theirs, || {
        let rows = table(&ours, &admin, &connect, our_client.session_id().unwrap());
        let waiting: Vec<&Row> = rows.iter().filter(|row| row.waiting.is_some()).collect();
        thread::scope(|s| {
            let calls: Vec<_> = waiting
                .iter()
                .map(|row| s.spawn(|| within(row.name, Bound::past(row.bound, LATE_WHEN_STALLED), || (row.call)())))
                .collect();
            for row in &waiting {
                let is_waiting = row.waiting.as_ref().unwrap();
                eventually(WAIT, &format!("{} waits for its turn", row.name), is_waiting);
            }
            proxy.blackhole();
            // Still connected as far as the client can tell, waiting for
            // its turn: nothing held by the deadline.
            for (row, call) in waiting.iter().zip(calls) {
                let result = call.join().unwrap();
                assert!(matches!(result, Ok(false)), "{} while waiting: {result:?}", row.name);
            }
        });
        // Stalled from the start of each call, until the client gives the
        // connection up (which it does after two thirds of its session
        // timeout without a word from the server).
        let given_up = AtomicBool::new(false);
        thread::scope(|s| {
            let listening = s.spawn(|| {
                support::wait_for_state(&states, ConnectionState::Suspended, WAIT);
                given_up.store(true, Ordering::Release);
            });
            let rounds = every_call(&rows, LATE_WHEN_STALLED, &|| !given_up.load(Ordering::Acquire));
            listening.join().unwrap();
            for (row, results) in rows.iter().zip(rounds) {
                eprintln!("{}: {:?}", row.name, results);
                for result in &results {
                    // No answer came: never `Ok` (the latch, which asks no
                    // server, aside), never a lost connection.
                    let said = match result {
                        Ok(false) => row.name.starts_with("LeaderLatch"),
                        Err(Error::Timeout { .. } | Error::Unreachable { .. }) => true,
                        _ => false,
                    };
                    assert!(said, "{} while stalled: {result:?}", row.name);
                }
            }
        });
        // The connection given up: no server to ask.
        for (row, results) in rows.iter().zip(every_call(&rows, LATE_WHEN_STALLED, &|| false)) {
            assert!(unreachable(&results[0]), "{} once given up: {:?}", row.name, results[0]);
        }
        proxy.heal();
    });
}
