//! The `bench` example against the shared server, at sizes too small for its
//! figures to mean anything: it runs the parts it is asked for, drain child
//! included, reports them as JSON, and refuses an unknown case.

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

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
    let started = Instant::now();
    let out = bench(&[
        "--json",
        "--items",
        "200",
        "--drain-sizes",
        "200",
        "--cases",
        "e2e,lock-safe",
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
    assert!(report["ceiling"]["items_per_s"].as_f64().unwrap() > 0.0, "{report:#}");
    let cases = report["cases"].as_array().unwrap();
    let names: Vec<&str> = cases.iter().map(|c| c["case"].as_str().unwrap()).collect();
    assert_eq!(names, ["e2e", "lock-safe"]);
    for case in cases {
        assert_eq!(case["error"], Value::Null, "{case:#}");
        assert_eq!(case["items"], 200, "{case:#}");
        assert_eq!(case["duplicates"], 0, "{case:#}");
        assert!(case["items_per_s"].as_f64().unwrap() > 0.0, "{case:#}");
    }
    // The drain ran in a child `bench --drain-child` and lost nothing.
    let drains = report["drain"].as_array().unwrap();
    assert_eq!(drains.len(), 1);
    assert_eq!(drains[0]["error"], Value::Null, "{:#}", drains[0]);
    assert_eq!(drains[0]["items"], 200);
    assert!(drains[0]["items_per_s"].as_f64().unwrap() > 0.0);
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "bench took {:?}",
        started.elapsed()
    );
}

#[test]
fn bench_refuses_an_unknown_case_as_a_usage_error() {
    let out = bench(&["--cases", "nope"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "a usage error: {stderr}");
    assert!(out.stdout.is_empty(), "{:?}", String::from_utf8_lossy(&out.stdout));
    assert!(stderr.contains("invalid value 'nope'"), "{stderr}");
}
