//! Consumers that do not collide: this crate's consumers of one queue
//! register in `<queue>.consumers` and each claims its own stripe of the
//! sequence numbers, taking another stripe's items only once they waited a
//! grace (or their owner left); Curator's consumers beside them compete as
//! before; the registry is a sibling of the queue, never beside a shard.

use std::collections::HashSet;
use std::time::Duration;

use zk_queue::client::CreateMode;
use zk_queue::{QueueBuilder, ShardPolicy, StringSerializer, ZkClient};

use super::{items, WAIT};
use crate::support::java::PeerCommand;
use crate::support::queues::{consumer, consumers_on, producer};
use crate::support::recorder::Recorder;
use crate::support::server::{shared_connect_string, unique_path};
use crate::support::{client, eventually, expire_session, proxied_client};
use zk_queue::testing::FaultProxy;

const ITEMS: usize = 2_000;

/// The registry of the queue at `path`.
fn registry(path: &str) -> String {
    format!("{path}.consumers")
}

/// The consumers registered on the queue at `path`, as the server lists them.
fn registered(admin: &ZkClient, path: &str) -> usize {
    match admin.get_children(&registry(path)) {
        Ok((children, _)) => children.len(),
        Err(zk_queue::Error::NoNode { .. }) => 0,
        Err(e) => panic!("listing the registry: {e}"),
    }
}

/// Registers a consumer that never claims anything, with `client`'s session
/// (the registry is made first if need be, as a consumer makes it).
fn silent_peer(client: &ZkClient, path: &str) -> String {
    match client.create(
        &registry(path),
        format!("zk-queue consumers of {path}").as_bytes(),
        CreateMode::Container,
    ) {
        Ok(_) | Err(zk_queue::Error::NodeExists { .. }) => {}
        Err(e) => panic!("making the registry: {e}"),
    }
    let name = format!("{}/_c_00000000-0000-4000-8000-000000000000-consumer-", registry(path));
    client.create(&name, b"", CreateMode::EphemeralSequential).unwrap().0
}

/// Puts `n` items `item-0`… into the queue at `path` with background puts
/// (sent together in multis), each in a node of its own.
fn put_items(client: &ZkClient, path: &str, n: usize) -> Vec<String> {
    let queue = QueueBuilder::new(client, path, StringSerializer)
        .put_in_background(true)
        .build_queue()
        .unwrap();
    let expected = items("item-", n);
    for item in &expected {
        queue.put(item.clone()).unwrap();
    }
    assert!(queue.flush_timeout(WAIT), "the puts were not stored");
    queue.close();
    expected
}

/// `consumers` registered consumers (lock-safe if `lock_safe`) drain
/// `ITEMS` items put once all registered; checks every item came exactly
/// once, and returns the claims they lost to each other.
fn claims_lost_draining_together(name: &str, consumers: usize, lock_safe: bool) -> u64 {
    let path = unique_path(name);
    let locks = unique_path(&format!("{name}-locks"));
    let admin = client();
    let recorder = Recorder::new();
    let clients: Vec<ZkClient> = (0..consumers).map(|_| client()).collect();
    let queues = consumers_on(&clients, &path, &recorder, lock_safe.then_some(locks.as_str()));
    eventually(WAIT, "every consumer registers", || {
        registered(&admin, &path) == consumers
    });
    let mut expected = put_items(&admin, &path, ITEMS);
    let mut delivered = recorder.wait_for(ITEMS, WAIT);
    let lost: u64 = queues.iter().map(|q| q.stats().claims_lost).sum();
    let claimed: Vec<u64> = queues.iter().map(|q| q.stats().claimed).collect();
    for queue in queues {
        queue.close();
    }
    delivered.sort();
    expected.sort();
    assert_eq!(delivered, expected, "every item exactly once");
    println!("{consumers} registered consumers (lock-safe: {lock_safe}): {lost} claims lost, claimed {claimed:?}");
    assert!(
        claimed.iter().all(|&c| c > 0),
        "every consumer claimed some: {claimed:?}"
    );
    eventually(WAIT, "closed consumers leave the registry", || {
        registered(&admin, &path) == 0
    });
    lost
}

/// Claims that may be lost while consumers learn of each other (a consumer
/// may claim before it has seen the last to register) and where a helper
/// (a consumer whose stripe ran dry, taking its share of another's backlog
/// from the tail) meets the owner: a window or two per meeting. Spreading
/// alone, four consumers lost 619 (plain) and 785 (lock-safe) of 2,000;
/// striped, 0 to 35.
const LOST_BOUND: u64 = (ITEMS / 20) as u64;

/// The load margin: on a loaded machine the backlog lasts longer, so more
/// of it is helped with, and more helpers meet owners.
const LOAD_MARGIN: u64 = (ITEMS / 20) as u64;

#[test]
fn four_registered_plain_consumers_lose_almost_no_claims_to_each_other() {
    let lost = claims_lost_draining_together("stripes-plain", 4, false);
    assert!(lost <= LOST_BOUND + LOAD_MARGIN, "{lost} claims lost");
}

#[test]
fn four_registered_lock_safe_consumers_lose_almost_no_locks_to_each_other() {
    let lost = claims_lost_draining_together("stripes-lock-safe", 4, true);
    assert!(lost <= LOST_BOUND + LOAD_MARGIN, "{lost} locks lost");
}

#[test]
fn a_consumer_leaves_a_registered_peer_s_items_for_a_grace_then_claims_in_order_once_the_peer_left() {
    let path = unique_path("stripes-peer-left");
    let (admin, peer) = (client(), client());
    let recorder = Recorder::new();
    let own = client();
    let queue = consumer(&own, &path, &recorder).build_queue().unwrap();
    eventually(WAIT, "the consumer registers", || registered(&admin, &path) == 1);
    silent_peer(&peer, &path);
    // Its own items at once, the silent peer's once they waited: not in
    // the order put (one worker delivers in claim order).
    let first = put_one_by_one(&admin, &path, "a-", 40);
    let got = recorder.wait_for(40, WAIT);
    assert_ne!(got, first, "the peer's stripe was left alone for a while");
    let mut sorted = got.clone();
    sorted.sort();
    let mut want = first;
    want.sort();
    assert_eq!(sorted, want, "every item exactly once, the silent peer's too");
    // The peer's session ends: the consumer claims alone, in order.
    peer.close();
    eventually(WAIT, "the peer's registration goes", || registered(&admin, &path) == 1);
    let second = put_one_by_one(&admin, &path, "b-", 40);
    let got = recorder.wait_for(80, WAIT);
    assert_eq!(got[40..], second, "alone again: claimed in order");
    queue.close();
}

/// Puts `n` items `<prefix>0`… one at a time, each stored before the next.
fn put_one_by_one(client: &ZkClient, path: &str, prefix: &str, n: usize) -> Vec<String> {
    let queue = producer(client, path).build_queue().unwrap();
    let items = items(prefix, n);
    for item in &items {
        queue.put(item.clone()).unwrap();
    }
    queue.close();
    items
}

#[test]
fn a_striped_priority_consumer_takes_every_urgent_item_before_a_less_urgent_one() {
    let path = unique_path("stripes-priority");
    let (admin, peer) = (client(), client());
    let queue = producer(&admin, &path).build_priority_queue(1).unwrap();
    // Less urgent first, so that order by sequence alone would be wrong.
    for i in 0..30 {
        queue.put(format!("later-{i}"), 5).unwrap();
    }
    for i in 0..30 {
        queue.put(format!("urgent-{i}"), -5).unwrap();
    }
    queue.close();
    // A registered peer that never claims: half the urgent items are its.
    silent_peer(&peer, &path);
    let recorder = Recorder::new();
    let own = client();
    let consumer = consumer(&own, &path, &recorder).build_priority_queue(1).unwrap();
    let got = recorder.wait_for(60, WAIT);
    consumer.close();
    let last_urgent = got.iter().rposition(|i| i.starts_with("urgent-")).unwrap();
    let first_later = got.iter().position(|i| i.starts_with("later-")).unwrap();
    assert!(last_urgent < first_later, "urgent items first: {got:?}");
    assert_eq!(got.iter().collect::<HashSet<_>>().len(), 60, "every item exactly once");
}

#[test]
fn a_striped_priority_consumer_takes_urgent_items_put_mid_pass_before_the_rest_of_its_backlog() {
    let path = unique_path("stripes-priority-mid-pass");
    let (admin, peer) = (client(), client());
    let producer = producer(&admin, &path).build_priority_queue(1).unwrap();
    let later = 40;
    for i in 0..later {
        producer.put(format!("later-{i}"), 5).unwrap();
    }
    // A registered peer that never claims: about half the urgent items
    // arriving mid-pass are its, and wait a grace for it.
    silent_peer(&peer, &path);
    let recorder = Recorder::new().held();
    let own = client();
    let consumer = consumer(&own, &path, &recorder).build_priority_queue(1).unwrap();
    // Mid-pass: the consumer's first item is held in delivery.
    eventually(WAIT, "the consumer claims its first item", || {
        consumer.stats().claimed >= 1
    });
    let urgent = 10;
    for i in 0..urgent {
        producer.put(format!("urgent-{i}"), -5).unwrap();
    }
    // Claimed before the urgent items could count: these may come first.
    let claimed_before = consumer.stats().claimed;
    recorder.release();
    let got = recorder.wait_for(later + urgent, WAIT);
    consumer.close();
    producer.close();
    let last_urgent = got.iter().rposition(|i| i.starts_with("urgent-")).unwrap();
    let later_first = got[..last_urgent].iter().filter(|i| i.starts_with("later-")).count();
    assert!(
        u64::try_from(later_first).unwrap() <= claimed_before,
        "{later_first} less urgent items before the last urgent one, more than the {claimed_before} claimed \
         before the urgent ones were put: {got:?}"
    );
    assert_eq!(
        got.iter().collect::<HashSet<_>>().len(),
        later + urgent,
        "every item exactly once"
    );
}

#[test]
fn the_registry_is_a_sibling_of_the_queue_and_none_is_made_beside_a_shard() {
    let path = unique_path("stripes-layout");
    let admin = client();
    let recorder = Recorder::new();
    let clients = [client(), client()];
    let queues: Vec<_> = clients
        .iter()
        .map(|c| consumer(c, &path, &recorder).build_queue().unwrap())
        .collect();
    eventually(WAIT, "both consumers register", || registered(&admin, &path) == 2);
    let (data, _) = admin.get_data(&registry(&path)).unwrap();
    assert_eq!(data, format!("zk-queue consumers of {path}").into_bytes());
    let (names, _) = admin.get_children(&registry(&path)).unwrap();
    assert!(
        names.iter().all(|n| n.starts_with("_c_") && n.contains("-consumer-")),
        "{names:?}"
    );
    drop(queues);
    // Nothing but items under the queue, where Curator's consumers and the
    // classic recipe look (held by a lock-safe consumer, so they stay).
    let held = Recorder::new().held();
    let locked = client();
    let _lock_safe = consumer(&locked, &path, &held)
        .lock_path(&unique_path("stripes-layout-locks"))
        .build_queue()
        .unwrap();
    put_items(&admin, &path, 20);
    let (children, _) = admin.get_children(&path).unwrap();
    assert!(
        !children.is_empty() && children.iter().all(|c| c.starts_with("queue-")),
        "{children:?}"
    );
    held.release();
    // A queue named as a shard (Curator's QueueSharder lists its parent):
    // its consumers do not register, so its parent holds the shard alone.
    let root = unique_path("stripes-sharded-root");
    let shard = format!("{root}/queue-8d0c5e0e-4f57-4b8e-9d51-0a4b7b1b7c11");
    let shard_recorder = Recorder::new();
    let shard_consumer = consumer(&clients[0], &shard, &shard_recorder).build_queue().unwrap();
    put_items(&admin, &shard, 10);
    shard_recorder.wait_for(10, WAIT);
    let (siblings, _) = admin.get_children(&root).unwrap();
    assert_eq!(siblings, vec![shard.rsplit('/').next().unwrap().to_owned()]);
    shard_consumer.close();
}

#[test]
fn curator_s_consumer_beside_registered_consumers_gets_items_and_none_is_lost_or_twice() {
    let path = unique_path("stripes-curator");
    let admin = client();
    let java = PeerCommand::new("curator-consume", &shared_connect_string(), &path, ITEMS)
        .stop_at_stdin_eof()
        .timeout(Duration::from_secs(120))
        .spawn()
        .unwrap();
    java.wait_ready(WAIT).unwrap();
    // The race is arranged, not left to the load: ours claim their first
    // window and hold it in delivery until Curator's consumer (on a JVM the
    // load may slow more) has taken an item, so both take part. Slowed
    // down after that, four items claimed at a time, so that the two go
    // on meeting.
    let recorders: Vec<Recorder> = (0..2)
        .map(|_| Recorder::new().slow(Duration::from_millis(10)).held())
        .collect();
    let clients: Vec<ZkClient> = (0..2).map(|_| client()).collect();
    let queues: Vec<_> = clients
        .iter()
        .zip(&recorders)
        .map(|(c, r)| consumer(c, &path, r).claim_window(4).build_queue().unwrap())
        .collect();
    eventually(WAIT, "both consumers register", || registered(&admin, &path) == 2);
    let expected = put_items(&admin, &path, ITEMS);
    eventually(WAIT, "ours claim their first items", || {
        queues.iter().any(|q| q.stats().claimed > 0)
    });
    java.wait_for_lines(1, WAIT).unwrap();
    recorders.iter().for_each(Recorder::release);
    eventually(Duration::from_secs(120), "the queue drains", || {
        admin.get_children(&path).unwrap().0.is_empty()
    });
    drop(queues);
    let mut all: Vec<String> = recorders.iter().flat_map(Recorder::items).collect();
    let ours = all.len();
    let curators = java.stop().unwrap();
    let theirs = curators.len();
    all.extend(curators);
    assert_eq!(all.len(), expected.len(), "deliveries (duplicates count twice)");
    assert_eq!(
        all.iter().collect::<HashSet<_>>(),
        expected.iter().collect::<HashSet<_>>()
    );
    assert!(
        ours > 0 && theirs > 0,
        "both sides consumed: ours {ours}, Curator's {theirs} of {ITEMS}"
    );
}

/// The registrations on the queue at `path`.
fn registrations(admin: &ZkClient, path: &str) -> Vec<String> {
    admin.get_children(&registry(path)).unwrap().0
}

#[test]
fn a_consumer_whose_session_expired_registers_again_and_both_claim_every_item_once() {
    let path = unique_path("stripes-expired");
    let proxy = FaultProxy::start(&shared_connect_string()).unwrap();
    let (admin, direct, steady) = (client(), client(), client());
    let expiring = proxied_client(&proxy);
    let recorders = [Recorder::new(), Recorder::new()];
    let queues = [
        consumer(&expiring, &path, &recorders[0]).build_queue().unwrap(),
        consumer(&steady, &path, &recorders[1]).build_queue().unwrap(),
    ];
    eventually(WAIT, "both consumers register", || registered(&admin, &path) == 2);
    let before = registrations(&admin, &path);
    expire_session(&proxy, &expiring, &direct);
    eventually(WAIT, "the expired consumer registers again", || {
        let now = registrations(&admin, &path);
        now.len() == 2 && now.iter().filter(|n| !before.contains(n)).count() == 1
    });
    let mut expected = put_items(&admin, &path, 400);
    eventually(WAIT, "every item is delivered", || {
        recorders.iter().map(|r| r.items().len()).sum::<usize>() >= expected.len()
    });
    let lost: u64 = queues.iter().map(|q| q.stats().claims_lost).sum();
    let mut all: Vec<String> = recorders.iter().flat_map(Recorder::items).collect();
    all.sort();
    expected.sort();
    assert_eq!(all, expected, "every item exactly once");
    assert!(recorders.iter().all(|r| !r.items().is_empty()), "both claimed");
    assert!(lost <= LOST_BOUND, "{lost} claims lost after the expiry");
}

#[test]
fn a_sharded_queue_s_consumers_leave_nothing_but_shards_under_its_path() {
    let path = unique_path("stripes-sharded");
    let leader = unique_path("stripes-sharded-leader");
    let (producing, consuming) = (client(), client());
    let recorder = Recorder::new();
    let consumers: Vec<_> = (0..2)
        .map(|_| {
            consumer(&consuming, &path, &recorder)
                .build_sharded_queue(&leader, ShardPolicy::new())
                .unwrap()
        })
        .collect();
    let producer = QueueBuilder::new(&producing, &path, StringSerializer)
        .put_in_background(false)
        .build_sharded_queue(&leader, ShardPolicy::new())
        .unwrap();
    for item in items("item-", 50) {
        producer.put(item).unwrap();
    }
    assert_eq!(recorder.wait_for(50, WAIT).len(), 50);
    let (children, _) = producing.get_children(&path).unwrap();
    assert!(!children.is_empty());
    assert!(
        children.iter().all(|c| zk_queue::inspect::is_shard_name(c)),
        "{children:?}"
    );
    drop(consumers);
}
