//! The recipes' table in the human-readable output.

use super::super::report::{int, opt};
use super::{Measure, Recipes};

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
            "floor, one at a time: ephemeral-sequential create + delete {} /s, p50 {:.3} ms, p99 {:.3} ms (create {:.3}, delete {:.3}); a listing p50 {:.3} ms; from a delete call to another client's watch event p50 {:.3} ms, to its listing after the event p50 {:.3} ms ({:.3} ms beside a rejoining create)",
            int(f.per_s),
            f.p50_ms,
            f.p99_ms,
            f.create_p50_ms,
            f.delete_p50_ms,
            f.read_p50_ms,
            f.event_p50_ms,
            f.event_then_read_p50_ms,
            f.event_then_read_rejoin_p50_ms
        );
    }
    println!(
        "{:<18} {:<8} {:>9} {:>9} {:>9} {:>8} {:>8} {:>8} {:>8} {:>10}",
        "recipe", "", "per s", "p50 ms", "p99 ms", "x floor", "p50/flr", "p50/cur", "rate/cur", "reqs/cycle"
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
            "{name:<18} {:<8} {:>9} {:>9} {:>9} {:>8} {:>8} {:>8} {:>8} {:>10}",
            report.implementation,
            opt(report.per_s, int),
            opt(report.p50_ms, |v| format!("{v:.3}")),
            opt(report.p99_ms, |v| format!("{v:.3}")),
            ratio(report.time_to_floor),
            ratio(report.p50_to_floor),
            ratio(report.p50_to_curator),
            ratio(report.rate_to_curator),
            opt(report.requests_per_cycle.map(|q| q.total), |v| format!("{v:.2}")),
        );
    }
    println!(
        "x floor: a cycle's mean time over the floor's (p50/flr: its p50 over the floor's); a hand-off's p50 over the floor's event-then-listing p50"
    );
    if let Some(g) = &r.goals {
        let yes = |b: Option<bool>| match b {
            Some(true) => "met",
            Some(false) => "NOT met",
            None => "unknown",
        };
        println!(
            "goals: uncontended mutex p50 within 1.1 x the floor's: {} ({}, mean {}); hand-off p50 {} ms within event then read {:.3} ms (sum of the two apart {:.3} ms): {}; within it beside a rejoining create, {:.3} ms: {}",
            yes(g.mutex_p50_within_1_1_floor),
            opt(g.mutex_p50_to_floor, |v| format!("{v:.3} x")),
            opt(g.mutex_time_to_floor, |v| format!("{v:.3} x")),
            opt(g.handoff_p50_ms, |v| format!("{v:.3}")),
            g.event_then_read_p50_ms,
            g.event_plus_read_p50_ms,
            yes(g.handoff_within_event_then_read),
            g.event_then_read_rejoin_p50_ms,
            yes(g.handoff_within_event_then_read_rejoin),
        );
    }
}
