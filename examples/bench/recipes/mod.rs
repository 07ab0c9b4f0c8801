//! Coordination recipes beside Curator's (`--recipes`), on the server the
//! rest of the run warmed up:
//!
//! - the floor, with our client: an ephemeral-sequential create, then its
//!   delete, one at a time; beside it one listing of a lock path (the read
//!   round trip), the time from a delete call to another client's watch
//!   event on it (the event), and to that client's listing after the event
//!   (the event and a read: what a hand-off cannot beat);
//! - ours: `recipes::Mutex` uncontended (lock, then release), and its
//!   hand-off between contenders (each with a client of its own): from the
//!   holder's release call to the next holder's lock returning;
//!   `recipes::Semaphore` of one lease uncontended (acquire, then return);
//!   `recipes::LeaderSelector`'s hand-off, from a leader's closure
//!   returning to the next leader's closure starting;
//! - Curator's, through `interop/java/CuratorRecipePeer.java`: the same for
//!   `InterProcessMutex`, `InterProcessSemaphoreV2`'s acquire and release,
//!   and `LeaderSelector`'s hand-off.
//!
//! Every part first runs half its cycles unrecorded (warm-up). Our
//! uncontended cycles run interleaved with the floor's, a block of each in
//! turn, so that both meet the same load (see `measure.rs`). Each row's
//! ratios are to the floor of this run, and ours to Curator's row of the
//! same recipe. Adding a recipe of ours is a few lines in [`uncontended`]
//! or [`contended`]; Curator's rows carry the same names
//! (`mutex`, `mutex-handoff`, `semaphore`, `selector-handoff`).

mod measure;
mod print;

pub use print::print;

use std::sync::Arc;

use anyhow::Context;
use serde::Serialize;
use zk_queue::{recipes, ZkClient};

use super::cases::Ctx;
use super::java::Peer;
use super::util::{self, percentile_ms, Requests};
use measure::{handoffs, Cycle, Run};

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
    /// rate). A hand-off: its p50 over the floor's event-then-read p50.
    pub time_to_floor: Option<f64>,
    /// A cycle: its p50 over the floor's p50.
    pub p50_to_floor: Option<f64>,
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
    /// From a delete call to another client's listing, sent once its
    /// thread woke on the event, returning.
    pub event_then_read_p50_ms: f64,
    pub event_then_read_p99_ms: f64,
    /// The same while the deleting client creates its next node as soon
    /// as its delete returns, as a releasing holder joins the line again.
    pub event_then_read_rejoin_p50_ms: f64,
    pub event_then_read_rejoin_p99_ms: f64,
}

/// Whether the goals were met in this run.
#[derive(Debug, Serialize)]
pub struct Goals {
    /// Our uncontended mutex cycle over the floor's (goal: at most 1.1):
    /// mean times, and p50s. On a loaded machine the p50s say more (a
    /// mean takes in every pause the machine imposed).
    pub mutex_time_to_floor: Option<f64>,
    pub mutex_p50_to_floor: Option<f64>,
    pub mutex_p50_within_1_1_floor: Option<bool>,
    /// Our mutex hand-off p50 and the bound: the floor's event-then-read
    /// p50 (and the sum of the event's p50 and a listing's, measured apart).
    pub handoff_p50_ms: Option<f64>,
    pub event_then_read_p50_ms: f64,
    pub event_plus_read_p50_ms: f64,
    pub handoff_within_event_then_read: Option<bool>,
    /// The bound measured beside a rejoining create, and whether the
    /// hand-off's p50 is within it.
    pub event_then_read_rejoin_p50_ms: f64,
    pub handoff_within_event_then_read_rejoin: Option<bool>,
}

/// The `recipes` part of the report.
#[derive(Debug, Serialize)]
pub struct Recipes {
    pub floor: Option<Floor>,
    pub reports: Vec<RecipeReport>,
    pub goals: Option<Goals>,
    pub error: Option<String>,
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
        .and_then(|()| uncontended(ctx, &root, cycles, contenders));
    let (floor, mut reports) = match result {
        Ok(measured) => measured,
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
    reports.extend(contended(ctx, &root, cycles, contenders));
    if let Some(peer) = java {
        reports.extend(curator(ctx, peer, &root, cycles, contenders));
    }
    let _ = util::remove_tree(ctx.admin, &root);
    let event_then_read = floor.event_then_read_p50_ms;
    for report in &mut reports {
        report.time_to_floor = match report.measure {
            Measure::Cycle => report.per_s.map(|rate| floor.per_s / rate),
            Measure::Handoff => report.p50_ms.map(|p50| p50 / event_then_read),
        };
        if report.measure == Measure::Cycle {
            report.p50_to_floor = report.p50_ms.map(|p50| p50 / floor.p50_ms);
        }
    }
    compare_with_curator(&mut reports);
    let find = |recipe| {
        reports
            .iter()
            .find(|r| r.recipe == recipe && r.implementation == "ours")
    };
    let mutex_time_to_floor = find("mutex").and_then(|r| r.time_to_floor);
    let mutex_p50_to_floor = find("mutex").and_then(|r| r.p50_to_floor);
    let handoff_p50_ms = find("mutex-handoff").and_then(|r| r.p50_ms);
    let goals = Goals {
        mutex_time_to_floor,
        mutex_p50_to_floor,
        mutex_p50_within_1_1_floor: mutex_p50_to_floor.map(|t| t <= 1.1),
        handoff_p50_ms,
        event_then_read_p50_ms: event_then_read,
        event_plus_read_p50_ms: floor.event_p50_ms + floor.read_p50_ms,
        handoff_within_event_then_read: handoff_p50_ms.map(|p50| p50 <= event_then_read),
        event_then_read_rejoin_p50_ms: floor.event_then_read_rejoin_p50_ms,
        handoff_within_event_then_read_rejoin: handoff_p50_ms.map(|p50| p50 <= floor.event_then_read_rejoin_p50_ms),
    };
    Recipes {
        floor: Some(floor),
        reports,
        goals: Some(goals),
        error: None,
    }
}

/// The floor and our uncontended recipes (the mutex, and the semaphore of
/// one lease, as Curator's row has it), their cycles interleaved; each
/// recipe has a client of its own.
fn uncontended(ctx: &Ctx, root: &str, n: usize, contenders: usize) -> anyhow::Result<(Floor, Vec<RecipeReport>)> {
    let mut names = Vec::new();
    let mut cycles = Vec::new();
    let client = ZkClient::connect(ctx.connect).context("connecting")?;
    let mutex = recipes::Mutex::builder(&client, &format!("{root}/mutex")).build()?;
    names.push("mutex");
    cycles.push(Cycle {
        client: client.clone(),
        cycle: Box::new(move |deadline| {
            let guard = mutex
                .lock_timeout(deadline.remaining())?
                .context("an uncontended mutex was not acquired")?;
            drop(guard);
            Ok(())
        }),
    });
    let client = ZkClient::connect(ctx.connect).context("connecting")?;
    let semaphore = recipes::Semaphore::builder(&client, &format!("{root}/semaphore"))
        .max_leases(1)
        .build()?;
    names.push("semaphore");
    cycles.push(Cycle {
        client: client.clone(),
        cycle: Box::new(move |deadline| {
            let lease = semaphore
                .acquire_timeout(deadline.remaining())?
                .context("an uncontended semaphore gave no lease")?;
            drop(lease);
            Ok(())
        }),
    });
    let clients: Vec<ZkClient> = cycles.iter().map(|c| c.client.clone()).collect();
    let measured = measure::floor_and_cycles(ctx, root, (n, contenders), cycles);
    for client in clients {
        client.close();
    }
    let (floor, runs) = measured?;
    let reports = names
        .into_iter()
        .zip(runs)
        .map(|(name, run)| cycle_report(name, "ours", n, Ok(run)))
        .collect();
    Ok((floor, reports))
}

/// Our hand-offs: the mutex's, and the leader selector's (from a leader's
/// closure returning to the next leader's closure starting).
fn contended(ctx: &Ctx, root: &str, cycles: usize, contenders: usize) -> Vec<RecipeReport> {
    let mutex = handoff_report(
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
    );
    let selector = handoff_report(
        "selector-handoff",
        "ours",
        (cycles, contenders),
        handoffs(ctx, "selector-handoff", (cycles, contenders), |client, line| {
            let leader = Arc::clone(line);
            let path = format!("{root}/selector-handoff");
            let selector = recipes::LeaderSelector::builder(client, &path, move |_: &recipes::LeaderContext<'_>| {
                leader.acquired();
                leader.releasing();
            })
            .build()?;
            // The selector's own thread takes its turns; this one only
            // waits for the run to be over, woken when it is (no poll
            // beside the hand-offs).
            line.wait_until_finished();
            selector.close()?;
            if !line.finished() {
                anyhow::bail!("the selectors handed over too few terms by the deadline");
            }
            Ok(())
        }),
    );
    vec![mutex, selector]
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
        p50_to_floor: None,
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
