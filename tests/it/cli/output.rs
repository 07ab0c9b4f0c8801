//! Previews print text as text and JSON as JSON, and errors under `--json`
//! are JSON objects.

use serde_json::Value;

use super::{json, ok, zkq};
use crate::support::server::unique_path;

#[test]
fn cli_peek_prints_text_as_text_and_json_payloads_as_json_values() {
    let path = unique_path("cli-previews");
    let payload = r#"{"job":"resize","size":3}"#;
    ok(&["put", &path, payload, r#"say "hi" \ bye"#, "[1,2]"]);

    let text = ok(&["peek", &path]);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].ends_with(&format!("\t{payload}")), "{text}");
    assert!(lines[1].ends_with("\tsay \"hi\" \\ bye"), "no escaped quotes: {text}");
    assert!(lines[2].ends_with("\t[1,2]"), "{text}");

    let peeked = json(&["peek", &path]);
    assert_eq!(peeked[0]["data"], serde_json::json!({"job": "resize", "size": 3}));
    assert_eq!(peeked[1]["data"], r#"say "hi" \ bye"#);
    assert_eq!(peeked[2]["data"], serde_json::json!([1, 2]));
}

/// Runs `zkq --json args`; returns its exit code and its stdout as JSON,
/// asserting nothing went to stderr.
fn json_error(args: &[&str]) -> (Option<i32>, Value) {
    let mut with_json = vec!["--json"];
    with_json.extend_from_slice(args);
    let out = zkq(&with_json);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.stderr.is_empty(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stdout.lines().count(), 1, "{args:?}: {stdout}");
    let value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{args:?} printed {stdout:?}: {e}"));
    (out.status.code(), value)
}

#[test]
fn cli_errors_under_json_are_json_objects_with_a_non_zero_exit() {
    let missing = unique_path("cli-json-missing");
    assert_eq!(
        json_error(&["peek", &missing]),
        (
            Some(1),
            serde_json::json!({"error": format!("node {missing} does not exist")})
        )
    );
    let (code, error) = json_error(&["ls", "no-slash"]);
    assert_eq!(code, Some(1));
    assert!(error["error"].as_str().unwrap().starts_with("invalid path"), "{error}");
    let (code, error) = json_error(&["take"]);
    assert_eq!(code, Some(2), "a usage error");
    assert!(error["error"].as_str().unwrap().contains("required"), "{error}");
}
