//! One lock shared with Curator's `InterProcessMutex` (the `curator-mutex`
//! mode of the Java peer): the same node names and order, so Rust and Java
//! participants exclude each other and hold in the order they arrived,
//! and a Rust holder cut off past its session stops counting on its hold
//! before a Curator participant holds.

use std::thread;
use std::time::Duration;

use zk_queue::testing::FaultProxy;

use super::{mutex, nodes, take_turns, Ledger, WAIT};
use crate::support::expiry::stop_counting_once_partitioned;
use crate::support::java::PeerProcess;
use crate::support::server::{shared_connect_string, unique_path};
use crate::support::{client, eventually, short_session_client};

/// How long each participant holds the lock each time.
const HOLD: Duration = Duration::from_millis(20);

/// A Curator participant `id` on `path` that holds the lock `rounds` times
/// for `hold` each, writing to `ledger`, once it is ready.
fn curator_participant(path: &str, id: &str, rounds: usize, hold: Duration, ledger: &Ledger) -> PeerProcess {
    ledger.peer("curator-mutex", path, rounds, id, hold, WAIT)
}

#[test]
fn rust_and_curator_participants_never_hold_at_once_by_a_shared_ledger() {
    let path = unique_path("mutex-curator-exclusion");
    let ledger = Ledger::new();
    let java: Vec<PeerProcess> = ["java-a", "java-b"]
        .iter()
        .map(|id| curator_participant(&path, id, 10, HOLD, &ledger))
        .collect();
    thread::scope(|s| {
        for id in ["rust-a", "rust-b", "rust-c"] {
            let (path, ledger) = (&path, &ledger);
            s.spawn(move || take_turns(&mutex(&client(), path), id, 10, HOLD, ledger));
        }
    });
    for peer in java {
        peer.wait().unwrap();
    }
    assert_eq!(ledger.check(1), (50, 1));
    let entries = ledger.entries();
    assert!(
        entries.iter().any(|e| e.starts_with("java")) && entries.iter().any(|e| e.starts_with("rust")),
        "both languages held"
    );
    assert!(nodes(&client(), &path).is_empty(), "every node is gone");
}

#[test]
fn acquisition_follows_arrival_order_across_languages() {
    let path = unique_path("mutex-curator-fifo");
    let ledger = Ledger::new();
    let admin = client();
    let first = mutex(&admin, &path);
    let holding = first.lock().unwrap();
    let mut java = Vec::new();
    thread::scope(|s| {
        for (n, id) in ["java-a", "rust-b", "java-c", "rust-d", "java-e"]
            .into_iter()
            .enumerate()
        {
            if id.starts_with("java") {
                java.push(curator_participant(&path, id, 1, HOLD, &ledger));
            } else {
                let (path, ledger) = (&path, &ledger);
                s.spawn(move || take_turns(&mutex(&client(), path), id, 1, HOLD, ledger));
            }
            // The next arrives only once this one's node is in the line.
            eventually(WAIT, "the participant's node is in the line", || {
                nodes(&admin, &path).len() == n + 2
            });
        }
        // Every node holds what Curator writes by default, ours too: the
        // host's address.
        let data: Vec<Vec<u8>> = nodes(&admin, &path)
            .iter()
            .map(|name| admin.get_data(&format!("{path}/{name}")).unwrap().0)
            .collect();
        assert!(data.windows(2).all(|w| w[0] == w[1]), "{data:?}");
        drop(holding);
    });
    for peer in java {
        peer.wait().unwrap();
    }
    ledger.check(1);
    assert_eq!(
        ledger.entries(),
        ["java-a.0", "rust-b.0", "java-c.0", "rust-d.0", "java-e.0"]
    );
}

#[test]
fn a_rust_holder_partitioned_past_its_session_stops_counting_before_a_curator_participant_holds() {
    let path = unique_path("mutex-curator-outage");
    let ledger = Ledger::new();
    let admin = client();
    let proxy = FaultProxy::start(&shared_connect_string()).unwrap();
    let short = short_session_client(&proxy.connect_string());
    let ours = mutex(&short, &path);
    let guard = ours.lock().unwrap();
    ledger.enter("rust");
    let java = curator_participant(&path, "java", 1, HOLD, &ledger);
    eventually(WAIT, "the Curator participant waits in line", || {
        nodes(&admin, &path).len() == 2
    });
    // A partition longer than our 2 s session: the server expires it and
    // lets the Curator participant in. Ours counts on its hold only while
    // `is_held()` says so, sampled every millisecond.
    stop_counting_once_partitioned(&proxy, "rust", &ledger, || guard.is_held());
    java.wait().unwrap();
    proxy.heal();
    assert_eq!(ledger.check(1), (2, 1), "never ours beside Curator's");
    assert_eq!(ledger.entries(), ["rust", "java.0"]);
    drop(guard);
    eventually(WAIT, "every node is gone", || nodes(&admin, &path).is_empty());
}
