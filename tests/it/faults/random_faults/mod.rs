//! A seeded, repeatable run of faults under a produce/consume workload of
//! unique items, single and `put_multi` nodes with priorities, consumed by
//! lock-safe consumer processes (priority queues).
//!
//! The first rounds fire every kind of fault once, in an order the seed
//! shuffles; later rounds draw kinds at random. Each round waits for some
//! progress, then injects one fault: `kill -9` a consumer process (and start
//! a new one), restart a server, kill the ensemble's leader (and restart it
//! once another leads), cut the consumers' connections, blackhole them for a
//! quarter of the session timeout or until the server expired their
//! sessions, drop the reply to the next request, lock create or acknowledge
//! multi, or drop the reply to a put's create. A fault counts as fired only
//! once its effect is seen, or the run fails: a killed consumer's process is
//! gone, a restarted server's uptime began after the restart did, a killed
//! leader's process is gone and another member leads, a cut or a short
//! blackhole cut live connections (the proxies count them), a long
//! blackhole's sessions expired on the server (their markers vanished), a
//! dropped reply was dropped. The faults fired are compared with those the
//! seed plans.
//!
//! Most kills (the first of a run always) land mid-item: the victim is told
//! to hold the work of the items it begins open, and is killed once each of
//! its threads holds one. After a kill the round waits until the server
//! expired the victim's session and every node it had begun was begun again,
//! and fails if a node it held begun and unfinished was not (it was lost) or
//! was begun again later than [`KILL_PICKUP`] allows. After a long
//! blackhole, it waits until each consumer heard that its session expired
//! and has a new one, and until every node given up with the expired
//! sessions was begun again, within [`EXPIRY_PICKUP`] of the heal. The kills
//! of a run together must cost at least one node delivered again.
//!
//! The servers restart behind the proxies as they would without them: a
//! proxy refuses connections while its server does.
//!
//! Then everything is healed, the queue drained, and the invariants checked:
//! every item finished (a worker recorded that its work returned `Ok`), no
//! lock left, no consumer ever held more than its claim window of leases,
//! every node delivered again charged to one fault (the kill of its worker,
//! or the expiry of the session it was handed over in) and at most a window
//! per fault and worker, the sessions lost exactly those the long blackholes
//! expired, and every item stored twice from a put sent again. So restarts,
//! cuts, short blackholes, leader changes and lost replies cost no session
//! and add no duplicate.
//!
//! The long version is ignored; run it with
//! `ZKQ_FAULT_SEED=<seed> ZKQ_FAULT_ROUNDS=<rounds> [ZKQ_FAULT_ENSEMBLE=1] cargo test
//! --all-features --test it faults::random_faults::long -- --exact --ignored --nocapture`
//! (`scripts/test.sh` runs 100 rounds of each; `proof/README.md` keeps the
//! logs of longer runs).

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use crate::support::workload::SplitMix64;

mod report;
mod run;
mod servers;
mod victim;

use report::Report;
use run::Run;

/// The claim window of the consumer processes.
const WINDOW: usize = 4;
/// The consumers' session timeout. Long enough that a server restart on a
/// loaded machine (a second copy of the suite beside this one) costs no
/// session: with 2 s, a restarted server once expired a consumer's session
/// before the consumer, starved of the cores, reached it again.
const SESSION: Duration = Duration::from_secs(4);
/// Consumer processes running at once.
const WORKERS: usize = 2;
/// Items finished between two faults.
const PER_ROUND: usize = 30;
/// Consumer threads of each worker process.
const THREADS: usize = 2;

/// The stated bound on the pick-up after a kill: another worker begins the
/// nodes a killed one had begun within its session timeout (the server
/// expires the session, and its locks with it) and a second (a consumer busy
/// with a backlog lists the lock directory again at most once a second).
const KILL_PICKUP: Duration = Duration::from_secs(SESSION.as_secs() + 1);
/// The stated bound on the pick-up after the heal of a blackhole that expired
/// the sessions: a second for the client to reach a server again (it tries at
/// least once a second) and a second for a consumer busy with a backlog to
/// take the items whose locks vanished.
const EXPIRY_PICKUP: Duration = Duration::from_secs(2);

/// Out of this many kills after a run's first, all but one land mid-item.
const KILLS_PER_ANY_MOMENT: u64 = 4;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Fault {
    KillConsumer,
    RestartServer,
    KillLeader,
    Cut,
    ShortBlackhole,
    LongBlackhole,
    DropNextReply,
    DropCreateReply,
    DropMultiReply,
    DropPutReply,
}

const FAULTS: [Fault; 10] = [
    Fault::KillConsumer,
    Fault::RestartServer,
    Fault::KillLeader,
    Fault::Cut,
    Fault::ShortBlackhole,
    Fault::LongBlackhole,
    Fault::DropNextReply,
    Fault::DropCreateReply,
    Fault::DropMultiReply,
    Fault::DropPutReply,
];

/// The faults of a run: every kind once, in an order the seed shuffles, then
/// kinds drawn at random.
fn plan(rng: &mut SplitMix64, rounds: usize, ensemble: bool) -> Vec<Fault> {
    let mut kinds: Vec<Fault> = FAULTS
        .iter()
        .copied()
        .filter(|f| ensemble || *f != Fault::KillLeader)
        .collect();
    assert!(
        rounds >= kinds.len(),
        "{rounds} rounds cannot fire all {} kinds of fault",
        kinds.len()
    );
    for i in (1..kinds.len()).rev() {
        kinds.swap(i, usize::try_from(rng.below(i as u64 + 1)).unwrap());
    }
    let mut plan = kinds.clone();
    while plan.len() < rounds {
        plan.push(kinds[usize::try_from(rng.below(kinds.len() as u64)).unwrap()]);
    }
    plan
}

/// How many `micros` there are, their p50 and max in milliseconds.
fn run(seed: u64, rounds: usize, ensemble: bool) -> Report {
    println!("random faults: seed {seed}, {rounds} rounds, ensemble {ensemble}");
    let started = Instant::now();
    let mut rng = SplitMix64::new(seed);
    let plan = plan(&mut rng, rounds, ensemble);
    let mut run = Run::start(seed, ensemble);
    for (round, &fault) in plan.iter().enumerate() {
        run.round(round, fault, &mut rng);
    }
    run.finish(seed, rounds, ensemble, started)
}

fn env_number(name: &str) -> Option<u64> {
    std::env::var(name)
        .ok()
        .map(|v| v.trim().parse().unwrap_or_else(|e| panic!("{name}={v}: {e}")))
}

#[test]
fn every_kind_of_fault_loses_no_item_and_only_kills_and_expiries_deliver_twice() {
    let report = run(
        env_number("ZKQ_FAULT_SEED").unwrap_or(20_240_601),
        FAULTS.len() - 1,
        false,
    );
    let kinds: BTreeSet<Fault> = FAULTS.iter().copied().filter(|f| *f != Fault::KillLeader).collect();
    assert_eq!(
        report.fired.keys().copied().collect::<BTreeSet<_>>(),
        kinds,
        "{report:?}"
    );
}

#[test]
fn every_kind_of_fault_on_an_ensemble_loses_no_item_and_only_kills_and_expiries_deliver_twice() {
    let report = run(env_number("ZKQ_FAULT_SEED").unwrap_or(20_261_157), FAULTS.len(), true);
    let kinds: BTreeSet<Fault> = FAULTS.into_iter().collect();
    assert_eq!(
        report.fired.keys().copied().collect::<BTreeSet<_>>(),
        kinds,
        "{report:?}"
    );
}

#[test]
#[ignore = "long: ZKQ_FAULT_SEED, ZKQ_FAULT_ROUNDS and ZKQ_FAULT_ENSEMBLE choose the run"]
fn long() {
    let seed = env_number("ZKQ_FAULT_SEED").unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_secs())
    });
    let rounds = env_number("ZKQ_FAULT_ROUNDS").map_or(30, |r| usize::try_from(r).unwrap());
    run(seed, rounds, env_number("ZKQ_FAULT_ENSEMBLE").is_some_and(|e| e != 0));
}
