//! The lock-safe delivery guarantees for a consumer's leases under expired
//! sessions, lost replies and partitions: an expired consumer's acknowledge is
//! fenced off, and no item is lost or lock orphaned.

use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use parking_lot::Mutex;
use zk_queue::testing::{FaultProxy, Request, TestingServer};
use zk_queue::{
    client::RetryNTimes, ConnectionState, ConsumeError, DistributedQueue, Error, QueueBuilder, QueueConsumer,
    StringSerializer, ZkClient,
};

use super::WAIT;
use crate::support::queues::{consumer, producer};
use crate::support::recorder::Recorder;
use crate::support::server::unique_path;
use crate::support::{client_of, eventually, expire_session, short_session_client, wait_for_state, Bound};

/// A consumer that reports each item it starts, and finishes it only when
/// told to.
struct Gate {
    started: Sender<String>,
    release: Receiver<()>,
    finished: Arc<Mutex<Vec<String>>>,
    leases_lost: Arc<Mutex<Vec<String>>>,
}

/// The test's side of a [`Gate`].
struct GateControl {
    started: Receiver<String>,
    release: Sender<()>,
    finished: Arc<Mutex<Vec<String>>>,
    leases_lost: Arc<Mutex<Vec<String>>>,
}

fn gate() -> (Gate, GateControl) {
    let (started_tx, started_rx) = crossbeam_channel::unbounded();
    let (release_tx, release_rx) = crossbeam_channel::unbounded();
    let finished = Arc::new(Mutex::new(Vec::new()));
    let leases_lost = Arc::new(Mutex::new(Vec::new()));
    (
        Gate {
            started: started_tx,
            release: release_rx,
            finished: Arc::clone(&finished),
            leases_lost: Arc::clone(&leases_lost),
        },
        GateControl {
            started: started_rx,
            release: release_tx,
            finished,
            leases_lost,
        },
    )
}

impl QueueConsumer<String> for Gate {
    fn consume(&self, item: String) -> Result<(), ConsumeError> {
        let _ = self.started.send(item.clone());
        self.release.recv().map_err(|_| "the test ended")?;
        self.finished.lock().push(item);
        Ok(())
    }

    fn error(&self, error: &Error) {
        if let Error::LeaseLost { path } = error {
            self.leases_lost.lock().push(path.clone());
        }
    }
}

fn children(client: &ZkClient, path: &str) -> Vec<String> {
    client.get_children(path).map(|(c, _)| c).unwrap_or_default()
}

fn gated_queue(client: &ZkClient, queue: &str, locks: &str, gate: Gate) -> DistributedQueue<String> {
    QueueBuilder::new(client, queue, StringSerializer)
        .consumer(gate)
        .lock_path(locks)
        .claim_window(1)
        .build_queue()
        .unwrap()
}

/// An item whose first holder, A, lost its session while processing it,
/// and which B, a consumer on the server itself, holds now.
struct TakenOver {
    _server: TestingServer,
    proxy: FaultProxy,
    direct: ZkClient,
    queue: String,
    item_path: String,
    lock_path: String,
    /// The czxid of A's lock.
    a_lock: i64,
    a_states: Receiver<ConnectionState>,
    queue_a: DistributedQueue<String>,
    a: GateControl,
    queue_b: DistributedQueue<String>,
    b: GateControl,
    _clients: (ZkClient, ZkClient),
}

/// A (through a proxy) takes the one item under a fresh queue named after
/// `name`; the proxy blackholes A until the server deletes its lock with its
/// session; then B takes the item. A has not answered yet.
fn taken_over(name: &str) -> TakenOver {
    let server = TestingServer::start().unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).unwrap();
    let direct = client_of(&server.connect_string());
    let (queue, locks) = (unique_path(name), unique_path(&format!("{name}-locks")));
    let client_a = short_session_client(&proxy.connect_string());
    let (gate_a, a) = gate();
    let queue_a = gated_queue(&client_a, &queue, &locks, gate_a);
    producer(&direct, &queue)
        .build_queue()
        .unwrap()
        .put("job".into())
        .unwrap();
    assert_eq!(a.started.recv_timeout(WAIT).unwrap(), "job");
    let name = children(&direct, &queue).pop().expect("the item");
    let (item_path, lock_path) = (format!("{queue}/{name}"), format!("{locks}/{name}"));
    let a_lock = direct.exists(&lock_path).unwrap().expect("A's lock").czxid;

    // A's session expires while A is still processing: the server deletes its lock.
    let a_states = client_a.state_listener();
    proxy.blackhole();
    eventually(WAIT, "A's lock goes with its session", || {
        direct.exists(&lock_path).unwrap().is_none()
    });
    let client_b = client_of(&server.connect_string());
    let (gate_b, b) = gate();
    let queue_b = gated_queue(&client_b, &queue, &locks, gate_b);
    assert_eq!(b.started.recv_timeout(WAIT).unwrap(), "job");
    TakenOver {
        _server: server,
        proxy,
        direct,
        queue,
        item_path,
        lock_path,
        a_lock,
        a_states,
        queue_a,
        a,
        queue_b,
        b,
        _clients: (client_a, client_b),
    }
}

#[test]
fn an_expired_consumer_cannot_acknowledge_and_spares_the_new_holders_lock() {
    let TakenOver {
        proxy,
        direct,
        queue,
        item_path,
        lock_path,
        a_lock,
        a_states,
        queue_a,
        a,
        queue_b,
        b,
        _server,
        _clients,
        ..
    } = taken_over("fenced");
    let b_lock = direct.exists(&lock_path).unwrap().expect("B's lock").czxid;
    assert_ne!(a_lock, b_lock);

    proxy.heal();
    wait_for_state(&a_states, ConnectionState::Reconnected, WAIT);
    a.release.send(()).unwrap();
    eventually(WAIT, "A hears that its lease was lost", || {
        !a.leases_lost.lock().is_empty()
    });
    assert_eq!(*a.leases_lost.lock(), vec![item_path.clone()]);
    assert_eq!(queue_a.stats().lease_lost, 1);
    // A deleted neither the item nor B's lock.
    assert!(direct.exists(&item_path).unwrap().is_some(), "A deleted the item");
    assert_eq!(direct.exists(&lock_path).unwrap().map(|s| s.czxid), Some(b_lock));

    b.release.send(()).unwrap();
    eventually(WAIT, "B's acknowledge deletes the item and its lock", || {
        direct.exists(&item_path).unwrap().is_none() && direct.exists(&lock_path).unwrap().is_none()
    });
    assert_eq!(*b.finished.lock(), vec!["job".to_string()]);
    assert!(b.leases_lost.lock().is_empty());
    assert_eq!(queue_b.stats().lease_lost, 0);
    // Deleted exactly once: nothing was requeued, and nothing is delivered again.
    assert!(children(&direct, &queue).is_empty());
    assert!(b.started.recv_timeout(Duration::from_millis(500)).is_err());
    assert!(a.started.try_recv().is_err());
    drop((a, b));
}

#[test]
fn an_expired_consumers_lease_counts_as_lost_even_when_the_new_holder_already_acknowledged() {
    // B finishes the item, so its lock and the item are both gone when A
    // answers.
    let TakenOver {
        proxy,
        direct,
        item_path,
        lock_path,
        a_states,
        queue_a,
        a,
        queue_b,
        b,
        _server,
        _clients,
        ..
    } = taken_over("lost-and-gone");
    b.release.send(()).unwrap();
    eventually(WAIT, "B acknowledged the item", || {
        direct.exists(&item_path).unwrap().is_none() && direct.exists(&lock_path).unwrap().is_none()
    });
    proxy.heal();
    wait_for_state(&a_states, ConnectionState::Reconnected, WAIT);
    a.release.send(()).unwrap();
    eventually(WAIT, "A consumed the item", || queue_a.stats().consumed == 1);
    // Closing waits for A's acknowledger to settle what A consumed.
    assert!(queue_a.close().is_complete());
    assert_eq!(queue_a.stats().lease_lost, 1, "A's lease was lost, not settled by A");
    assert_eq!(*a.leases_lost.lock(), vec![item_path]);
    assert_eq!(queue_b.stats().lease_lost, 0);
    drop((a, b));
}

#[test]
fn after_its_session_expired_a_consumer_hands_over_no_item_it_locked_in_that_session() {
    let server = TestingServer::start().unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).unwrap();
    let direct = client_of(&server.connect_string());
    let (queue, locks) = (unique_path("stale-leases"), unique_path("stale-leases-locks"));
    let client = short_session_client(&proxy.connect_string());
    let producer = producer(&direct, &queue).build_queue().unwrap();
    for i in 0..4 {
        producer.put(format!("job-{i}")).unwrap();
    }
    // Each delivery records whether this consumer's live session held the
    // item's lock when the item reached it; the first one waits for the test.
    let deliveries: Arc<Mutex<Vec<(String, bool)>>> = Arc::default();
    let (started_tx, started) = crossbeam_channel::unbounded::<()>();
    let (release, release_rx) = crossbeam_channel::unbounded::<()>();
    let consumer = {
        let (deliveries, client, direct, locks) =
            (Arc::clone(&deliveries), client.clone(), direct.clone(), locks.clone());
        QueueBuilder::new(&client.clone(), &queue, StringSerializer)
            .lock_path(&locks)
            .claim_window(4)
            .consumer_with_meta(
                move |item: String, meta: &zk_queue::ItemMeta| -> Result<(), ConsumeError> {
                    let owner = direct
                        .exists(&format!("{locks}/{}", meta.name()))
                        .unwrap()
                        .map(|lock| lock.ephemeral_owner);
                    let ours = owner.is_some() && owner == client.session_id().ok();
                    let first = deliveries.lock().is_empty();
                    deliveries.lock().push((item, ours));
                    if first {
                        let _ = started_tx.send(());
                        release_rx.recv().map_err(|_| "the test ended")?;
                    }
                    Ok(())
                },
            )
            .build_queue()
            .unwrap()
    };
    started.recv_timeout(WAIT).unwrap();
    eventually(WAIT, "the consumer locked every item", || {
        children(&direct, &locks).len() == 4
    });

    // The session expires while the first item is processed, and the client
    // hears of it; the three other items were locked in that session.
    let states = client.state_listener();
    expire_session(&proxy, &client, &direct);
    wait_for_state(&states, ConnectionState::Lost, WAIT);
    release.send(()).unwrap();
    // Everything is delivered again in the new session, once each.
    eventually(WAIT, "the items are delivered on the new session", || {
        let seen = deliveries.lock();
        (0..4).all(|i| {
            seen.iter()
                .skip(1)
                .any(|(item, ours)| *ours && *item == format!("job-{i}"))
        })
    });
    let seen = deliveries.lock().clone();
    let stale: Vec<_> = seen.iter().skip(1).filter(|(_, ours)| !ours).collect();
    assert!(
        stale.is_empty(),
        "handed over under a lost lock: {stale:?} (all: {seen:?})"
    );
    assert!(consumer.stats().lease_lost >= 3, "{:?}", consumer.stats());
    consumer.close();
}

/// A client through `proxy` whose session outlives the faults of a test.
fn lasting_client(proxy: &FaultProxy) -> ZkClient {
    ZkClient::builder(&proxy.connect_string())
        .session_timeout(Duration::from_secs(20))
        .connection_timeout(Duration::from_secs(10))
        .request_timeout(Duration::from_secs(5))
        .connect()
        .unwrap()
}

#[test]
fn a_lost_lock_create_reply_neither_loses_the_item_nor_orphans_the_lock() {
    let server = TestingServer::start().unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).unwrap();
    let direct = client_of(&server.connect_string());
    let (queue, locks) = (unique_path("lost-claim"), unique_path("lost-claim-locks"));
    let client = lasting_client(&proxy);
    let session = client.session_id().unwrap();
    let recorder = Recorder::new();
    // Windows of one item: a lone lock goes out as a single create (a
    // window of several is one multi, whose lost reply
    // `lock_window_replies` covers).
    let _consumer = consumer(&client, &queue, &recorder)
        .lock_path(&locks)
        .claim_window(1)
        .build_queue()
        .unwrap();
    let producer = producer(&direct, &queue).build_queue().unwrap();
    // Once the first item is consumed and acknowledged, the consumer is idle.
    producer.put("warm-up".into()).unwrap();
    recorder.wait_for(1, WAIT);
    eventually(WAIT, "the warm-up item is acknowledged", || {
        children(&direct, &queue).is_empty() && children(&direct, &locks).is_empty()
    });

    proxy.drop_reply_to(Request::Create);
    let jobs: Vec<String> = (0..5).map(|i| format!("job-{i}")).collect();
    for job in &jobs {
        producer.put(job.clone()).unwrap();
    }
    let items = recorder.wait_for(6, WAIT);
    eventually(WAIT, "every item acknowledged and no lock left", || {
        children(&direct, &queue).is_empty() && children(&direct, &locks).is_empty()
    });
    assert!(!proxy.dropping_reply(), "a lock create's reply was dropped");
    assert_eq!(client.session_id().unwrap(), session, "the same session throughout");
    let sorted = |mut items: Vec<String>| {
        items.sort();
        items
    };
    let mut expected = vec!["warm-up".to_string()];
    expected.extend(jobs);
    let expected = sorted(expected);
    assert_eq!(sorted(items), expected, "each item once");
    thread::sleep(Duration::from_millis(300));
    assert_eq!(sorted(recorder.items()), expected, "nothing delivered again");
}

#[test]
fn a_lost_acknowledge_reply_neither_loses_the_item_nor_orphans_the_lock() {
    let server = TestingServer::start().unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).unwrap();
    let direct = client_of(&server.connect_string());
    let (queue, locks) = (unique_path("lost-ack"), unique_path("lost-ack-locks"));
    let client = lasting_client(&proxy);
    let session = client.session_id().unwrap();
    let (builder, receiver) = QueueBuilder::new(&client, &queue, StringSerializer)
        .lock_path(&locks)
        .pull_consumer();
    let pulled = builder.build_queue().unwrap();
    let producer = producer(&direct, &queue).build_queue().unwrap();
    producer.put("job-1".into()).unwrap();
    producer.put("job-2".into()).unwrap();

    let first = receiver.take_timeout(WAIT).unwrap().expect("job-1");
    assert_eq!(*first, "job-1");
    // The acknowledge multi is applied, and its reply lost.
    proxy.drop_reply_to(Request::Multi);
    first.ack();
    let second = receiver.take_timeout(WAIT).unwrap().expect("job-2");
    assert_eq!(*second, "job-2");
    second.ack();
    eventually(WAIT, "both items acknowledged and no lock left", || {
        children(&direct, &queue).is_empty() && children(&direct, &locks).is_empty()
    });
    assert!(!proxy.dropping_reply(), "the acknowledge's reply was dropped");
    assert_eq!(client.session_id().unwrap(), session, "the same session throughout");
    assert!(
        receiver.take_timeout(Duration::from_millis(500)).unwrap().is_none(),
        "nothing delivered again"
    );
    let stats = pulled.stats();
    assert_eq!((stats.lease_lost, stats.in_flight), (0, 0));
}

#[test]
fn an_acknowledge_cut_off_by_a_short_partition_settles_once_it_heals() {
    let server = TestingServer::start().unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).unwrap();
    let direct = client_of(&server.connect_string());
    let (queue, locks) = (unique_path("ack-partition"), unique_path("ack-partition-locks"));
    // Requests fail fast, the session outlives the partition.
    let client = ZkClient::builder(&proxy.connect_string())
        .session_timeout(Duration::from_secs(20))
        .connection_timeout(Duration::from_secs(10))
        .request_timeout(Duration::from_millis(500))
        .retry_policy(RetryNTimes::new(1, Duration::from_millis(100)))
        .connect()
        .unwrap();
    let session = client.session_id().unwrap();
    let (builder, receiver) = QueueBuilder::new(&client, &queue, StringSerializer)
        .lock_path(&locks)
        .pull_consumer();
    let pulled = builder.build_queue().unwrap();
    producer(&direct, &queue)
        .build_queue()
        .unwrap()
        .put("job".into())
        .unwrap();
    let delivery = receiver.take_timeout(WAIT).unwrap().expect("job");

    proxy.blackhole();
    delivery.ack();
    // Long enough for the acknowledge's requests to fail, shorter than the session.
    thread::sleep(Duration::from_secs(3));
    proxy.heal();
    eventually(WAIT, "the item acknowledged and its lock gone", || {
        children(&direct, &queue).is_empty() && children(&direct, &locks).is_empty()
    });
    assert_eq!(client.session_id().unwrap(), session, "the same session throughout");
    assert!(
        receiver.take_timeout(Duration::from_millis(500)).unwrap().is_none(),
        "nothing delivered again"
    );
    assert_eq!(pulled.stats().lease_lost, 0);
}

#[test]
fn consumers_keep_working_on_the_new_session_after_an_expiry() {
    let server = TestingServer::start().unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).unwrap();
    let direct = client_of(&server.connect_string());
    let (pushed, pulled) = (unique_path("expiry-push"), unique_path("expiry-pull"));
    let client = short_session_client(&proxy.connect_string());
    let recorder = Recorder::new();
    // No rescan within the test: only watches set again on the new session
    // can bring the items put after the expiry.
    const NO_RESCAN: Duration = Duration::from_secs(3600);
    let _push = consumer(&client, &pushed, &recorder)
        .lock_path(&unique_path("expiry-push-locks"))
        .rescan_interval(NO_RESCAN)
        .build_queue()
        .unwrap();
    let (builder, receiver) = QueueBuilder::new(&client, &pulled, StringSerializer)
        .lock_path(&unique_path("expiry-pull-locks"))
        .rescan_interval(NO_RESCAN)
        .pull_consumer();
    let _pull = builder.build_queue().unwrap();
    let push_producer = producer(&direct, &pushed).build_queue().unwrap();
    let pull_producer = producer(&direct, &pulled).build_queue().unwrap();
    push_producer.put("before".into()).unwrap();
    pull_producer.put("before".into()).unwrap();
    recorder.wait_for(1, WAIT);
    receiver.take_timeout(WAIT).unwrap().expect("before").ack();
    // Acknowledged before the fault, so neither is delivered again.
    eventually(WAIT, "both items acknowledged", || {
        children(&direct, &pushed).is_empty() && children(&direct, &pulled).is_empty()
    });

    let states = client.state_listener();
    let session = client.session_id().unwrap();
    const LONG_TAKE: Duration = Duration::from_secs(30);
    const SHORT_TAKE: Duration = Duration::from_secs(3);
    let (after, empty) = thread::scope(|s| {
        let long = s.spawn(|| {
            let started = Instant::now();
            (receiver.take_timeout(LONG_TAKE), started.elapsed())
        });
        let short = s.spawn(|| {
            let started = Instant::now();
            (receiver.take_timeout(SHORT_TAKE), started.elapsed())
        });
        expire_session(&proxy, &client, &direct);
        wait_for_state(&states, ConnectionState::Lost, WAIT);
        wait_for_state(&states, ConnectionState::Reconnected, WAIT);
        let empty = short.join().unwrap();
        // Nothing else happens on the new session before these puts: only
        // re-armed watches deliver them.
        push_producer.put("after".into()).unwrap();
        pull_producer.put("after".into()).unwrap();
        (long.join().unwrap(), empty)
    });
    assert_ne!(client.session_id().unwrap(), session, "a new session");

    assert_eq!(recorder.wait_for(2, WAIT), vec!["before", "after"]);
    let (taken, waited) = after;
    let delivery = taken.unwrap().expect("the item put after the expiry");
    assert_eq!(*delivery, "after");
    delivery.ack();
    Bound::past(LONG_TAKE, Duration::from_secs(1)).check("the take across the expiry", waited);
    // A take that spans the expiry and finds nothing ends at its deadline:
    // empty-handed, or with the error that says no server could be reached
    // if the partition still lasted then.
    let (nothing, waited) = empty;
    assert!(
        matches!(nothing, Ok(None) | Err(Error::Unreachable { .. })),
        "{nothing:?}"
    );
    assert!(waited >= SHORT_TAKE, "returned before its deadline, after {waited:?}");
    Bound::past(SHORT_TAKE, Duration::from_secs(1)).check("the empty take across the expiry", waited);
    eventually(WAIT, "the pulled item is acknowledged on the new session", || {
        children(&direct, &pulled).is_empty()
    });
}
