//! The timed calls the other deadline tests leave out, by their deadline
//! with the server down and with it stalled, leaving no node:
//! `Semaphore::acquire_many_timeout` and `SemaphoreMutex::lock_timeout`.

use std::thread;
use std::time::Duration;

use zk_queue::testing::{FaultProxy, TestingServer};
use zk_queue::{
    recipes::{Semaphore, SemaphoreMutex},
    Error, ZkClient,
};

use super::{leases_and_locks, nothing_left, semaphore, WAIT};
use crate::support::server::{shared_connect_string, unique_path};
use crate::support::{self, client, client_of, eventually};

/// The deadline the timed calls below are given.
const DEADLINE: Duration = Duration::from_secs(2);

/// How late a timed call may return while the server is down: only the
/// time to notice.
const LATE_WHEN_DOWN: Duration = Duration::from_millis(200);

/// How late a timed call may return while the server is stalled: an answer
/// in flight may take a second more, as documented.
const LATE_WHEN_STALLED: Duration = Duration::from_secs(1);

/// Whether `result` is what a timed call may return with the server
/// stalled: nothing held, or the error that says why: `Timeout` from a
/// server that did not answer, `Unreachable` once the client gave the
/// stalled connection up (as it does after two thirds of the session
/// timeout); never the `ConnectionLoss` of a request in flight then.
fn stalled_result(result: &Result<bool, Error>) -> bool {
    matches!(
        result,
        Ok(false) | Err(Error::Unreachable { .. } | Error::Timeout { .. })
    )
}

/// `acquire_many_timeout(2, DEADLINE)`, bounded by the deadline plus `late`.
fn timed_many(semaphore: &Semaphore, late: Duration) -> Result<bool, Error> {
    support::within(
        &format!("acquire_many_timeout(2, {DEADLINE:?})"),
        support::Bound::past(DEADLINE, late),
        || {
            semaphore
                .acquire_many_timeout(2, DEADLINE)
                .map(|leases| leases.is_some())
        },
    )
}

/// `lock_timeout(DEADLINE)`, bounded by the deadline plus `late`.
fn timed_lock(mutex: &SemaphoreMutex, late: Duration) -> Result<bool, Error> {
    support::within(
        &format!("lock_timeout({DEADLINE:?})"),
        support::Bound::past(DEADLINE, late),
        || mutex.lock_timeout(DEADLINE).map(|guard| guard.is_some()),
    )
}

/// A waiter of `path` through `waiter_client` calls its timed acquisition
/// while `holder_client` holds one of its two leases (a semaphore) or the
/// lock; the fault lands while it waits, then again before it calls.
struct Case<'a> {
    path: &'a str,
    holder_client: &'a ZkClient,
    waiter_client: &'a ZkClient,
}

impl Case<'_> {
    /// Runs `acquire_many_timeout` and `SemaphoreMutex::lock_timeout`
    /// through `fault`, checking each result with `expected`.
    fn run(&self, late: Duration, fault: impl FnOnce(), expected: impl Fn(&Result<bool, Error>) -> bool) {
        let many_path = format!("{}/many", self.path);
        let holder = semaphore(self.holder_client, &many_path, 2);
        let waiter = semaphore(self.waiter_client, &many_path, 2);
        let held = holder.acquire().unwrap();
        let mutex_path = format!("{}/mutex", self.path);
        let mutex_holder = SemaphoreMutex::new(self.holder_client, &mutex_path).unwrap();
        let mutex_waiter = SemaphoreMutex::new(self.waiter_client, &mutex_path).unwrap();
        let locked = mutex_holder.lock().unwrap();
        thread::scope(|s| {
            let many = s.spawn(|| timed_many(&waiter, late));
            let lock = s.spawn(|| timed_lock(&mutex_waiter, late));
            // The semaphore's second lease waits, its first held.
            eventually(WAIT, "both wait with a lease", || {
                leases_and_locks(self.holder_client, &many_path).0.len() == 3
                    && leases_and_locks(self.holder_client, &mutex_path).0.len() == 2
            });
            fault();
            for result in [many.join().unwrap(), lock.join().unwrap()] {
                assert!(expected(&result), "{result:?}");
            }
        });
        // Faulty from the start of the call, too.
        for result in [timed_many(&waiter, late), timed_lock(&mutex_waiter, late)] {
            assert!(expected(&result), "{result:?}");
        }
        support::within("returning the leases", support::AT_ONCE, || {
            drop(held);
            drop(locked);
        });
    }
}

#[test]
fn acquire_many_timeout_and_a_semaphore_mutex_s_lock_timeout_return_by_their_deadline_with_the_server_down() {
    let mut server = TestingServer::start().unwrap();
    let connect = server.connect_string();
    let (holder_client, waiter_client) = (client_of(&connect), client_of(&connect));
    Case {
        path: "/semaphores",
        holder_client: &holder_client,
        waiter_client: &waiter_client,
    }
    .run(
        LATE_WHEN_DOWN,
        || server.stop().unwrap(),
        |result| matches!(result, Err(Error::Unreachable { .. })),
    );
    server.restart().unwrap();
    let admin = client_of(&connect);
    eventually(WAIT, "no node is left", || {
        nothing_left(&admin, "/semaphores/many") && nothing_left(&admin, "/semaphores/mutex")
    });
}

#[test]
fn acquire_many_timeout_and_a_semaphore_mutex_s_lock_timeout_return_by_their_deadline_with_the_server_stalled() {
    let proxy = FaultProxy::start(&shared_connect_string()).unwrap();
    let path = unique_path("semaphore-stalled-deadlines");
    let (holder_client, waiter_client) = (client(), support::proxied_client(&proxy));
    Case {
        path: &path,
        holder_client: &holder_client,
        waiter_client: &waiter_client,
    }
    .run(LATE_WHEN_STALLED, || proxy.blackhole(), stalled_result);
    proxy.heal();
    eventually(WAIT, "no node is left", || {
        nothing_left(&holder_client, &format!("{path}/many")) && nothing_left(&holder_client, &format!("{path}/mutex"))
    });
}
