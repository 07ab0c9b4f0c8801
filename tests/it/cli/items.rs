//! Every subcommand that prints items (`peek`, `take`, `dead-letter list`)
//! prints them in one shape: the same fields, a JSON item as that JSON value
//! with its keys in their order, control characters escaped in the text;
//! times read as ISO-8601 UTC and relative beside the epoch milliseconds; a
//! dead letter counts the same attempts wherever it is read, and `stats`
//! finds the dead-letter path its queue's consumers recorded.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use zk_queue::{ConsumeError, QueueBuilder, StringSerializer};

use super::{json, ok};
use crate::support::server::unique_path;
use crate::support::{client, eventually};

/// A JSON item whose keys are not in sorted order.
const JSON_ITEM: &str = r#"{"zeta":1,"alpha":[2,{"y":true,"b":null}]}"#;

/// The names of `item`'s fields.
fn fields(item: &Value) -> BTreeSet<String> {
    item.as_object()
        .unwrap_or_else(|| panic!("{item} is an object"))
        .keys()
        .cloned()
        .collect()
}

#[test]
fn cli_peek_take_and_dead_letter_list_print_an_item_in_one_shape() {
    let path = unique_path("cli-one-shape");
    ok(&["put", &path, JSON_ITEM, "two\nlines"]);
    let data = format!(r#""data":{JSON_ITEM}"#);
    let peeked_text = ok(&["--json", "peek", &path]);
    assert!(
        peeked_text.contains(&data),
        "a JSON value, keys in order: {peeked_text}"
    );
    let peeked: Value = serde_json::from_str(&peeked_text).unwrap();
    assert_eq!(peeked[1]["data"], "two\nlines", "{peeked}");

    let taken_text = ok(&["--json", "take", &path, "-n", "2", "--timeout", "1s"]);
    assert!(taken_text.contains(&data), "a JSON value, keys in order: {taken_text}");
    let taken: Value = serde_json::from_str(&taken_text).unwrap();
    let (peeked, taken) = (peeked.as_array().unwrap(), taken.as_array().unwrap());
    assert_eq!(peeked.len(), taken.len());
    for (p, t) in peeked.iter().zip(taken) {
        for field in ["name", "kind", "size", "records", "attempt", "data"] {
            assert!(!p[field].is_null(), "{field} in {p}");
            assert_eq!(p[field], t[field], "{field}: peek {p}, take {t}");
        }
        assert!(fields(t).is_subset(&fields(p)), "take's fields are peek's: {t}, {p}");
    }

    let dead = unique_path("cli-one-shape-dead");
    ok(&["put", &dead, JSON_ITEM]);
    let listed_text = ok(&["--json", "dead-letter", "list", &dead]);
    assert!(
        listed_text.contains(&data),
        "a JSON value, keys in order: {listed_text}"
    );
}

#[test]
fn cli_take_prints_a_records_control_characters_escaped_as_peek_does() {
    let path = unique_path("cli-take-escapes");
    ok(&["put", &path, "tab\there\nand a line"]);
    assert!(
        ok(&["peek", &path]).ends_with("\ttab\\there\\nand a line\n"),
        "peek escapes"
    );
    assert_eq!(ok(&["take", &path, "--timeout", "1s"]), "tab\\there\\nand a line\n");
}

/// A queue `<base>/jobs` whose consumers (lock path and dead-letter path
/// `<base>/jobs-dead` recorded) fail every delivery of the one item put, up
/// to 2 attempts; returns the queue's path, the dead-letter path and the
/// deliveries made, once the item is a dead letter.
fn one_dead_letter(name: &str) -> (String, String, u32) {
    let base = unique_path(name);
    let (path, dead) = (format!("{base}/jobs"), format!("{base}/jobs-dead"));
    let zk = client();
    let deliveries = Arc::new(AtomicU32::new(0));
    let counted = Arc::clone(&deliveries);
    let queue = QueueBuilder::new(&zk, &path, StringSerializer)
        .lock_path(&format!("{base}/jobs-locks"))
        .max_attempts(2)
        .redelivery_backoff(Duration::ZERO, Duration::ZERO)
        .dead_letter_path(&dead)
        .consumer(move |_: String| -> Result<(), ConsumeError> {
            counted.fetch_add(1, Ordering::SeqCst);
            Err("the printer is on fire".into())
        })
        .build_queue()
        .unwrap();
    ok(&["put", &path, "job"]);
    eventually(Duration::from_secs(30), "the job dies", || {
        zk.get_children(&dead).map(|(c, _)| c.len() == 1).unwrap_or(false)
    });
    queue.close();
    (path, dead, deliveries.load(Ordering::SeqCst))
}

#[test]
fn cli_a_dead_letter_counts_its_deliveries_alike_in_peek_dead_letter_list_and_take() {
    let (_, dead, made) = one_dead_letter("cli-dead-attempts");
    // An item put there by hand counts the deliveries it had too: none.
    ok(&["put", &dead, "--force", "set aside by hand"]);
    let peeked = json(&["peek", &dead]);
    let listed = json(&["dead-letter", "list", &dead]);
    assert_eq!(peeked[0]["attempts"], made, "the deliveries made: {peeked}");
    assert_eq!(peeked[0].get("attempt"), None, "no delivery is coming: {peeked}");
    assert_eq!(peeked[1]["attempts"], 0, "none made: {peeked}");
    assert_eq!(peeked, listed, "one dead letter, one shape");
    let attempts = format!("\tattempts={made}\t");
    let text = ok(&["peek", &dead]);
    assert!(text.contains(&attempts), "{attempts} in {text}");
    let text = ok(&["dead-letter", "list", &dead]);
    assert!(text.contains(&attempts), "{attempts} in {text}");
    // Taken, it is the same dead letter: the same count and record of its death.
    let taken = json(&["take", &dead, "--count", "2"]);
    assert_eq!(taken[0]["attempts"], made, "the deliveries made: {taken}");
    assert_eq!(taken[0].get("attempt"), None, "no delivery is coming: {taken}");
    assert_eq!(taken[0]["death"], peeked[0]["death"], "{taken}");
    assert!(taken[0]["death"].is_object(), "{taken}");
    assert_eq!(taken[1]["attempts"], 0, "none made: {taken}");
}

#[test]
fn cli_dead_letter_list_shows_when_it_died_in_iso_utc_and_how_long_ago() {
    let (_, dead, _) = one_dead_letter("cli-dead-time");
    let listed = json(&["dead-letter", "list", &dead]);
    let text = ok(&["dead-letter", "list", &dead]);
    let died_at = listed[0]["death"]["died_at"].as_i64().unwrap();
    let shown = text
        .split('\t')
        .find_map(|field| field.strip_prefix(&format!("died_at={died_at}(")))
        .unwrap_or_else(|| panic!("died_at={died_at}(…) in {text}"));
    let (iso, relative) = shown.split_once(", ").unwrap_or_else(|| panic!("{shown}"));
    assert_eq!(iso.len(), "2026-01-01T00:00:00.000Z".len(), "{iso}");
    assert!(
        iso.ends_with(&format!(":{:02}.{:03}Z", died_at / 1000 % 60, died_at % 1000)),
        "{iso} is {died_at}"
    );
    assert!(relative == "now)" || relative.ends_with(" ago)"), "{relative}");
}

#[test]
fn cli_stats_counts_the_dead_letters_under_the_path_its_queues_consumers_recorded() {
    let (path, dead, _) = one_dead_letter("cli-dead-stats");
    let stats = json(&["stats", &path]);
    assert_eq!(
        (
            stats["dead_letters"].as_u64(),
            stats["dead_letter_path"].as_str(),
            stats["dead_letter_path_recorded"].as_bool()
        ),
        (Some(1), Some(dead.as_str()), Some(true)),
        "{stats}"
    );
    let text = ok(&["stats", &path]);
    assert!(
        text.contains(&format!(
            "dead letters: 1 (under {dead}, recorded by the queue's consumers)\n"
        )),
        "{text}"
    );
}

#[test]
fn cli_peek_shows_a_due_time_in_iso_utc_and_how_far_off() {
    let path = unique_path("cli-due-text");
    // 2100-01-01T00:00:00Z.
    ok(&["put", &path, "--at", "4102444800000", "later"]);
    let text = ok(&["peek", &path]);
    assert!(
        text.contains("\tdue=4102444800000(2100-01-01T00:00:00.000Z, in "),
        "{text}"
    );
    assert!(text.contains("d, not-due)\t"), "{text}");
}
