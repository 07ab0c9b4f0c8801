//! The `bench` example against the shared server, at sizes too small for its
//! figures to mean anything: it runs the parts it is asked for, drain child
//! included, reports them as JSON, and refuses an unknown case.

use std::process::{Command, Output, Stdio};

use serde_json::Value;

use crate::support::example_exe;
use crate::support::server::shared_connect_string;

/// Runs `bench --connect <shared> <args>`.
fn bench(args: &[&str]) -> Output {
    Command::new(example_exe("bench"))
        .args(["--connect", &shared_connect_string()])
        .args(args)
        .env_remove("ZK_CONNECT")
        .stdin(Stdio::null())
        .output()
        .expect("the bench example starts")
}

#[test]
fn bench_runs_small_and_reports_json() {
    let report = run_small();
    let best = assert_ceilings(&report);
    assert_e2e_ratio(&report, best);
    assert_latency(&report, best);
    assert_cases(&report);
    assert_priority_backlog(&report);
    assert_drain(&report);
}

/// Runs the bench at small sizes, asserts that it succeeded, and returns its
/// JSON report.
fn run_small() -> Value {
    // Its work is bounded by the sizes below and each part by the bench's
    // own deadlines (a part that misses one fails the run); how long that
    // takes depends on the machine's load, which this test does not judge.
    let out = bench(&[
        "--json",
        "--items",
        "200",
        "--drain-sizes",
        "200",
        "--cases",
        "e2e,lock-safe",
        "--latency-rates",
        "200,1%",
        "--latency-secs",
        "0.5",
        "--priority-backlogs",
        "300",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "bench failed: {}\nstdout:\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("bench printed {stdout:?}: {e}"));
    assert_eq!(report["ok"], true, "{report:#}");
    assert_eq!(report["machine"]["server_connect"], shared_connect_string().as_str());
    report
}

/// Asserts the ceilings measured before and after the cases, and returns the
/// better's rate.
fn assert_ceilings(report: &Value) -> f64 {
    // Measured before and after the cases; the ratios are to the better.
    let ceilings = report["ceilings"].as_array().unwrap();
    let whens: Vec<&str> = ceilings.iter().map(|c| c["when"].as_str().unwrap()).collect();
    assert_eq!(whens, ["before", "after"], "{report:#}");
    let best = ceilings
        .iter()
        .map(|c| c["items_per_s"].as_f64().unwrap())
        .fold(0.0, f64::max);
    assert_eq!(report["ceiling"]["items_per_s"].as_f64().unwrap(), best, "{report:#}");
    assert!(best > 0.0, "{report:#}");
    // The other request kinds' pipelined rates.
    for c in ceilings {
        assert_request_rates(c);
    }
    // A plain Java client's rates beside each measurement (this machine has
    // the JDK the interop tests need), and ours divided by them.
    for c in ceilings {
        assert_java_beside(c);
    }
    best
}

/// Asserts a ceiling's rates of the other request kinds, and its multi
/// items' rate.
fn assert_request_rates(c: &Value) {
    for key in [
        "reads_per_s",
        "exists_per_s",
        "multis_per_s",
        "multi_creates_per_s",
        "multi_deletes_per_s",
    ] {
        assert!(c[key].as_f64().unwrap() > 0.0, "{key}: {c:#}");
    }
    // The multi ceiling's items: a create and a delete each.
    let (creates, deletes) = (
        c["multi_creates_per_s"].as_f64().unwrap(),
        c["multi_deletes_per_s"].as_f64().unwrap(),
    );
    let items = 1.0 / (1.0 / creates + 1.0 / deletes);
    assert!(
        (c["multi_items_per_s"].as_f64().unwrap() - items).abs() < 1e-6 * items,
        "{c:#}"
    );
}

/// Asserts a plain Java client's rates beside a ceiling, and ours divided by
/// them.
fn assert_java_beside(c: &Value) {
    let java = &c["java"];
    assert_eq!(java["error"], Value::Null, "{c:#}");
    let (ours, theirs) = (
        c["creates_per_s"].as_f64().unwrap(),
        java["creates_per_s"].as_f64().unwrap(),
    );
    assert!(theirs > 0.0, "{c:#}");
    assert!(
        (java["ours_to_java_creates"].as_f64().unwrap() - ours / theirs).abs() < 1e-9,
        "{c:#}"
    );
    assert!(java["items_per_s"].as_f64().unwrap() > 0.0, "{c:#}");
}

/// Asserts that the end-to-end case's ratio to the ceiling is its rate over
/// the best ceiling's.
fn assert_e2e_ratio(report: &Value, best: f64) {
    let e2e = &report["cases"][0];
    let ratio = e2e["items_per_s"].as_f64().unwrap() / best;
    assert!(
        (e2e["ratio_to_ceiling"].as_f64().unwrap() - ratio).abs() < 1e-9,
        "{e2e:#}"
    );
}

/// Asserts the open-loop latency runs, at the rates asked for.
fn assert_latency(report: &Value, best: f64) {
    // Open-loop latency: each rate with Curator's plain queue (the JDK is
    // here), then a plain and a lock-safe consumer of ours.
    let latency = report["latency"].as_array().unwrap();
    let runs: Vec<(&str, &str)> = latency
        .iter()
        .map(|l| (l["asked"].as_str().unwrap(), l["kind"].as_str().unwrap()))
        .collect();
    assert_eq!(
        runs,
        [
            ("200", "curator"),
            ("200", "plain"),
            ("200", "lock-safe"),
            ("1%", "curator"),
            ("1%", "plain"),
            ("1%", "lock-safe")
        ]
    );
    for run in latency {
        assert_eq!(run["error"], Value::Null, "{run:#}");
        let (p50, p99, max) = (
            run["p50_ms"].as_f64().unwrap(),
            run["p99_ms"].as_f64().unwrap(),
            run["max_ms"].as_f64().unwrap(),
        );
        assert!(0.0 < p50 && p50 <= p99 && p99 <= max, "{run:#}");
        assert!(run["achieved_rate"].as_f64().unwrap() > 0.0, "{run:#}");
    }
    assert_eq!(latency[0]["rate"], 200.0);
    let one_percent = latency[3]["rate"].as_f64().unwrap();
    // A share of the best ceiling: the latency runs come after both.
    assert!(
        (one_percent - best / 100.0).abs() < 1e-6,
        "1% of the best ceiling: {report:#}"
    );
    assert!(report["latency_floor_ms"].as_f64().unwrap() > 0.0);
}

/// Asserts the cases run: their names, CPU shares, items and rates.
fn assert_cases(report: &Value) {
    let cases = report["cases"].as_array().unwrap();
    let names: Vec<&str> = cases.iter().map(|c| c["case"].as_str().unwrap()).collect();
    assert_eq!(names, ["e2e", "lock-safe"]);
    for case in cases {
        // Where the CPU went: the machine's busy share (a server not started
        // by the benchmark has no figure of its own).
        let busy = case["cpu"]["machine_busy"].as_f64().unwrap();
        assert!(0.0 < busy && busy <= 1.0, "{case:#}");
        assert_eq!(case["cpu"]["server_cores"], Value::Null, "{case:#}");
        // A number (the process's CPU time counts in 10 ms ticks, so a case
        // of 200 items, under 0.1 s with multis, may show none).
        assert!(case["cpu"]["bench_cores"].as_f64().unwrap() >= 0.0, "{case:#}");
        assert_eq!(case["error"], Value::Null, "{case:#}");
        assert_eq!(case["items"], 200, "{case:#}");
        assert_eq!(case["duplicates"], 0, "{case:#}");
        assert!(case["items_per_s"].as_f64().unwrap() > 0.0, "{case:#}");
        // The share of the case each side waited on the server is reported.
        for side in ["consumer_waiting_share", "producer_waiting_share"] {
            assert!(case[side].as_f64().unwrap() > 0.0, "{side}: {case:#}");
        }
    }
}

/// Asserts the priority backlog's urgent item.
fn assert_priority_backlog(report: &Value) {
    // The urgent item overtook the rest of the backlog (200 items): only
    // windows of the refresh count claimed before it was heard of came first.
    let backlogs = report["priority_backlogs"].as_array().unwrap();
    assert_eq!(backlogs.len(), 1);
    let backlog = &backlogs[0];
    assert_eq!(backlog["error"], Value::Null, "{backlog:#}");
    assert_eq!(backlog["backlog"], 300);
    assert!(backlog["urgent_ms"].as_f64().unwrap() > 0.0, "{backlog:#}");
    let refresh = backlog["refresh"].as_u64().unwrap();
    assert!(backlog["urgent_after"].as_u64().unwrap() <= 3 * refresh, "{backlog:#}");
}

/// Asserts the drain.
fn assert_drain(report: &Value) {
    // The drain ran in a child `bench --drain-child` and lost nothing.
    let drains = report["drain"].as_array().unwrap();
    assert_eq!(drains.len(), 1);
    assert_eq!(drains[0]["error"], Value::Null, "{:#}", drains[0]);
    assert_eq!(drains[0]["items"], 200);
    assert!(drains[0]["items_per_s"].as_f64().unwrap() > 0.0);
}

#[test]
fn bench_refuses_an_unknown_case_as_a_usage_error() {
    let out = bench(&["--cases", "nope"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "a usage error: {stderr}");
    assert!(out.stdout.is_empty(), "{:?}", String::from_utf8_lossy(&out.stdout));
    assert!(stderr.contains("invalid value 'nope'"), "{stderr}");
}
