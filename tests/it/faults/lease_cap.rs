//! The lease cap of a lock-safe consumer: the lock nodes of its session
//! never outnumber its `claim_window`, even when a lock it lets go of could
//! not be deleted. Such a lock still exists on the server, so it keeps its
//! place in the window until it is known gone; the consumer claims nothing
//! in its place before then.

use std::collections::BTreeSet;
use std::thread;
use std::time::Duration;

use zk_queue::testing::FaultProxy;
use zk_queue::{QueueBuilder, StringSerializer, ZkClient};

use super::WAIT;
use crate::support::leases::LeaseSampler;
use crate::support::queues::producer;
use crate::support::server::{shared_connect_string, unique_path};
use crate::support::{client_of, eventually, nodes};

/// The consumer's claim window.
const WINDOW: usize = 2;

/// The consumer's request timeout: a request unanswered this long fails.
const REQUEST_TIMEOUT: Duration = Duration::from_millis(300);

/// The proxy's latency each way while the release is unanswered: a round
/// trip takes more than six request timeouts, so every request sent in it
/// times out (and still reaches the server later).
const LATENCY: Duration = Duration::from_secs(1);

/// How long the latency stays once the release gave up: long enough for
/// anything the consumer sent meanwhile to reach the server, and for the
/// sampler to see the locks it made.
const FAULT_HELD: Duration = Duration::from_secs(3);

/// Asserts that the consumer's `locks` (it is the only one) are at most
/// its claim window.
fn assert_within_cap(locks: &[String], when: &str) {
    assert!(
        locks.len() <= WINDOW,
        "the lease cap broken {when}: {} locks with a claim window of {WINDOW}: {locks:?}",
        locks.len()
    );
}

#[test]
fn a_lock_whose_release_went_unanswered_keeps_its_place_in_the_window_until_it_is_deleted() {
    // The fault is the proxy's alone, so the shared server serves.
    let connect = shared_connect_string();
    let proxy = FaultProxy::start(&connect).unwrap();
    let direct = client_of(&connect);
    let (queue, locks) = (unique_path("lease-cap"), unique_path("lease-cap-locks"));
    // Requests fail fast; the session outlives the latency by far.
    let client = ZkClient::builder(&proxy.connect_string())
        .session_timeout(Duration::from_secs(20))
        .connection_timeout(Duration::from_secs(10))
        .request_timeout(REQUEST_TIMEOUT)
        .connect()
        .unwrap();
    let session = client.session_id().unwrap();
    let jobs: Vec<String> = (0..8).map(|n| format!("job-{n}")).collect();
    let items = producer(&direct, &queue).build_queue().unwrap();
    for job in &jobs {
        items.put(job.clone()).unwrap();
    }
    let leases = LeaseSampler::start(&connect, &locks);
    let (builder, receiver) = QueueBuilder::new(&client, &queue, StringSerializer)
        .lock_path(&locks)
        .claim_window(WINDOW)
        .pull_consumer();
    let pulled = builder.build_queue().unwrap();

    let first = receiver.take_timeout(WAIT).unwrap().expect("the first item");
    assert_eq!(*first, "job-0");
    // The window fills: its locks are on the server, no more than the cap.
    eventually(WAIT, "the consumer locks a full window", || {
        nodes(&direct, &locks).len() >= WINDOW
    });
    assert_within_cap(&nodes(&direct, &locks), "with a full window");
    let first_lock = format!("{locks}/{}", first.meta().name());

    // The release's check of its lock gets no answer in time, so its delete
    // is never sent: the lock stays, and its fate is unknown to the consumer.
    proxy.set_delay(LATENCY);
    first.release();
    eventually(WAIT, "the release gave up", || pulled.stats().in_flight == 1);
    let stat = direct
        .exists(&first_lock)
        .unwrap()
        .expect("the released lock is still there");
    assert_eq!(stat.ephemeral_owner, session, "the released lock is the consumer's");
    // Whatever the consumer claims meanwhile reaches the server while that
    // lock is still there.
    thread::sleep(FAULT_HELD);
    assert_within_cap(&nodes(&direct, &locks), "with a lock orphaned");
    proxy.set_delay(Duration::ZERO);

    // Everything is delivered once the latency is gone, the released item
    // again.
    let mut acked = BTreeSet::new();
    while acked.len() < jobs.len() {
        let delivery = receiver.take_timeout(WAIT).unwrap().expect("every item, in time");
        acked.insert(delivery.ack());
    }
    eventually(WAIT, "every item acknowledged and every lock gone", || {
        direct.get_children(&queue).is_ok_and(|(c, _)| c.is_empty())
            && direct.get_children(&locks).is_ok_and(|(c, _)| c.is_empty())
    });
    assert_eq!(acked, jobs.iter().cloned().collect::<BTreeSet<_>>());
    assert_eq!(client.session_id().unwrap(), session, "the same session throughout");
    let sampled = leases.stop();
    println!("leases: {sampled:?}");
    assert!(sampled.samples > 0, "the sampler listed the locks");
    assert!(
        sampled.most <= WINDOW,
        "the lease cap broken: the consumer had {} locks with a claim window of {WINDOW}: {sampled:?}",
        sampled.most
    );
    drop(pulled);
}
