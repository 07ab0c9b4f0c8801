//! Curator 5.4 (Debian's `libcurator-recipes-java`) and this crate share
//! queues: every kind, both directions, lock-safe consumers of both on one
//! queue, and requeues crossing implementations.

use std::collections::HashSet;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use zk_queue::{DeliverAt, QueueBuilder, StringSerializer, ZkClient};

use crate::support::java::{ErrorMode as PeerErrorMode, PeerCommand, PeerProcess};
use crate::support::queues::{consumer, producer};
use crate::support::recorder::Recorder;
use crate::support::{client, eventually, server::shared_connect_string, server::unique_path};

const WAIT: Duration = Duration::from_secs(60);

fn peer(mode: &str, path: &str, count: usize) -> PeerCommand {
    PeerCommand::new(mode, &shared_connect_string(), path, count).timeout(WAIT)
}

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as i64
}

fn start_consumer(client: &ZkClient, path: &str, kind: &str, recorder: &Recorder) -> Box<dyn std::any::Any> {
    let builder = QueueBuilder::new(client, path, StringSerializer).consumer(recorder.clone());
    match kind {
        "plain" => {
            let q = builder.build_queue().unwrap();
            Box::new(q)
        }
        "priority" => {
            let q = builder.build_priority_queue(0).unwrap();
            Box::new(q)
        }
        "delay" => {
            let q = builder.build_delay_queue().unwrap();
            Box::new(q)
        }
        _ => {
            let q = builder.build_id_queue().unwrap();
            Box::new(q)
        }
    }
}

#[test]
fn rust_consumes_every_curator_kind_in_curators_order() {
    let client = client();
    let n = 30;
    // Plain and put_multi: put order.
    let items: Vec<String> = (0..n).map(|i| format!("plain {i}")).collect();
    let path = unique_path("cur-plain");
    peer("curator-put", &path, n).stdin_lines(items.clone()).run().unwrap();
    let multi = unique_path("cur-multi");
    peer("curator-put-multi", &multi, n)
        .stdin_lines(items.clone())
        .run()
        .unwrap();
    // Priority: shuffled priorities; lower first, ties in put order.
    let prio = unique_path("cur-prio");
    let priorities: Vec<i32> = (0..n).map(|_| fastrand::i32(-5..5)).collect();
    let lines: Vec<String> = priorities
        .iter()
        .enumerate()
        .map(|(i, p)| format!("{p} p{p}-{i}"))
        .collect();
    peer("curator-put-priority", &prio, n).stdin_lines(lines).run().unwrap();
    let mut by_priority: Vec<(i32, usize)> = priorities.iter().copied().zip(0..).collect();
    by_priority.sort();
    let expected_prio: Vec<String> = by_priority.iter().map(|(p, i)| format!("p{p}-{i}")).collect();
    // Delay: due times in the past, shuffled.
    let delay = unique_path("cur-delay");
    let base = now_ms() - 60_000;
    let mut offsets: Vec<i64> = (0..n as i64).collect();
    fastrand::shuffle(&mut offsets);
    let lines: Vec<String> = offsets.iter().map(|o| format!("{} d{o}", base + o)).collect();
    peer("curator-put-delay", &delay, n).stdin_lines(lines).run().unwrap();
    let expected_delay: Vec<String> = (0..n).map(|o| format!("d{o}")).collect();
    // Id: put order; ids with separators.
    let ids = unique_path("cur-id");
    let lines: Vec<String> = (0..n).map(|i| format!("job/{i}|x id{i}")).collect();
    peer("curator-put-id", &ids, n).stdin_lines(lines).run().unwrap();

    for (path, kind, expected) in [
        (&path, "plain", items.clone()),
        (&multi, "plain", items),
        (&prio, "priority", expected_prio),
        (&delay, "delay", expected_delay),
        (&ids, "id", (0..n).map(|i| format!("id{i}")).collect()),
    ] {
        let recorder = Recorder::new();
        let _queue = start_consumer(&client, path, kind, &recorder);
        assert_eq!(recorder.wait_for(n, WAIT), expected, "{kind} at {path}");
    }
}

#[test]
fn rust_removes_curator_ids_that_curator_itself_cannot() {
    let ids = unique_path("cur-id-remove");
    peer("curator-put-id", &ids, 3)
        .stdin_lines(["job/1|x a", "job/2 b", "job/1|x c"])
        .run()
        .unwrap();
    let client = client();
    let queue = QueueBuilder::new(&client, &ids, StringSerializer)
        .build_id_queue()
        .unwrap();
    assert_eq!(queue.remove("job/1|x").unwrap(), 2);
    assert_eq!(peer("curator-consume-id", &ids, 1).run().unwrap(), ["b"]);
}

#[test]
fn curator_consumes_every_rust_kind_in_order() {
    let client = client();
    let n = 20;
    let build = || QueueBuilder::new(&client, &unique_path("rust-kinds"), StringSerializer).put_in_background(false);

    let plain = build().build_queue().unwrap();
    for i in 0..n {
        plain.put(format!("plain {i}")).unwrap();
    }
    plain.put_multi((0..n).map(|i| format!("multi {i}")).collect()).unwrap();
    let mut expected: Vec<String> = (0..n).map(|i| format!("plain {i}")).collect();
    expected.extend((0..n).map(|i| format!("multi {i}")));
    assert_eq!(peer("curator-consume", plain.path(), 2 * n).run().unwrap(), expected);

    let prio = build().build_priority_queue(0).unwrap();
    for i in 0..n {
        prio.put(format!("p{}-{i}", 9 - i % 10), (9 - i % 10) as i32).unwrap();
    }
    let mut pairs: Vec<(usize, usize)> = (0..n).map(|i| (9 - i % 10, i)).collect();
    pairs.sort();
    let expected: Vec<String> = pairs.iter().map(|(p, i)| format!("p{p}-{i}")).collect();
    assert_eq!(
        peer("curator-consume-priority", prio.path(), n).run().unwrap(),
        expected
    );

    let delay = build().build_delay_queue().unwrap();
    let base = now_ms() - 60_000;
    for o in (0..n as i64).rev() {
        delay
            .put(format!("d{o}"), DeliverAt::from_epoch_millis(base + o * 10).unwrap())
            .unwrap();
    }
    let expected: Vec<String> = (0..n).map(|o| format!("d{o}")).collect();
    assert_eq!(peer("curator-consume-delay", delay.path(), n).run().unwrap(), expected);

    let ids = build().build_id_queue().unwrap();
    for i in 0..n {
        ids.put(format!("id{i}"), &format!("order/{i}")).unwrap();
    }
    let expected: Vec<String> = (0..n).map(|i| format!("id{i}")).collect();
    assert_eq!(peer("curator-consume-id", ids.path(), n).run().unwrap(), expected);
}

#[test]
fn lock_safe_curator_and_rust_consumers_share_a_queue_exactly_once() {
    const ITEMS: usize = 2_000;
    let path = unique_path("mixed-lock-safe");
    let locks = unique_path("mixed-lock-safe-locks");
    let seed = client();
    let producer = QueueBuilder::new(&seed, &path, StringSerializer)
        .put_in_background(true)
        .build_queue()
        .unwrap();
    for i in 0..ITEMS {
        producer.put(format!("item {i}")).unwrap();
    }
    assert!(producer.flush_timeout(WAIT));
    let java: Vec<_> = (0..2)
        .map(|_| {
            peer("curator-consume", &path, ITEMS)
                .lock_path(&locks)
                .stop_at_stdin_eof()
                .timeout(Duration::from_secs(120))
                .spawn()
                .unwrap()
        })
        .collect();
    for consumer in &java {
        consumer.wait_ready(WAIT).unwrap();
    }
    // The race is arranged, not left to the load: ours lock their first
    // items and hold them in delivery until a Curator consumer (on a JVM
    // the load may slow more) has taken an item, so both sides take part.
    let recorders: Vec<Recorder> = (0..2).map(|_| Recorder::new().held()).collect();
    let clients: Vec<ZkClient> = (0..2).map(|_| client()).collect();
    let queues: Vec<_> = clients
        .iter()
        .zip(&recorders)
        .map(|(c, r)| consumer(c, &path, r).lock_path(&locks).build_queue().unwrap())
        .collect();
    eventually(WAIT, "ours lock their first items", || {
        queues.iter().any(|q| q.stats().claimed > 0)
    });
    // Either of them: the two compete, so either may take every item ours
    // do not hold.
    eventually(WAIT, "a Curator consumer takes an item", || {
        java.iter().map(PeerProcess::lines_printed).sum::<usize>() > 0
    });
    recorders.iter().for_each(Recorder::release);
    let deadline = Instant::now() + Duration::from_secs(120);
    while !seed.get_children(&path).unwrap().0.is_empty() {
        assert!(Instant::now() < deadline, "queue not drained");
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(queues);
    let mut all: Vec<String> = recorders.iter().flat_map(Recorder::items).collect();
    let rust_count = all.len();
    for consumer in java {
        all.extend(consumer.stop().unwrap());
    }
    let java_count = all.len() - rust_count;
    let distinct: HashSet<&String> = all.iter().collect();
    assert_eq!(all.len(), ITEMS, "deliveries (duplicates count twice)");
    assert_eq!(distinct.len(), ITEMS);
    assert!(
        rust_count > 0 && java_count > 0,
        "both sides consumed: rust {rust_count}, java {java_count}"
    );
    assert!(seed.get_children(&locks).unwrap().0.is_empty(), "no lock left");
}

#[test]
fn curator_consumes_an_item_rust_requeued() {
    let path = unique_path("rust-requeue");
    let locks = unique_path("rust-requeue-locks");
    let client = client();
    let recorder = Recorder::new().failing(|item, _| item == "fails in rust");
    let rust = QueueBuilder::new(&client, &path, StringSerializer)
        .consumer(recorder.clone())
        .lock_path(&locks)
        .build_queue()
        .unwrap();
    let producer = producer(&client, &path).build_queue().unwrap();
    producer.put("fails in rust".into()).unwrap();
    recorder.wait_until(WAIT, |r| !r.deliveries().is_empty());
    rust.close();
    // The requeued node carries a trailer with the attempt count; Curator ignores it.
    let taken = peer("curator-consume", &path, 1).lock_path(&locks).run().unwrap();
    assert_eq!(taken, ["fails in rust"]);
}

#[test]
fn rust_consumes_an_item_curator_requeued() {
    let path = unique_path("curator-requeue");
    let locks = unique_path("curator-requeue-locks");
    peer("curator-put", &path, 2)
        .stdin_lines(["first", "second"])
        .run()
        .unwrap();
    // Curator fails "first" once (requeued to the back), then consumes "second".
    let curator = peer("curator-consume", &path, 1)
        .lock_path(&locks)
        .fail_first(1)
        .error_mode(PeerErrorMode::Requeue)
        .run_output()
        .unwrap();
    assert_eq!(curator.lines, ["second"]);
    assert_eq!(curator.stderr_tagged("failed"), ["first"]);
    let client = client();
    let recorder = Recorder::new();
    let _rust = start_consumer(&client, &path, "plain", &recorder);
    assert_eq!(recorder.wait_for(1, WAIT), ["first"]);
}
