//! Metrics (feature `metrics`): the `prometheus` example runs a workload of
//! known counts and its `/metrics` page, read over HTTP, must show them.
//! `exporter.rs` runs the example and reads the page.

mod exporter;
mod in_process;

use std::time::Duration;

use zk_queue::inspect::consumer_registry;
use zk_queue::metrics::names;
use zk_queue::testing::FaultProxy;

use crate::support::server::{shared_connect_string, unique_path};
use crate::support::{client, eventually};
use exporter::Example;

/// The workload's jobs: succeeding at once, failing once, failing always
/// (the example's `MAX_ATTEMPTS` is 4: three requeues, then a dead letter).
const ITEMS: usize = 7;
const FLAKY: usize = 3;
const POISON: usize = 2;
const MAX_ATTEMPTS: usize = 4;

/// How long a sampled gauge may take to show a change: a few of the
/// example's 100 ms sampling intervals on a loaded machine.
const SAMPLED: Duration = Duration::from_secs(10);

fn workload_args(path: &str) -> Vec<String> {
    [
        "--path",
        path,
        "--items",
        &ITEMS.to_string(),
        "--flaky",
        &FLAKY.to_string(),
        "--poison",
        &POISON.to_string(),
        "--sample-ms",
        "100",
    ]
    .map(str::to_owned)
    .to_vec()
}

#[test]
fn the_prometheus_example_exports_its_workloads_counts_over_http() {
    let path = unique_path("metrics-workload");
    let connect = shared_connect_string();
    let args = workload_args(&path);
    let mut example = Example::start(&connect, &args.iter().map(String::as_str).collect::<Vec<_>>());
    let queue = [("queue", path.as_str())];
    let total = ITEMS + FLAKY + POISON;

    // Stored, not consumed yet: every job is a node of the queue.
    example.line_starting("stored");
    let stored = example.scrape();
    assert_eq!(stored.value(names::PUTS, &queue), total as f64);
    assert_eq!(stored.get(names::TAKES, &queue).unwrap_or(0.0), 0.0);
    eventually(SAMPLED, "the depth gauge shows every stored job", || {
        example.scrape().get(names::DEPTH, &queue) == Some(total as f64)
    });

    example.go_on();
    example.line_starting("consumed");
    let done = example.scrape();
    let acknowledged = ITEMS + FLAKY;
    // Every job's deliveries: one each, one more for a flaky one, and
    // MAX_ATTEMPTS for a poison one.
    let takes = ITEMS + 2 * FLAKY + MAX_ATTEMPTS * POISON;
    assert_eq!(done.value(names::PUTS, &queue), total as f64);
    assert_eq!(done.value(names::TAKES, &queue), takes as f64);
    assert_eq!(done.value(names::ACKS, &queue), acknowledged as f64);
    assert_eq!(done.value(names::DEAD_LETTERS, &queue), POISON as f64);
    assert_eq!(done.value(names::LEASE_LOSSES, &queue), 0.0);
    let requeues = |attempt| done.value(names::REQUEUES, &[queue[0], ("attempt", attempt)]);
    assert_eq!(requeues("1"), (FLAKY + POISON) as f64, "first deliveries failed");
    assert_eq!(requeues("2"), POISON as f64, "second deliveries failed");
    assert_eq!(
        requeues("3+"),
        POISON as f64,
        "third deliveries failed (the fourth is a dead letter)"
    );
    let consumed_count = format!("{}_count", names::PUT_TO_CONSUME);
    assert_eq!(done.value(&consumed_count, &queue), acknowledged as f64);
    let waited = done.value(&format!("{}_sum", names::PUT_TO_CONSUME), &queue);
    assert!(waited > 0.0, "the put-to-consume histogram adds up waits: {waited}");

    // The client's figures: connected, and its requests timed.
    let client_label = [("client", connect.as_str())];
    assert_eq!(done.value(names::CLIENT_CONNECTED, &client_label), 1.0);
    assert_eq!(done.value(names::CLIENT_RECONNECTS, &client_label), 0.0);
    assert_eq!(done.value(names::CLIENT_SESSION_LOSSES, &client_label), 0.0);
    // Puts and acknowledgements go out as multis, consumers list the
    // queue, and the sampler checks it exists: each is timed under its own
    // operation.
    for operation in ["multi", "get_children", "exists"] {
        let timed = done.value(
            &format!("{}_count", names::CLIENT_REQUEST),
            &[client_label[0], ("operation", operation)],
        );
        assert!(timed >= 1.0, "{operation} requests are timed: {timed}");
    }

    eventually(SAMPLED, "the gauges show an empty queue and nothing in flight", || {
        let now = example.scrape();
        now.get(names::DEPTH, &queue) == Some(0.0) && now.get(names::IN_FLIGHT, &queue) == Some(0.0)
    });
    assert!(example.finish().success(), "the example exits cleanly");
}

#[test]
fn the_prometheus_example_counts_a_reconnect_and_a_session_loss() {
    let path = unique_path("metrics-connection");
    let proxy = FaultProxy::start(&shared_connect_string()).unwrap();
    let connect = proxy.connect_string();
    let mut args = workload_args(&path);
    args.extend(["--session-timeout-ms", "2000"].map(str::to_owned));
    let mut example = Example::start(&connect, &args.iter().map(String::as_str).collect::<Vec<_>>());
    let client_label = [("client", connect.as_str())];
    example.go_on();
    example.line_starting("consumed");
    assert_eq!(example.scrape().value(names::CLIENT_RECONNECTS, &client_label), 0.0);

    // A dropped connection: suspended, then reconnected to the same session.
    proxy.cut();
    eventually(SAMPLED, "one reconnection is counted", || {
        example.scrape().get(names::CLIENT_RECONNECTS, &client_label) == Some(1.0)
    });
    let scrape = example.scrape();
    assert_eq!(scrape.value(names::CLIENT_SESSION_LOSSES, &client_label), 0.0);
    assert_eq!(scrape.value(names::CLIENT_CONNECTED, &client_label), 1.0);

    // A partition longer than the session: the server expires it (its
    // consumer's registration goes with it), then a new session.
    proxy.blackhole();
    eventually(SAMPLED, "the client is counted disconnected", || {
        example.scrape().get(names::CLIENT_CONNECTED, &client_label) == Some(0.0)
    });
    let observer = client();
    let registry = consumer_registry(&path);
    eventually(SAMPLED, "the server expired the example's session", || {
        observer
            .get_children(&registry)
            .map(|(c, _)| c.is_empty())
            .unwrap_or(true)
    });
    proxy.heal();
    eventually(SAMPLED, "the session loss and the new session are counted", || {
        let now = example.scrape();
        now.get(names::CLIENT_SESSION_LOSSES, &client_label) == Some(1.0)
            && now.get(names::CLIENT_RECONNECTS, &client_label) == Some(2.0)
            && now.get(names::CLIENT_CONNECTED, &client_label) == Some(1.0)
    });
    assert!(example.finish().success(), "the example exits cleanly");
}
