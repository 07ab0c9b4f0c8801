//! How a plain consumer claims a backlog a window at a time.
//!
//! - It reads the next window's items while the last one's deletes commit:
//!   behind a proxy that delays every chunk by [`DELAY`] each way, each
//!   window after the first takes one round trip (its deletes, sent beside
//!   the next window's read), where reading after the deletes takes two.
//! - A priority consumer claiming alone claims whole windows, however
//!   small `min_items_before_refresh` is: it looks for urgent items while it
//!   hands a window over (`arrivals` checks that the urgent ones still come
//!   first).

use std::time::{Duration, Instant};

use zk_queue::testing::{FaultProxy, TestingServer};
use zk_queue::{ConsumeError, QueueBuilder, StringSerializer};

use super::WAIT;
use crate::support::queues::{consumer, producer};
use crate::support::recorder::Recorder;
use crate::support::server::unique_path;
use crate::support::{self, client, client_of, eventually};

/// The proxy's delay per forwarded chunk, each way.
const DELAY: Duration = Duration::from_millis(300);

/// The consumers' claim window (the default).
const WINDOW: usize = 64;

#[test]
fn a_plain_consumer_reads_each_window_while_the_one_before_commits() {
    // A server of its own: the shared one's load would add its queueing to
    // the round trips this test counts.
    let server = TestingServer::start().unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).unwrap();
    let slow = support::proxied_client(&proxy);
    let fast = client_of(&server.connect_string());
    let path = unique_path("claim-windows-read-beside");
    let backlog = 4 * WINDOW;
    let items = (0..backlog).map(|i| format!("item-{i}"));
    let producer = producer(&fast, &path).put_in_background(true).build_queue().unwrap();
    for item in items {
        producer.put(item).unwrap();
    }
    assert!(producer.flush_timeout(WAIT), "the backlog was not stored");

    let (tx, rx) = crossbeam_channel::unbounded();
    proxy.set_delay(DELAY);
    let consumer = QueueBuilder::new(&slow, &path, StringSerializer)
        .consumer(move |_: String| -> Result<(), ConsumeError> {
            tx.send(Instant::now()).ok();
            Ok(())
        })
        .build_queue()
        .unwrap();
    let first = rx.recv_timeout(WAIT).unwrap();
    let mut last = first;
    for _ in 1..backlog {
        last = rx.recv_timeout(WAIT).unwrap();
    }
    consumer.close();
    producer.close();
    // From the first window's delivery, the other windows take one round
    // trip each; two each if the reads waited for the deletes.
    let windows_after_first = u32::try_from(backlog / WINDOW - 1).unwrap();
    let bound = windows_after_first * 2 * DELAY;
    let took = last - first;
    eprintln!("{windows_after_first} windows after the first took {took:?} (one round trip each: {bound:?})");
    assert!(
        took < bound + bound / 2,
        "{windows_after_first} windows after the first took {took:?}: more than one round trip each ({bound:?} and a margin)"
    );
}

#[test]
fn a_priority_consumer_claiming_alone_claims_whole_windows_whatever_its_refresh() {
    let path = unique_path("claim-windows-priority");
    let (producer_client, consumer_client) = (client(), client());
    let refresh = 4;
    let backlog = 8 * WINDOW;
    let producer = producer(&producer_client, &path)
        .put_in_background(true)
        .build_priority_queue(refresh)
        .unwrap();
    for i in 0..backlog {
        producer
            .put(format!("item-{i}"), i32::try_from(i % 7).unwrap())
            .unwrap();
    }
    assert!(producer.flush_timeout(WAIT), "the backlog was not stored");
    let multis_before = consumer_client.stats().multi;
    let recorder = Recorder::new();
    let queue = consumer(&consumer_client, &path, &recorder)
        .build_priority_queue(refresh)
        .unwrap();
    let got = recorder.wait_for(backlog, WAIT);
    let multis = usize::try_from(consumer_client.stats().multi - multis_before).unwrap();
    queue.close();
    producer.close();
    let priorities: Vec<usize> = got
        .iter()
        .map(|item| item.trim_start_matches("item-").parse::<usize>().unwrap() % 7)
        .collect();
    assert!(
        priorities.windows(2).all(|pair| pair[0] <= pair[1]),
        "not in priority order: {got:?}"
    );
    // A window per `refresh` items would take a multi of deletes each.
    let capped = backlog / refresh;
    eprintln!("{backlog} items in {multis} multis (a window per {refresh} items: {capped})");
    assert!(
        multis < 2 * backlog.div_ceil(WINDOW),
        "{multis} multis for {backlog} items: windows of fewer than {WINDOW} (capped at {refresh}: {capped})"
    );
}

#[test]
fn items_arriving_while_a_priority_pass_hands_its_last_window_over_are_taken_without_a_rescan() {
    let path = unique_path("claim-windows-last-window");
    let (producer_client, consumer_client) = (client(), client());
    let producer = producer(&producer_client, &path).build_priority_queue(1).unwrap();
    // Fewer than a window: the pass's one window is its last.
    let backlog = 40;
    for i in 0..backlog {
        producer.put(format!("backlog-{i}"), 5).unwrap();
    }
    let recorder = Recorder::new().held().slow(Duration::from_millis(20));
    let queue = consumer(&consumer_client, &path, &recorder)
        // Far beyond the wait below: only the pass itself can take them.
        .rescan_interval(Duration::from_secs(3_600))
        .build_priority_queue(1)
        .unwrap();
    eventually(WAIT, "the consumer holds its first item", || queue.stats().claimed >= 1);
    // Less urgent than the backlog: they join the pass's pending items at
    // one of the looks while the window is handed over.
    let later = 3;
    for i in 0..later {
        producer.put(format!("later-{i}"), 9).unwrap();
    }
    recorder.release();
    let got = recorder.wait_for(backlog + later, WAIT);
    queue.close();
    producer.close();
    assert!(
        got[backlog..].iter().all(|item| item.starts_with("later-")),
        "the later items came before the backlog: {got:?}"
    );
}
