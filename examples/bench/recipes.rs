//! Coordination recipes beside Curator's (`--recipes`), on the server the
//! rest of the run warmed up:
//!
//! - the floor, with our client: an ephemeral-sequential create, then its
//!   delete, one at a time; beside it one listing of a lock path (the read
//!   round trip) and the time from a delete call to another client's watch
//!   event on it (the event);
//! - ours: `recipes::Mutex` uncontended (lock, then release), and its
//!   hand-off between contenders (each with a client of its own): from the
//!   holder's release call to the next holder's lock returning;
//! - Curator's, through `interop/java/CuratorRecipePeer.java`: the same for
//!   `InterProcessMutex`, `InterProcessSemaphoreV2`'s acquire and release,
//!   and `LeaderSelector`'s hand-off.
//!
//! Every part first runs half its cycles unrecorded (warm-up). Each row's
//! ratios are to the floor of this run, and ours to Curator's row of the
//! same recipe. Adding a recipe of ours is a line in [`ours`] (with a
//! cycle or a hand-off loop: see the semaphore and selector notes there);
//! Curator's rows already carry the names to compare with.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

use anyhow::{bail, Context};
use parking_lot::Mutex;
use serde::Serialize;
use zk_queue::{
    client::{ClientStats, CreateMode},
    recipes, ZkClient,
};

use super::cases::Ctx;
use super::java::Peer;
use super::report::{int, opt};
use super::util::{self, percentile_ms, Requests};

/// What a row measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Measure {
    /// One participant alone: acquire, then release, a cycle at a time.
    Cycle,
    /// Contenders in line: from a holder's release call to the next one holding.
    Handoff,
}

/// One recipe, ours or Curator's.
#[derive(Debug, Serialize)]
pub struct RecipeReport {
    /// `mutex`, `mutex-handoff`, `semaphore`, `selector-handoff`.
    pub recipe: &'static str,
    /// `ours` or `curator`.
    pub implementation: &'static str,
    pub measure: Measure,
    /// Cycles (or hand-offs) recorded, after as many again halved unrecorded.
    pub cycles: usize,
    /// Contenders of a hand-off (1 for a cycle).
    pub contenders: usize,
    /// Cycles (hand-offs) per second.
    pub per_s: Option<f64>,
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    /// A cycle: its mean time over the floor's (the floor's rate over its
    /// rate). A hand-off: its p50 over the event's p50 plus the read's.
    pub time_to_floor: Option<f64>,
    /// Ours: the p50 over Curator's p50 of the same recipe.
    pub p50_to_curator: Option<f64>,
    /// Ours: the rate over Curator's.
    pub rate_to_curator: Option<f64>,
    /// Ours: requests sent per cycle (per hand-off, by all contenders),
    /// warm-up included.
    pub requests_per_cycle: Option<Requests>,
    pub error: Option<String>,
}

/// The floor of the run, with our client.
#[derive(Debug, Serialize)]
pub struct Floor {
    pub cycles: usize,
    /// Create+delete cycles per second, one at a time.
    pub per_s: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub create_p50_ms: f64,
    pub delete_p50_ms: f64,
    /// One listing of a lock path with a node per contender: a read round trip.
    pub read_p50_ms: f64,
    pub read_p99_ms: f64,
    /// From a delete call to another client's thread waking on its watch event.
    pub event_p50_ms: f64,
    pub event_p99_ms: f64,
}

/// Whether the goals were met in this run.
#[derive(Debug, Serialize)]
pub struct Goals {
    /// Our uncontended mutex cycle over the floor's (goal: at most 1.1).
    pub mutex_time_to_floor: Option<f64>,
    pub mutex_within_1_1_floor: Option<bool>,
    /// Our mutex hand-off p50 and the bound: the event's p50 plus one read's.
    pub handoff_p50_ms: Option<f64>,
    pub event_plus_read_p50_ms: f64,
    pub handoff_within_event_plus_read: Option<bool>,
}

/// The `recipes` part of the report.
#[derive(Debug, Serialize)]
pub struct Recipes {
    pub floor: Option<Floor>,
    pub reports: Vec<RecipeReport>,
    pub goals: Option<Goals>,
    pub error: Option<String>,
}

/// Times of cycles (ns) and the seconds they took together.
struct Run {
    nanos: Vec<u64>,
    secs: f64,
    /// Requests per cycle, where known.
    requests: Option<Requests>,
}

/// What Curator's peer printed for one recipe.
#[derive(serde::Deserialize)]
pub struct PeerFigures {
    pub per_s: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
}

/// What Curator's peer printed.
#[derive(serde::Deserialize)]
pub struct CuratorRecipes {
    pub mutex: PeerFigures,
    pub mutex_handoff: PeerFigures,
    pub semaphore: PeerFigures,
    pub selector_handoff: PeerFigures,
}

/// Runs the floor, ours, then Curator's through `java` (unless `None`).
pub fn run(ctx: &Ctx, cycles: usize, contenders: usize, java: Option<&Peer>) -> Recipes {
    let root = format!("{}/recipes", ctx.root);
    let result = ctx
        .admin
        .ensure_path(&root)
        .with_context(|| format!("creating {root}"))
        .and_then(|()| floor(ctx, &root, cycles, contenders));
    let floor = match result {
        Ok(floor) => floor,
        Err(e) => {
            let _ = util::remove_tree(ctx.admin, &root);
            return Recipes {
                floor: None,
                reports: Vec::new(),
                goals: None,
                error: Some(format!("the floor: {e:#}")),
            };
        }
    };
    let mut reports = ours(ctx, &root, cycles, contenders);
    if let Some(peer) = java {
        reports.extend(curator(ctx, peer, &root, cycles, contenders));
    }
    let _ = util::remove_tree(ctx.admin, &root);
    let event_plus_read = floor.event_p50_ms + floor.read_p50_ms;
    for report in &mut reports {
        report.time_to_floor = match report.measure {
            Measure::Cycle => report.per_s.map(|rate| floor.per_s / rate),
            Measure::Handoff => report.p50_ms.map(|p50| p50 / event_plus_read),
        };
    }
    compare_with_curator(&mut reports);
    let find = |recipe| {
        reports
            .iter()
            .find(|r| r.recipe == recipe && r.implementation == "ours")
    };
    let mutex_time_to_floor = find("mutex").and_then(|r| r.time_to_floor);
    let handoff_p50_ms = find("mutex-handoff").and_then(|r| r.p50_ms);
    let goals = Goals {
        mutex_time_to_floor,
        mutex_within_1_1_floor: mutex_time_to_floor.map(|t| t <= 1.1),
        handoff_p50_ms,
        event_plus_read_p50_ms: event_plus_read,
        handoff_within_event_plus_read: handoff_p50_ms.map(|p50| p50 <= event_plus_read),
    };
    Recipes {
        floor: Some(floor),
        reports,
        goals: Some(goals),
        error: None,
    }
}

/// Our recipes. A recipe to add: a line here, `cycle_report(.., cycles(..,
/// |..| { acquire; release }))` for an uncontended rate (a `Semaphore`'s
/// acquire and its lease's release, as `semaphore`), or `handoff_report(..,
/// handoffs(.., |client, line| ..))` for a hand-off (a `LeaderSelector`
/// whose leadership calls `line.acquired()` and `line.releasing()` and
/// returns, as `selector-handoff`).
fn ours(ctx: &Ctx, root: &str, cycles: usize, contenders: usize) -> Vec<RecipeReport> {
    vec![
        cycle_report("mutex", "ours", cycles, mutex_cycles(ctx, root, cycles)),
        handoff_report(
            "mutex-handoff",
            "ours",
            (cycles, contenders),
            handoffs(ctx, "mutex-handoff", (cycles, contenders), |client, line| {
                let mutex = recipes::Mutex::builder(client, &format!("{root}/mutex-handoff")).build()?;
                while !line.finished() {
                    let guard = mutex
                        .lock_timeout(line.deadline.remaining())?
                        .context("no turn by the deadline")?;
                    line.acquired();
                    line.releasing();
                    drop(guard);
                }
                Ok(())
            }),
        ),
    ]
}

/// Curator's recipes, all from one run of the peer.
fn curator(ctx: &Ctx, peer: &Peer, root: &str, cycles: usize, contenders: usize) -> Vec<RecipeReport> {
    let path = format!("{root}/curator");
    let measured = ctx
        .admin
        .ensure_path(&path)
        .with_context(|| format!("creating {path}"))
        .and_then(|()| peer.curator_recipes(ctx.admin, ctx.connect, &path, (cycles, cycles / 2, contenders)));
    let rows = [
        ("mutex", Measure::Cycle),
        ("mutex-handoff", Measure::Handoff),
        ("semaphore", Measure::Cycle),
        ("selector-handoff", Measure::Handoff),
    ];
    rows.into_iter()
        .map(|(recipe, measure)| {
            let figures = measured.as_ref().map(|m| match recipe {
                "mutex" => &m.mutex,
                "mutex-handoff" => &m.mutex_handoff,
                "semaphore" => &m.semaphore,
                _ => &m.selector_handoff,
            });
            let mut report = empty(recipe, "curator", measure, cycles, contenders);
            match figures {
                Ok(f) => {
                    report.per_s = Some(f.per_s);
                    report.p50_ms = Some(f.p50_ms);
                    report.p99_ms = Some(f.p99_ms);
                }
                Err(e) => report.error = Some(format!("{e:#}")),
            }
            report
        })
        .collect()
}

/// Sets each row of ours beside Curator's row of the same recipe.
fn compare_with_curator(reports: &mut [RecipeReport]) {
    let curator: Vec<(&'static str, Option<f64>, Option<f64>)> = reports
        .iter()
        .filter(|r| r.implementation == "curator")
        .map(|r| (r.recipe, r.p50_ms, r.per_s))
        .collect();
    for report in reports.iter_mut().filter(|r| r.implementation == "ours") {
        if let Some((_, p50, rate)) = curator.iter().find(|(recipe, ..)| *recipe == report.recipe) {
            report.p50_to_curator = report.p50_ms.zip(*p50).map(|(ours, theirs)| ours / theirs);
            report.rate_to_curator = report.per_s.zip(*rate).map(|(ours, theirs)| ours / theirs);
        }
    }
}

fn empty(
    recipe: &'static str,
    implementation: &'static str,
    measure: Measure,
    cycles: usize,
    contenders: usize,
) -> RecipeReport {
    RecipeReport {
        recipe,
        implementation,
        measure,
        cycles,
        contenders: if measure == Measure::Cycle { 1 } else { contenders },
        per_s: None,
        p50_ms: None,
        p99_ms: None,
        time_to_floor: None,
        p50_to_curator: None,
        rate_to_curator: None,
        requests_per_cycle: None,
        error: None,
    }
}

fn cycle_report(
    recipe: &'static str,
    implementation: &'static str,
    cycles: usize,
    run: anyhow::Result<Run>,
) -> RecipeReport {
    filled(empty(recipe, implementation, Measure::Cycle, cycles, 1), run)
}

fn handoff_report(
    recipe: &'static str,
    implementation: &'static str,
    (cycles, contenders): (usize, usize),
    run: anyhow::Result<Run>,
) -> RecipeReport {
    filled(empty(recipe, implementation, Measure::Handoff, cycles, contenders), run)
}

fn filled(mut report: RecipeReport, run: anyhow::Result<Run>) -> RecipeReport {
    match run {
        Ok(mut run) => {
            run.nanos.sort_unstable();
            report.per_s = Some(run.nanos.len() as f64 / run.secs);
            report.p50_ms = percentile_ms(&run.nanos, 50.0);
            report.p99_ms = percentile_ms(&run.nanos, 99.0);
            report.requests_per_cycle = run.requests;
        }
        Err(e) => report.error = Some(format!("{e:#}")),
    }
    report
}

/// Runs `cycle` `cycles / 2` times unrecorded, then `cycles` times timed.
fn cycles(
    ctx: &Ctx,
    what: &str,
    cycles: usize,
    mut cycle: impl FnMut(&util::Deadline) -> anyhow::Result<()>,
) -> anyhow::Result<Run> {
    let deadline = ctx.budget.deadline(&format!("recipe {what}"), 6.0 * cycles as f64);
    for _ in 0..cycles / 2 {
        cycle(&deadline)?;
    }
    let mut nanos = Vec::with_capacity(cycles);
    let started = Instant::now();
    for _ in 0..cycles {
        let t = Instant::now();
        cycle(&deadline)?;
        nanos.push(t.elapsed().as_nanos() as u64);
        if Instant::now() >= deadline.at {
            bail!("{}", deadline.missed());
        }
    }
    Ok(Run {
        nanos,
        secs: started.elapsed().as_secs_f64(),
        requests: None,
    })
}

fn mutex_cycles(ctx: &Ctx, root: &str, n: usize) -> anyhow::Result<Run> {
    let client = ZkClient::connect(ctx.connect).context("connecting")?;
    let mutex = recipes::Mutex::builder(&client, &format!("{root}/mutex")).build()?;
    let run = cycles(ctx, "mutex", n, |deadline| {
        let guard = mutex
            .lock_timeout(deadline.remaining())?
            .context("an uncontended mutex was not acquired")?;
        drop(guard);
        Ok(())
    });
    // A new client: every request it sent was the mutex's.
    let sent = client.stats();
    drop(mutex);
    client.close();
    run.map(|run| Run {
        requests: Some(Requests::per_item(&[sent], n + n / 2)),
        ..run
    })
}

/// The floor: create+delete cycles, listings, and delete-to-event times.
fn floor(ctx: &Ctx, root: &str, n: usize, contenders: usize) -> anyhow::Result<Floor> {
    let path = format!("{root}/floor");
    ctx.admin.ensure_path(&path)?;
    let (mut creates, mut deletes) = (Vec::with_capacity(n), Vec::with_capacity(n));
    let run = cycles(ctx, "floor", n, |_| {
        let t = Instant::now();
        let (node, _) = ctx
            .admin
            .create(&format!("{path}/n-"), b"", CreateMode::EphemeralSequential)?;
        let created = Instant::now();
        ctx.admin.delete(&node, None)?;
        creates.push((created - t).as_nanos() as u64);
        deletes.push(created.elapsed().as_nanos() as u64);
        Ok(())
    })?;
    // The warm-up's cycles were recorded too: only the timed ones count.
    let (creates, deletes) = (&mut creates[n / 2..], &mut deletes[n / 2..]);
    creates.sort_unstable();
    deletes.sort_unstable();

    // A lock path with a node per contender, listed one listing at a time.
    let line = format!("{root}/line");
    ctx.admin.ensure_path(&line)?;
    for _ in 0..contenders {
        ctx.admin
            .create(&format!("{line}/n-"), b"", CreateMode::EphemeralSequential)?;
    }
    let mut reads = cycles(ctx, "read", n, |_| {
        ctx.admin.get_children(&line)?;
        Ok(())
    })?;
    reads.nanos.sort_unstable();

    let mut events = delete_to_event(ctx, root, n)?;
    events.sort_unstable();
    let mut nanos = run.nanos;
    nanos.sort_unstable();
    let p = |v: &[u64], at| percentile_ms(v, at).unwrap_or(f64::NAN);
    Ok(Floor {
        cycles: n,
        per_s: n as f64 / run.secs,
        p50_ms: p(&nanos, 50.0),
        p99_ms: p(&nanos, 99.0),
        create_p50_ms: p(creates, 50.0),
        delete_p50_ms: p(deletes, 50.0),
        read_p50_ms: p(&reads.nanos, 50.0),
        read_p99_ms: p(&reads.nanos, 99.0),
        event_p50_ms: p(&events, 50.0),
        event_p99_ms: p(&events, 99.0),
    })
}

/// From a delete call of ours to a thread of another client waking on its
/// child watch of the deleted node's parent, `n` times (after `n / 2`).
fn delete_to_event(ctx: &Ctx, root: &str, n: usize) -> anyhow::Result<Vec<u64>> {
    let path = format!("{root}/event");
    ctx.admin.ensure_path(&path)?;
    let watcher = ZkClient::connect(ctx.connect).context("connecting the watcher")?;
    let deadline = ctx.budget.deadline("recipe event", 6.0 * n as f64);
    let mut nanos = Vec::with_capacity(n);
    let result = (0..n + n / 2).try_for_each(|i| -> anyhow::Result<()> {
        let (node, _) = ctx
            .admin
            .create(&format!("{path}/n-"), b"", CreateMode::EphemeralSequential)?;
        let (_, _, watch) = watcher.get_children_watch(&path)?;
        let woke = std::thread::scope(|s| {
            let waiting = s.spawn(|| {
                watch.wait_timeout(deadline.remaining());
                Instant::now()
            });
            let t = Instant::now();
            let deleted = ctx.admin.delete(&node, None);
            let woke = waiting.join().map_err(|_| anyhow::anyhow!("the watcher died"))?;
            deleted?;
            anyhow::Ok(woke - t)
        })?;
        if i >= n / 2 {
            nanos.push(woke.as_nanos() as u64);
        }
        if Instant::now() >= deadline.at {
            bail!("{}", deadline.missed());
        }
        Ok(())
    });
    watcher.close();
    result.map(|()| nanos)
}

/// The line of a hand-off part: holders note their release; the next
/// holder records the time since.
pub struct Line {
    released: Mutex<Option<Instant>>,
    recorded: Mutex<Vec<u64>>,
    /// Hand-offs wanted: unrecorded ones first, then these.
    warmup: usize,
    cycles: usize,
    seen: AtomicUsize,
    first: Mutex<Option<Instant>>,
    last: Mutex<Option<Instant>>,
    failed: AtomicBool,
    pub deadline: util::Deadline,
}

impl Line {
    /// Whether the contenders may stop.
    pub fn finished(&self) -> bool {
        self.failed.load(Ordering::Acquire) || self.seen.load(Ordering::Acquire) >= self.warmup + self.cycles
    }

    /// Called by a contender as soon as it holds.
    pub fn acquired(&self) {
        let now = Instant::now();
        let Some(then) = self.released.lock().take() else {
            return;
        };
        let i = self.seen.fetch_add(1, Ordering::AcqRel);
        if i == self.warmup {
            *self.first.lock() = Some(then);
        }
        if (self.warmup..self.warmup + self.cycles).contains(&i) {
            self.recorded.lock().push((now - then).as_nanos() as u64);
            *self.last.lock() = Some(now);
        }
    }

    /// Called by the holder right before its release call.
    pub fn releasing(&self) {
        *self.released.lock() = Some(Instant::now());
    }
}

/// `contenders` threads, each with a client of its own, run `contend`
/// until `cycles` hand-offs were recorded after `cycles / 2` unrecorded.
fn handoffs(
    ctx: &Ctx,
    what: &str,
    (cycles, contenders): (usize, usize),
    contend: impl Fn(&ZkClient, &Line) -> anyhow::Result<()> + Sync,
) -> anyhow::Result<Run> {
    let line = Line {
        released: Mutex::new(None),
        recorded: Mutex::new(Vec::with_capacity(cycles)),
        warmup: cycles / 2,
        cycles,
        seen: AtomicUsize::new(0),
        first: Mutex::new(None),
        last: Mutex::new(None),
        failed: AtomicBool::new(false),
        deadline: ctx.budget.deadline(&format!("recipe {what}"), 6.0 * cycles as f64),
    };
    let clients = (0..contenders)
        .map(|_| ZkClient::connect(ctx.connect).context("connecting a contender"))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let results: Vec<anyhow::Result<()>> = std::thread::scope(|s| {
        let threads: Vec<_> = clients
            .iter()
            .map(|client| {
                let (line, contend) = (&line, &contend);
                s.spawn(move || {
                    let result = contend(client, line);
                    if result.is_err() {
                        line.failed.store(true, Ordering::Release);
                    }
                    result
                })
            })
            .collect();
        threads
            .into_iter()
            .map(|t| {
                t.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("a contender panicked")))
            })
            .collect()
    });
    let sent: Vec<ClientStats> = clients.iter().map(ZkClient::stats).collect();
    for client in clients {
        client.close();
    }
    results.into_iter().collect::<anyhow::Result<()>>()?;
    let (first, last) = (*line.first.lock(), *line.last.lock());
    let secs = match first.zip(last) {
        Some((first, last)) => (last - first).as_secs_f64(),
        None => bail!("no hand-off recorded"),
    };
    let handed = line.seen.load(Ordering::Acquire);
    Ok(Run {
        nanos: line.recorded.into_inner(),
        secs,
        requests: Some(Requests::per_item(&sent, handed)),
    })
}

/// Prints the recipes' table.
pub fn print(json: bool, recipes: Option<&Recipes>) {
    let Some(r) = recipes else { return };
    if json {
        return;
    }
    println!("\ncoordination recipes beside Curator (one participant; hand-offs between contenders, a client each)");
    if let Some(e) = &r.error {
        println!("failed: {e}");
        return;
    }
    if let Some(f) = &r.floor {
        println!(
            "floor, one at a time: ephemeral-sequential create + delete {} /s, p50 {:.3} ms, p99 {:.3} ms (create {:.3}, delete {:.3}); a listing p50 {:.3} ms; delete to watch event p50 {:.3} ms",
            int(f.per_s),
            f.p50_ms,
            f.p99_ms,
            f.create_p50_ms,
            f.delete_p50_ms,
            f.read_p50_ms,
            f.event_p50_ms
        );
    }
    println!(
        "{:<18} {:<8} {:>9} {:>9} {:>9} {:>8} {:>8} {:>8} {:>10}",
        "recipe", "", "per s", "p50 ms", "p99 ms", "x floor", "p50/cur", "rate/cur", "reqs/cycle"
    );
    for report in &r.reports {
        let name = match report.measure {
            Measure::Cycle => report.recipe.to_owned(),
            Measure::Handoff => format!("{}-{}", report.recipe, report.contenders),
        };
        if let Some(e) = &report.error {
            println!("{name:<18} {:<8} failed: {e}", report.implementation);
            continue;
        }
        let ratio = |v: Option<f64>| opt(v, |v| format!("{v:.2}"));
        println!(
            "{name:<18} {:<8} {:>9} {:>9} {:>9} {:>8} {:>8} {:>8} {:>10}",
            report.implementation,
            opt(report.per_s, int),
            opt(report.p50_ms, |v| format!("{v:.3}")),
            opt(report.p99_ms, |v| format!("{v:.3}")),
            ratio(report.time_to_floor),
            ratio(report.p50_to_curator),
            ratio(report.rate_to_curator),
            opt(report.requests_per_cycle.map(|q| q.total), |v| format!("{v:.2}")),
        );
    }
    println!("x floor: a cycle's mean time over the floor's; a hand-off's p50 over the event's p50 + a listing's p50");
    if let Some(g) = &r.goals {
        let yes = |b: Option<bool>| match b {
            Some(true) => "met",
            Some(false) => "NOT met",
            None => "unknown",
        };
        println!(
            "goals: uncontended mutex within 1.1 x the floor: {} ({}); hand-off p50 {} ms within event + read {:.3} ms: {}",
            yes(g.mutex_within_1_1_floor),
            opt(g.mutex_time_to_floor, |v| format!("{v:.3} x")),
            opt(g.handoff_p50_ms, |v| format!("{v:.3}")),
            g.event_plus_read_p50_ms,
            yes(g.handoff_within_event_plus_read),
        );
    }
}
