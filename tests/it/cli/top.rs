//! `zkq top --once --json`: every queue kind (kazoo's too) and recipe under a path, with
//! the figures each row shows, from one look and the rates over an interval.

use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Duration;

use serde_json::Value;
use zk_queue::recipes::{
    DoubleBarrier, KazooEntry, KazooLockingQueue, KazooQueue, LeaderLatch, Mutex, RwLock, Semaphore,
};
use zk_queue::{DeliverAt, QueueBuilder, ShardPolicy, SimpleQueue, StringSerializer, ZkClient};

use super::{holding_the_first, json, ok, zkq};
use crate::support::queues::consumer as consumer_of;
use crate::support::recorder::Recorder;
use crate::support::server::unique_path;
use crate::support::{client, eventually};

/// How long a condition may take, under load.
const WAIT: Duration = Duration::from_secs(30);

/// The row of the queue or recipe at `path` among `rows`.
fn row<'a>(rows: &'a Value, path: &str) -> &'a Value {
    rows.as_array()
        .expect("an array of rows")
        .iter()
        .find(|r| r["path"] == path)
        .unwrap_or_else(|| panic!("no row for {path}: {rows}"))
}

fn roles(recipe: &Value) -> Vec<&str> {
    recipe["nodes"]
        .as_array()
        .expect("the recipe's nodes")
        .iter()
        .map(|n| n["role"].as_str().unwrap_or("<none>"))
        .collect()
}

/// A queue at `path` whose lock-safe consumer failed its one item, which
/// died at once: one dead letter under `<path>-dead`, the dead-letter path
/// its consumers recorded (itself a queue node).
fn dead_letter_one(zk: &ZkClient, path: &str) {
    let queue = QueueBuilder::new(zk, path, StringSerializer)
        .put_in_background(false)
        .build_queue()
        .unwrap();
    queue.put("doomed".into()).unwrap();
    let failing = Recorder::new().failing(|_, _| true);
    let dead = format!("{path}-dead");
    let consumer = consumer_of(zk, path, &failing)
        .lock_path(&format!("{path}-locks"))
        .max_attempts(1)
        .dead_letter_path(&dead)
        .build_queue()
        .unwrap();
    eventually(WAIT, "the item dies", || {
        zk.get_children(&dead).is_ok_and(|(names, _)| names.len() == 1)
    });
    consumer.close();
}

/// A kazoo `Queue` of two entries at `queue`, and a `LockingQueue` of three
/// at `locking`, one of them taken: the entry returned.
fn kazoo_queues(zk: &ZkClient, queue: &str, locking: &str) -> KazooEntry {
    let kazoo = KazooQueue::new(zk, queue).unwrap();
    kazoo.put(b"k1", 100).unwrap();
    kazoo.put(b"k0", 5).unwrap();
    let kazoo_locking = KazooLockingQueue::new(zk, locking).unwrap();
    kazoo_locking.put_all(&[b"a", b"b", b"c"], 100).unwrap();
    kazoo_locking.take().unwrap()
}

#[test]
fn cli_top_once_shows_every_queue_kind_under_a_path_with_its_figures() {
    let root = unique_path("cli-top-queues");
    let zk = client();
    let at = |name: &str| format!("{root}/{name}");
    let builder = |name: &str| QueueBuilder::new(&zk, &at(name), StringSerializer).put_in_background(false);

    let plain = builder("plain").build_queue().unwrap();
    for i in 0..3 {
        plain.put(format!("p{i}")).unwrap();
    }
    let priority = builder("priority").build_priority_queue(1).unwrap();
    priority.put("low".into(), 9).unwrap();
    priority.put("high".into(), 1).unwrap();
    let delay = builder("delay").build_delay_queue().unwrap();
    delay.put("now".into(), DeliverAt::now()).unwrap();
    delay
        .put("tomorrow".into(), DeliverAt::after(Duration::from_secs(86_400)))
        .unwrap();
    let ids = builder("ids").build_id_queue().unwrap();
    ids.put("job".into(), "job-7").unwrap();
    let classic = SimpleQueue::new(&zk, &at("classic")).unwrap();
    classic.offer(b"one").unwrap();
    classic.offer(b"two").unwrap();
    let sharded = builder("sharded")
        .build_sharded_queue(
            &unique_path("cli-top-sharder"),
            ShardPolicy::new().threshold(2).check_interval(Duration::from_secs(60)),
        )
        .unwrap();
    eventually(WAIT, "the sharder leads", || sharded.is_leader());
    for i in 0..5 {
        sharded.put(format!("s{i}")).unwrap();
    }
    sharded.close();
    let shards = zk.get_children(&at("sharded")).unwrap().0.len();
    assert!(shards >= 2, "{shards} shards for 5 items at a threshold of 2");
    // A lock-safe consumer holding the first of two items: one locked, one
    // consumer registered.
    let locked = at("locked");
    let feeder = builder("locked").build_queue().unwrap();
    feeder.put("held".into()).unwrap();
    feeder.put("waiting".into()).unwrap();
    // Named as a semaphore's child is: the root is still walked as a
    // parent of queues.
    let (consumer, _receiver, _delivery) = holding_the_first(&zk, &locked, &at("locks"));

    dead_letter_one(&zk, &at("dying"));
    let taken = kazoo_queues(&zk, &at("kazoo"), &at("kazoo-locking"));

    // Puts all through the interval.
    let growing = builder("growing").build_queue().unwrap();
    let stop = AtomicBool::new(false);
    let out = thread::scope(|s| {
        s.spawn(|| {
            let mut i = 0;
            while !stop.load(Ordering::Acquire) {
                growing.put(format!("g{i}")).unwrap();
                i += 1;
            }
        });
        eventually(WAIT, "the first growing item", || {
            zk.get_children(&at("growing"))
                .is_ok_and(|(names, _)| !names.is_empty())
        });
        let out = json(&["top", &root, "--once", "--interval", "500ms"]);
        stop.store(true, Ordering::Release);
        out
    });

    let queues = &out["queues"];
    let kind = |name: &str| {
        (
            row(queues, &at(name))["layout"].clone(),
            row(queues, &at(name))["kind"].clone(),
        )
    };
    assert_eq!(kind("plain"), ("curator".into(), "plain".into()));
    assert_eq!(kind("priority"), ("curator".into(), "priority".into()));
    assert_eq!(kind("delay"), ("curator".into(), "delay".into()));
    assert_eq!(kind("ids"), ("curator".into(), "id".into()));
    assert_eq!(kind("classic"), ("classic".into(), "plain".into()));
    assert_eq!(row(queues, &at("sharded"))["kind"], "sharded");
    let died = row(queues, &at("dying"));
    assert_eq!(
        (died["depth"].as_u64(), died["dead_letters"].as_u64()),
        (Some(0), Some(1)),
        "{died}"
    );
    assert_eq!(kind("kazoo"), ("kazoo".into(), "queue".into()));
    assert_eq!(kind("kazoo-locking"), ("kazoo".into(), "locking".into()));
    assert_eq!(row(queues, &at("kazoo"))["depth"], 2);
    let locking = row(queues, &at("kazoo-locking"));
    assert_eq!(
        (locking["depth"].as_u64(), locking["locked"].as_u64()),
        (Some(3), Some(1)),
        "{locking}"
    );
    let depth = |name: &str| row(queues, &at(name))["depth"].as_u64().unwrap();
    assert_eq!(
        [
            depth("plain"),
            depth("priority"),
            depth("delay"),
            depth("ids"),
            depth("classic"),
            depth("sharded")
        ],
        [3, 2, 2, 1, 2, 5]
    );
    assert_eq!(row(queues, &at("sharded"))["shards"], shards);
    assert_eq!(row(queues, &at("delay"))["due_later"], 1);
    let held = row(queues, &locked);
    assert_eq!(
        (held["depth"].as_u64(), held["locked"].as_u64()),
        (Some(2), Some(1)),
        "{held}"
    );
    assert_eq!(held["consumers"], 1, "{held}");
    assert!(row(queues, &at("plain"))["oldest_age_ms"].as_i64().unwrap() >= 0);
    let grew = row(queues, &at("growing"));
    assert!(grew["puts_per_s"].as_f64().unwrap() > 0.0, "{grew}");
    assert_eq!(grew["takes_per_s"].as_f64(), Some(0.0), "{grew}");
    // The lock directory and the consumer registry are no queues of their own.
    let paths: Vec<&str> = queues
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths.len(), 12, "{paths:?}");
    assert!(out["requests_per_look"].as_u64().unwrap() > 0);

    let text = ok(&["top", &root, "--once", "--interval", "100ms"]);
    assert!(
        text.starts_with(&format!("under {root}: 12 queues, 0 recipes")),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with(&format!("{locked}\tcurator/plain\t2\t"))),
        "{text}"
    );
    drop((consumer, taken));
}

#[test]
fn cli_top_once_shows_the_holders_leaders_members_and_waiters_of_every_recipe_under_a_path() {
    let root = unique_path("cli-top-recipes");
    let (a, b, c) = (client(), client(), client());
    let at = |name: &str| format!("{root}/{name}");
    let count = |path: &str| a.get_children(path).map_or(0, |(names, _)| names.len());

    let holder = Mutex::builder(&a, &at("mutex")).build().unwrap();
    let first = Mutex::builder(&b, &at("mutex")).build().unwrap();
    let second = Mutex::builder(&c, &at("mutex")).build().unwrap();
    let reader = RwLock::builder(&a, &at("rwlock")).build().unwrap();
    let alpha = LeaderLatch::builder(&a, &at("latch")).id("alpha").build().unwrap();
    alpha.await_leadership_timeout(WAIT).unwrap();
    let beta = LeaderLatch::builder(&b, &at("latch")).id("beta").build().unwrap();
    eventually(WAIT, "beta's latch node", || count(&at("latch")) == 2);
    let semaphore = Semaphore::builder(&a, &at("semaphore")).max_leases(2).build().unwrap();
    let members = [
        DoubleBarrier::builder(&a, &at("double-barrier"), 2).build().unwrap(),
        DoubleBarrier::builder(&b, &at("double-barrier"), 2).build().unwrap(),
    ];
    thread::scope(|s| {
        let entering = s.spawn(|| members[0].enter().unwrap());
        eventually(WAIT, "the first member's node", || count(&at("double-barrier")) == 1);
        members[1].enter().unwrap();
        entering.join().unwrap();
    });

    let guard = holder.lock().unwrap();
    let read = reader.read().unwrap();
    let lease = semaphore.acquire().unwrap();
    thread::scope(|s| {
        s.spawn(|| drop(first.lock().unwrap()));
        eventually(WAIT, "the first waiter's node", || count(&at("mutex")) == 2);
        s.spawn(|| drop(second.lock().unwrap()));
        eventually(WAIT, "the second waiter's node", || count(&at("mutex")) == 3);

        let out = json(&["top", &root, "--once", "--interval", "100ms"]);
        let recipes = &out["recipes"];
        let mutex = row(recipes, &at("mutex"));
        assert_eq!(mutex["kind"], "mutex");
        assert_eq!(roles(mutex), ["holder", "waiter", "waiter"]);
        let sessions: Vec<String> = mutex["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["session"].as_str().unwrap().to_owned())
            .collect();
        let session = |zk: &zk_queue::ZkClient| format!("0x{:x}", zk.session_id().unwrap());
        assert_eq!(sessions, [session(&a), session(&b), session(&c)], "in arrival order");
        assert_eq!(row(recipes, &at("rwlock"))["kind"], "rwlock");
        assert_eq!(roles(row(recipes, &at("rwlock"))), ["holder"]);
        let latch = row(recipes, &at("latch"));
        assert_eq!(
            (latch["kind"].as_str(), roles(latch)),
            (Some("leader-latch"), vec!["leader", "waiter"])
        );
        assert_eq!(row(recipes, &at("semaphore"))["kind"], "semaphore");
        assert_eq!(row(recipes, &at("semaphore"))["nodes"].as_array().unwrap().len(), 1);
        let barrier = row(recipes, &at("double-barrier"));
        assert_eq!(barrier["kind"], "double-barrier");
        assert_eq!(roles(barrier), ["member", "member", "ready"], "{barrier}");
        assert_eq!(out["queues"].as_array().map(Vec::len), Some(0), "{out}");

        drop(guard);
    });
    drop((read, lease));
    alpha.close().unwrap();
    beta.close().unwrap();
}

#[test]
fn cli_top_without_a_terminal_or_with_json_alone_asks_for_once() {
    for args in [&["top", "/", "--interval", "100ms"][..], &["--json", "top", "/"][..]] {
        let out = zkq(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout)
        );
        assert!(said.contains("--once"), "{args:?}: {said}");
    }
}
