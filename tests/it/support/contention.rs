//! Continuous contention under faults, for the lock-like recipes: several
//! participants (separate clients, some behind a fault proxy each) take a
//! lock turn after turn on a server of the test's own, while a checker
//! samples every participant every millisecond and faults land while one
//! of them holds and others wait: a connection cut, a partition longer
//! than the session, a server restart.
//!
//! A guard is not `Send` (it belongs to the thread that acquired it), so
//! each holder samples its own guard's `is_held()` every millisecond and
//! publishes it on the [`Board`], which the checker reads every
//! millisecond: a holder is shown holding only while its last sample said
//! so. It also writes `enter`/`exit` to a [`Ledger`], `exit` as soon as
//! `is_held()` turns false (when it stops counting on its hold) or before
//! it lets go, so the ledger's check covers what sampling might miss.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use zk_queue::client::RetryNTimes;
use zk_queue::testing::{FaultProxy, TestingServer};
use zk_queue::{Error, ZkClient};

use super::ledger::Ledger;
use super::sightings::Sightings;
use super::Stop;
use super::{eventually, eventually_or};

/// The longest wait for anything these tests wait on.
const WAIT: Duration = Duration::from_secs(60);

/// How long a direct participant holds each turn, unless it stops
/// counting sooner.
pub const HOLD: Duration = Duration::from_millis(200);

/// The session timeout of the participants behind a proxy. A holder cut off
/// hears of it two thirds into the silence (its client gives the connection
/// up), and the server gives its turn to another no sooner than the whole
/// timeout after it last heard from it: the third between is what the
/// holder's threads have to run in, 1.3 s, on a machine that runs a second
/// copy of the suite beside this one (with 2 s, 0.67 s was once not
/// enough).
const PROXIED_SESSION: Duration = Duration::from_secs(4);

/// How long a participant behind a proxy holds each turn, unless it stops
/// counting sooner: twice its session, so that a partitioned holder which
/// went on counting on its hold would still count when the server has
/// expired its session and another participant holds.
pub const LONG_HOLD: Duration = Duration::from_secs(8);

/// How long each acquisition waits before the participant looks whether
/// the test is over: longer than a whole line of the others' turns ahead
/// of it (a long hold behind a proxy and the direct ones' short holds, with
/// their acquisitions) twice over, so that a waiter keeps its place in line
/// while the others take theirs. A waiter that gives up and joins again at
/// the back of the line can be passed over turn after turn: with four
/// participants one took no turn in the minute after a restart, once with
/// a second's wait, and once, on a loaded machine, with the longest hold
/// and 2 s.
const TRY_FOR: Duration = Duration::from_secs(2 * LONG_HOLD.as_secs() + 4);

/// What every participant shows: whether it holds, whether it is trying
/// to, and how many turns it took.
pub struct Board {
    names: Vec<String>,
    holding: Vec<AtomicBool>,
    trying: Vec<AtomicBool>,
    turns: Vec<AtomicU64>,
    seen: Sightings,
    stop: Stop,
}

impl Board {
    pub fn new(names: &[String]) -> Board {
        let flags = || names.iter().map(|_| AtomicBool::new(false)).collect();
        Board {
            names: names.to_vec(),
            holding: flags(),
            trying: flags(),
            turns: names.iter().map(|_| AtomicU64::new(0)).collect(),
            seen: Sightings::new(names.len()),
            stop: Stop::new(),
        }
    }

    pub fn stop(&self) {
        self.stop.stop();
    }

    fn stopped(&self) -> bool {
        self.stop.stopped()
    }

    pub fn holds(&self, who: usize) -> bool {
        self.holding[who].load(Ordering::Acquire)
    }

    /// Whether another participant than `who` is trying to acquire.
    pub fn others_wait(&self, who: usize) -> bool {
        (0..self.names.len()).any(|n| n != who && self.trying[n].load(Ordering::Acquire))
    }

    pub fn turns(&self, who: usize) -> u64 {
        self.turns[who].load(Ordering::Acquire)
    }

    pub fn all_turns(&self) -> Vec<u64> {
        (0..self.names.len()).map(|n| self.turns(n)).collect()
    }

    /// Runs `participant(n, client, hold)` on a thread of its own for each
    /// of `cast`'s participants (its client, its hold) while `check`
    /// samples this board and [`land_faults`] lands the faults; stops the
    /// participants once the faults are over and `check` saw each hold, and
    /// returns what `check` returned.
    pub fn under_faults(
        &self,
        server: &mut TestingServer,
        cast: &Cast,
        check: impl FnOnce(&Board) -> Vec<u64> + Send,
        participant: impl Fn(usize, &ZkClient, Duration) + Sync,
    ) -> Vec<u64> {
        thread::scope(|s| {
            for (n, client) in cast.clients.iter().enumerate() {
                let (participant, hold) = (&participant, cast.hold(n));
                s.spawn(move || participant(n, client, hold));
            }
            let checker = s.spawn(|| check(self));
            // Stops the participants and the check also when a fault's
            // assertion fails, so that the failure ends the test instead of
            // leaving the scope waiting for threads that never stop.
            let _stop = self.stop.on_drop();
            land_faults(
                server,
                cast,
                |n| self.holds(n),
                |n| self.others_wait(n),
                |n| self.turns(n),
            );
            eventually(WAIT, "the check saw each participant hold", || self.seen.each_seen());
            self.stop();
            checker.join().unwrap()
        })
    }

    /// Samples every participant every millisecond until stopped, asserting
    /// that at most `max` hold at once; returns how many samples saw each
    /// holding.
    pub fn check(&self, max: usize) -> Vec<u64> {
        self.check_that(&format!("at most {max}"), |holding| holding.len() <= max)
    }

    /// As [`check`](Self::check), asserting that readers (whose names
    /// start with `r`) hold only beside readers, writers only alone.
    pub fn check_readers_writers(&self) -> Vec<u64> {
        self.check_that("readers beside readers, writers alone", |holding| {
            holding.len() <= 1 || holding.iter().all(|who| who.starts_with('r'))
        })
    }

    /// Samples every participant every millisecond until stopped, asserting
    /// that `allowed` holds of those holding; returns how many samples saw
    /// each holding.
    fn check_that(&self, rule: &str, allowed: impl Fn(&[&str]) -> bool) -> Vec<u64> {
        while !self.stopped() {
            let holding: Vec<&str> = (0..self.names.len())
                .filter(|&n| self.holds(n))
                .map(|n| self.names[n].as_str())
                .collect();
            assert!(allowed(&holding), "{holding:?} hold at once ({rule})");
            for n in 0..self.names.len() {
                self.seen.saw(n, holding.contains(&self.names[n].as_str()));
            }
            thread::sleep(Duration::from_millis(1));
        }
        self.seen.counts()
    }

    /// Takes turns as participant `who` until stopped: acquires with
    /// `acquire` (given how long to wait), then holds for `hold`, sampling
    /// `is_held` every millisecond, until the hold ends or `is_held` turns
    /// false. An acquisition that fails (a fault) is tried again.
    pub fn take_turns<G>(
        &self,
        who: usize,
        hold: Duration,
        ledger: &Ledger,
        acquire: impl Fn(Duration) -> Result<Option<G>, Error>,
        is_held: impl Fn(&G) -> bool,
    ) {
        let name = &self.names[who];
        let mut turn = 0;
        while !self.stopped() {
            self.trying[who].store(true, Ordering::Release);
            let acquired = acquire(TRY_FOR);
            self.trying[who].store(false, Ordering::Release);
            let guard = match acquired {
                Ok(Some(guard)) => guard,
                Ok(None) => continue,
                Err(e) => {
                    log::debug!("{name}: {e}");
                    thread::sleep(Duration::from_millis(20));
                    continue;
                }
            };
            if !is_held(&guard) {
                continue;
            }
            let me = format!("{name}.{turn}");
            turn += 1;
            ledger.enter(&me);
            self.holding[who].store(true, Ordering::Release);
            let until = Instant::now() + hold;
            while Instant::now() < until && is_held(&guard) {
                thread::sleep(Duration::from_millis(1));
            }
            self.holding[who].store(false, Ordering::Release);
            ledger.exit(&me);
            self.turns[who].fetch_add(1, Ordering::AcqRel);
            drop(guard);
        }
    }
}

/// The participants of a fault matrix: `direct` clients of `server`, and
/// `proxied` clients each behind a fault proxy of its own with a 2 s
/// session ([`PROXIED_SESSION`]); the proxied ones come last.
pub struct Cast {
    pub clients: Vec<ZkClient>,
    pub proxies: Vec<FaultProxy>,
    pub names: Vec<String>,
}

impl Cast {
    pub fn new(server: &TestingServer, direct: usize, proxied: usize) -> Cast {
        let connect = server.connect_string();
        let mut clients: Vec<ZkClient> = (0..direct).map(|_| super::client_of(&connect)).collect();
        let proxies: Vec<FaultProxy> = (0..proxied).map(|_| FaultProxy::start(&connect).unwrap()).collect();
        clients.extend(proxies.iter().map(|p| {
            ZkClient::builder(&p.connect_string())
                .session_timeout(PROXIED_SESSION)
                .connection_timeout(Duration::from_secs(2))
                .request_timeout(Duration::from_secs(1))
                .retry_policy(RetryNTimes::new(1, Duration::from_millis(100)))
                .connect()
                .unwrap()
        }));
        let names = (0..direct)
            .map(|n| format!("direct{n}"))
            .chain((0..proxied).map(|n| format!("proxied{n}")))
            .collect();
        Cast {
            clients,
            proxies,
            names,
        }
    }

    /// How long participant `n` holds each turn: [`LONG_HOLD`] behind a
    /// proxy, [`HOLD`] otherwise.
    pub fn hold(&self, n: usize) -> Duration {
        if n < self.clients.len() - self.proxies.len() {
            HOLD
        } else {
            LONG_HOLD
        }
    }

    /// The index of the participant behind proxy `n`.
    pub fn proxied(&self, n: usize) -> usize {
        self.clients.len() - self.proxies.len() + n
    }
}

/// Lands each fault while a participant holds and others wait, and checks
/// that the participants go on taking turns after it:
/// 1. the connection of the holder behind proxy 0 is cut;
/// 2. the holder behind proxy 1 is partitioned from the server until the
///    server expired its session and another participant took a turn
///    after that, then healed;
/// 3. the server restarts while someone holds.
///
/// `holds(n)` says whether participant `n` holds, `others_wait(n)` whether
/// another waits, `turns(n)` how many turns it took.
pub fn land_faults(
    server: &mut TestingServer,
    cast: &Cast,
    holds: impl Fn(usize) -> bool,
    others_wait: impl Fn(usize) -> bool,
    turns: impl Fn(usize) -> u64,
) {
    let everyone = 0..cast.clients.len();
    // Early in a hold: the participant begins a turn while others wait.
    let mid_hold = |who: usize, what: &str| {
        let name = &cast.names[who];
        eventually(WAIT, &format!("{name} is between turns ({what})"), || !holds(who));
        eventually(WAIT, &format!("{name} holds and others wait ({what})"), || {
            holds(who) && others_wait(who)
        });
    };
    let all_turns = || everyone.clone().map(&turns).collect::<Vec<_>>();
    let each_takes_a_turn_after = |what: &str| {
        let before = all_turns();
        let waited = eventually_or(WAIT, || all_turns().iter().zip(&before).all(|(now, then)| now > then));
        assert!(
            waited,
            "not within {WAIT:?}: each participant takes a turn after {what} (turns before {before:?}, now {:?}, \
             holding {:?})",
            all_turns(),
            everyone
                .clone()
                .filter(|&n| holds(n))
                .map(|n| &cast.names[n])
                .collect::<Vec<_>>()
        );
    };

    // 1. A cut: the holder stops counting on its hold at once; its
    // session lives on.
    let cut = cast.proxied(0);
    mid_hold(cut, "before the cut");
    cast.proxies[0].cut();
    each_takes_a_turn_after("the cut");

    // 2. A partition longer than the session: the others hold only once
    // the server expired it.
    let parted = cast.proxied(1);
    let admin = super::client_of(&server.connect_string());
    let marker = super::session_marker(&cast.clients[parted], &admin);
    mid_hold(parted, "before the partition");
    let others = || everyone.clone().filter(|&n| n != parted).map(&turns).sum::<u64>();
    cast.proxies[1].blackhole();
    super::wait_for_server_expiry(&admin, &marker);
    let before = others();
    eventually(WAIT, "another participant takes a turn after the expiry", || {
        others() > before
    });
    cast.proxies[1].heal();
    each_takes_a_turn_after("the partition");

    // 3. A server restart while someone holds.
    eventually(WAIT, "someone holds and others wait (before the restart)", || {
        everyone.clone().any(|n| holds(n) && others_wait(n))
    });
    server.restart().unwrap();
    each_takes_a_turn_after("the restart");
}

/// How long the exclusive recipes' matrix waits for their nodes to go
/// once the participants stopped.
const LEFT_WAIT: Duration = Duration::from_secs(30);

/// The fault matrix of a recipe with one holder at a time (a mutex, a
/// write lock, a semaphore mutex): two direct and two proxied participants
/// on a server of the test's own take turns through
/// `participant(board, ledger, n, client, hold)` while the faults land.
/// Asserts that never two hold (sampled every millisecond, and in the
/// ledger), that each was seen holding, and that `nothing_left(admin)`
/// comes true once they stopped.
pub fn one_holder_under_faults(
    participant: impl Fn(&Board, &Ledger, usize, &ZkClient, Duration) + Sync,
    nothing_left: impl Fn(&ZkClient) -> bool,
) {
    let mut server = TestingServer::start().unwrap();
    let cast = Cast::new(&server, 2, 2);
    let board = Board::new(&cast.names);
    let ledger = Ledger::new();
    let seen = board.under_faults(
        &mut server,
        &cast,
        |board| board.check(1),
        |n, client, hold| participant(&board, &ledger, n, client, hold),
    );
    eprintln!("turns {:?}, samples holding {seen:?}", board.all_turns());
    let (entries, most) = ledger.check(1);
    assert_eq!(most, 1, "{entries} turns");
    let admin = super::client_of(&server.connect_string());
    eventually(LEFT_WAIT, "no node is left", || nothing_left(&admin));
}
