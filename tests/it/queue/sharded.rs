//! Sharded queues (`QueueBuilder::build_sharded_queue`): Curator's
//! `QueueSharder` layout, where an elected leader adds `queue-<UUID>` shards
//! as they fill; puts that keep to the threshold; consumers that cover every
//! shard; and one sharded queue shared with Curator's `QueueSharder` in Java,
//! both ways.

use std::time::Duration;

use zk_queue::client::CreateMode;
use zk_queue::{QueueBuilder, ShardPolicy, ShardedQueue, StringSerializer, ZkClient};

use super::sharded_bound::Sampler;
use super::{items, WAIT};
use crate::support::java::PeerCommand;
use crate::support::recorder::Recorder;
use crate::support::server::{shared_connect_string, unique_path};
use crate::support::{client, eventually};

/// Threshold `threshold`, at most 3 shards, and a check interval long
/// enough that no check happens during a test unless the test wants one.
fn policy(threshold: usize) -> ShardPolicy {
    ShardPolicy::new()
        .threshold(threshold)
        .check_interval(Duration::from_secs(60))
        .max_shards(3)
}

fn producer(client: &ZkClient, path: &str, leader: &str, policy: ShardPolicy) -> ShardedQueue<String> {
    QueueBuilder::new(client, path, StringSerializer)
        .put_in_background(false)
        .build_sharded_queue(leader, policy)
        .unwrap()
}

/// The item count of each shard of `path`, sorted, as the server lists them.
fn shard_sizes(client: &ZkClient, path: &str) -> Vec<usize> {
    let (shards, _) = client.get_children(path).unwrap();
    let mut sizes: Vec<usize> = shards
        .iter()
        .map(|shard| client.get_children(&format!("{path}/{shard}")).unwrap().0.len())
        .collect();
    sizes.sort_unstable();
    sizes
}

#[test]
fn a_leader_adds_a_shard_when_its_puts_find_every_shard_full_and_never_overfills_one() {
    let client = client();
    let path = unique_path("sharded-leader-puts");
    let leader = unique_path("sharded-leader-puts-leader");
    let queue = producer(&client, &path, &leader, policy(10));
    eventually(WAIT, "the only sharder leads", || queue.is_leader());
    // Four threads at once, so that puts race for a shard's last places.
    std::thread::scope(|s| {
        for t in 0..4 {
            let queue = &queue;
            s.spawn(move || {
                for item in items(&format!("item-{t}-"), 25)
                    .into_iter()
                    .take(if t == 0 { 7 } else { 6 })
                {
                    queue.put(item).unwrap();
                }
            });
        }
    });
    assert_eq!(queue.shard_count(), 3);
    // A count taken while a put is in flight may count it twice, so a shard
    // can be left an item short; never one past.
    let sizes = shard_sizes(&client, &path);
    assert!(
        sizes.iter().all(|&size| size <= 10),
        "a shard past the threshold: {sizes:?}"
    );
    assert_eq!(sizes.iter().sum::<usize>(), 25);
    for shard in queue.shard_paths() {
        let name = shard.rsplit('/').next().unwrap();
        assert!(
            name.starts_with("queue-") && name.len() == "queue-".len() + 36,
            "{name}"
        );
    }
    // One thread now, so that every count is exact: the last places fill,
    // and then, at the maximum, a put is refused.
    for item in items("more-", 30 - sizes.iter().sum::<usize>()) {
        queue.put(item).unwrap();
    }
    assert_eq!(shard_sizes(&client, &path), vec![10, 10, 10]);
    assert!(matches!(queue.put("more".to_string()), Err(zk_queue::Error::Full)));
    assert_eq!(queue.shard_count(), 3);
    assert_eq!(queue.len().unwrap(), 30);
}

#[test]
fn a_consumer_takes_every_item_once_from_every_shard_also_those_added_after_it_started() {
    let clients = [client(), client()];
    let path = unique_path("sharded-consumer");
    let leader_path = unique_path("sharded-consumer-leader");
    let producer = producer(&clients[0], &path, &leader_path, policy(10));
    eventually(WAIT, "the producer leads", || producer.is_leader());
    // Held until the puts are done, and lock-safe, so that the items stay
    // and fill the shards meanwhile: the producer adds two.
    let recorder = Recorder::new().held();
    let consumer = QueueBuilder::new(&clients[1], &path, StringSerializer)
        .lock_path(&unique_path("sharded-consumer-locks"))
        .consumer(recorder.clone())
        .build_sharded_queue(&leader_path, policy(10))
        .unwrap();
    assert_eq!(consumer.shard_count(), 1);
    let expected = items("item-", 30);
    for item in &expected {
        producer.put(item.clone()).unwrap();
    }
    assert_eq!(producer.shard_count(), 3);
    recorder.release();
    let mut got = recorder.wait_for(expected.len(), WAIT);
    got.sort();
    let mut want = expected;
    want.sort();
    assert_eq!(got, want, "every item exactly once");
    assert_eq!(consumer.shard_count(), 3, "it found the shards added after it started");
    consumer.close();
}

#[test]
fn a_sharded_queue_refuses_a_leader_path_inside_its_path_and_a_policy_without_room() {
    let client = client();
    let path = unique_path("sharded-invalid");
    let build = |leader: &str, policy: ShardPolicy| {
        QueueBuilder::new(&client, &path, StringSerializer).build_sharded_queue(leader, policy)
    };
    assert!(matches!(
        build(&path, ShardPolicy::new()),
        Err(zk_queue::Error::InvalidArgument(_))
    ));
    assert!(matches!(
        build(&format!("{path}/leader"), ShardPolicy::new()),
        Err(zk_queue::Error::InvalidArgument(_))
    ));
    assert!(matches!(
        build(&unique_path("sharded-invalid-leader"), ShardPolicy::new().threshold(0)),
        Err(zk_queue::Error::InvalidArgument(_))
    ));
    assert!(
        client.exists(&path).unwrap().is_none(),
        "nothing is created before the settings are checked"
    );
}

/// A Curator `QueueSharder` peer on `path` with threshold 5, checks every
/// 50 ms and at most 10 shards.
fn curator_sharder(mode: &str, path: &str, leader_path: &str, count: usize) -> PeerCommand {
    PeerCommand::new(mode, &shared_connect_string(), path, count)
        .property("peer.leaderPath", leader_path)
        .property("peer.threshold", 5)
        .property("peer.checkMs", 50)
        .property("peer.maxShards", 10)
}

#[test]
fn items_a_curator_sharder_puts_are_each_consumed_once_from_every_shard_by_ours() {
    let path = unique_path("sharded-from-curator");
    let leader_path = unique_path("sharded-from-curator-leader");
    let client = client();
    // Held, claiming one item at a time: what the Java sharder puts stays
    // in its shard until ours has added more, however fast or slow the
    // puts and the deliveries run on a loaded machine.
    let recorder = Recorder::new().held();
    // Ours leads (its latch comes first) and adds shards at its checks.
    let ours = QueueBuilder::new(&client, &path, StringSerializer)
        .consumer(recorder.clone())
        .claim_window(1)
        .build_sharded_queue(
            &leader_path,
            ShardPolicy::new()
                .threshold(5)
                .check_interval(Duration::from_millis(100))
                .max_shards(10),
        )
        .unwrap();
    eventually(WAIT, "ours leads", || ours.is_leader());
    curator_sharder("curator-sharder-put", &path, &leader_path, 20)
        .prefix("java-a-")
        .run()
        .unwrap();
    eventually(WAIT, "ours adds a shard for the items waiting in the first", || {
        ours.shard_count() >= 2
    });
    // A Curator sharder started now finds the shards ours added.
    let output = curator_sharder("curator-sharder-put", &path, &leader_path, 20)
        .prefix("java-b-")
        .run_output()
        .unwrap();
    recorder.release();
    let mut got = recorder.wait_for(40, WAIT);
    got.sort();
    let mut want = items("java-a-", 20);
    want.extend(items("java-b-", 20));
    want.sort();
    assert_eq!(got, want, "every item exactly once");
    let seen: Vec<usize> = output
        .stderr_tagged("shards")
        .iter()
        .map(|n| n.parse().unwrap())
        .collect();
    assert!(
        matches!(seen[..], [n] if n >= 2),
        "the Curator sharder put into {seen:?} shards, not those ours added\n{}",
        output.stderr
    );
    ours.close();
}

#[test]
fn items_ours_puts_are_each_consumed_once_by_a_curator_sharder_from_every_shard() {
    let path = unique_path("sharded-to-curator");
    let leader_path = unique_path("sharded-to-curator-leader");
    let gate = unique_path("sharded-to-curator-gate");
    // The Java sharder leads (its latch comes first) and adds shards at
    // its checks; ours follows, finds them at once, and spreads its puts.
    // Its consumer takes one item a shard, then waits at a gate until our
    // puts are done: the shards fill however fast or slow the puts and the
    // consumer run on a loaded machine.
    let java = curator_sharder("curator-sharder-consume", &path, &leader_path, 40)
        .property("peer.gatePath", &gate)
        .spawn()
        .unwrap();
    java.wait_ready(WAIT).unwrap();
    let client = client();
    let ours = producer(
        &client,
        &path,
        &leader_path,
        ShardPolicy::new()
            .threshold(5)
            .check_interval(Duration::from_millis(100))
            .max_shards(10),
    );
    assert!(!ours.is_leader());
    let sampler = Sampler::start(&path);
    // As fast as they go: when every shard is full, they wait for the Java
    // leader's next check (every 50 ms) to add one.
    for item in items("rust-", 40) {
        ours.put_timeout(item, WAIT).unwrap();
    }
    let shards = ours.shard_count();
    let (most, _) = sampler.stop();
    client.create(&gate, b"", CreateMode::Persistent).unwrap();
    // Our puts wait for the Java leader's shards rather than overfill one.
    assert!(most <= 5, "a shard of {most} nodes, past the threshold of 5");
    let output = java.wait_output().unwrap();
    let mut got = output.lines;
    got.sort();
    let mut want = items("rust-", 40);
    want.sort();
    assert_eq!(got, want, "every item exactly once");
    assert!(shards >= 2, "{shards} shards: nothing was sharded");
    ours.close();
}

#[test]
fn a_pull_receiver_takes_every_item_once_from_every_shard_also_those_added_after_it_started() {
    let clients = [client(), client()];
    let path = unique_path("sharded-pull");
    let leader_path = unique_path("sharded-pull-leader");
    let producer = producer(&clients[0], &path, &leader_path, policy(10));
    eventually(WAIT, "the producer leads", || producer.is_leader());
    // Lock-safe, so that items claimed ahead of the takers stay counted in
    // their shards; and out of the election, as a consumer may be.
    let (builder, receiver) = QueueBuilder::new(&clients[1], &path, StringSerializer)
        .lock_path(&unique_path("sharded-pull-locks"))
        .pull_consumer();
    let consumer = builder
        .build_sharded_queue(&leader_path, policy(10).run_for_leader(false))
        .unwrap();
    assert_eq!(consumer.shard_count(), 1);
    let expected = items("item-", 30);
    for item in &expected {
        producer.put_timeout(item.clone(), WAIT).unwrap();
    }
    assert_eq!(producer.shard_count(), 3);
    let mut got: Vec<String> = (0..expected.len())
        .map(|_| receiver.take_timeout(WAIT).unwrap().expect("an item").ack())
        .collect();
    got.sort();
    let mut want = expected;
    want.sort();
    assert_eq!(got, want, "every item exactly once");
    assert_eq!(consumer.shard_count(), 3, "it found the shards added after it started");
    // Each shard's dispatcher hears its acks in its own time.
    eventually(WAIT, "30 consumed in the shards' stats", || {
        consumer.stats().consumed == 30
    });
    assert!(matches!(receiver.try_take(), Ok(None)), "nothing more");
    consumer.close();
    assert!(matches!(receiver.take(), Err(zk_queue::Error::QueueClosed)));
}
