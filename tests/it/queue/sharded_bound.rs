//! The bound of a sharded queue's shards: no put, by a leader or a
//! follower, foreground, background or coalesced, takes a shard past the
//! threshold (with several producers at once, past the documented
//! `threshold + (n - 1) * puts_per_count`); a follower asks the leader for
//! a shard and waits for it; a full queue refuses with `Full`, or waits.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use zk_queue::testing::FaultProxy;
use zk_queue::{Error, PutError, QueueBuilder, ShardPolicy, ShardedQueue, StringSerializer, WhenFull, ZkClient};

use super::{items, WAIT};

/// How long a follower's put waits for the leader's answer (a new shard):
/// a third of the leader's check interval, so that only an answer to its
/// request, not a check of the leader's own, is in time.
const ANSWER: Duration = Duration::from_secs(20);
use crate::support::server::{shared_connect_string, unique_path};
use crate::support::{client, client_of, eventually, logs, within, Bound};

/// The client's grace, past a deadline, for an answer in flight.
const DEADLINE_GRACE: Duration = Duration::from_secs(1);

/// Threshold `threshold`, at most `max` shards, and a check interval long
/// enough that the leader adds shards only when puts ask for them.
/// (Follower puts wait at most [`ANSWER`] for a shard, well under it.)
fn policy(threshold: usize, max: usize) -> ShardPolicy {
    ShardPolicy::new()
        .threshold(threshold)
        .max_shards(max)
        .check_interval(Duration::from_secs(60))
}

/// A sharded queue on `path` whose puts wait for their results (unless
/// `background`).
fn sharded(client: &ZkClient, path: &str, leader: &str, policy: ShardPolicy, background: bool) -> ShardedQueue<String> {
    QueueBuilder::new(client, path, StringSerializer)
        .put_in_background(background)
        .build_sharded_queue(leader, policy)
        .unwrap()
}

/// Each shard's item nodes as the server counts them, by shard name.
pub(super) fn shard_nodes(client: &ZkClient, path: &str) -> HashMap<String, usize> {
    let (names, _) = client.get_children(path).unwrap();
    let paths: Vec<String> = names.iter().map(|name| format!("{path}/{name}")).collect();
    let stats = client.exists_many(&paths).unwrap();
    names
        .into_iter()
        .zip(stats)
        .map(|(name, stat)| {
            let nodes = stat
                .unwrap()
                .map_or(0, |stat| usize::try_from(stat.num_children).unwrap());
            (name, nodes)
        })
        .collect()
}

/// Counts every shard of a queue over and over from its own session, and
/// keeps the most nodes it ever saw in one shard.
pub(super) struct Sampler {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<(usize, usize)>,
}

impl Sampler {
    pub(super) fn start(path: &str) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        let path = path.to_owned();
        let thread = std::thread::spawn(move || {
            let client = client();
            let (mut most, mut rounds) = (0, 0);
            while !stopped.load(Ordering::SeqCst) {
                most = shard_nodes(&client, &path).into_values().fold(most, usize::max);
                rounds += 1;
                // Paced, so that it leaves the puts the machine's cores.
                std::thread::sleep(Duration::from_millis(5));
            }
            (most, rounds)
        });
        Sampler { stop, thread }
    }

    /// The most nodes seen in one shard, and the rounds counted.
    pub(super) fn stop(self) -> (usize, usize) {
        self.stop.store(true, Ordering::SeqCst);
        self.thread.join().unwrap()
    }
}

#[test]
fn a_non_leading_producer_of_60000_background_items_never_takes_a_shard_past_a_threshold_of_2000() {
    let clients = [client(), client()];
    let path = unique_path("sharded-bound-follower");
    let leader = unique_path("sharded-bound-follower-leader");
    // As a new user would: the worker starts first and wins the leadership.
    let worker = sharded(&clients[0], &path, &leader, policy(2_000, 40), false);
    eventually(WAIT, "the worker leads", || worker.is_leader());
    let producer = sharded(&clients[1], &path, &leader, policy(2_000, 40), true);
    let sampler = Sampler::start(&path);
    let started = Instant::now();
    for item in items("item-", 60_000) {
        producer.put_timeout(item, ANSWER).unwrap();
    }
    assert!(producer.flush_timeout(WAIT), "background puts still pending");
    let took = started.elapsed();
    let (most_sampled, rounds) = sampler.stop();
    assert!(!producer.is_leader(), "the producer never led");
    let nodes = shard_nodes(&clients[0], &path);
    let most = nodes.values().copied().max().unwrap();
    eprintln!(
        "60,000 items in {took:?}: {} shards, the fullest {most} nodes ({most_sampled} at most in {rounds} samples)",
        nodes.len()
    );
    assert!(
        most <= 2_000 && most_sampled <= 2_000,
        "a shard past the threshold: {nodes:?}"
    );
    assert_eq!(nodes.values().sum::<usize>(), 60_000, "every item its own node");
    // The puts fill shards to the threshold itself (the bound is reached,
    // not kept far from), and the leader added what they asked for.
    assert_eq!(most, 2_000, "{nodes:?}");
    assert!((30..=40).contains(&nodes.len()), "{} shards", nodes.len());
    assert_eq!(producer.stats().puts, 60_000);
}

#[test]
fn leading_and_non_leading_producers_putting_at_once_keep_every_shard_within_the_stated_bound() {
    let clients = [client(), client(), client()];
    let path = unique_path("sharded-bound-mixed");
    let leader = unique_path("sharded-bound-mixed-leader");
    let per_count = 8;
    let policy = policy(300, 40).puts_per_count(per_count);
    // A leader with foreground puts, a follower with background puts, and
    // a follower with coalesced puts, all at once.
    let lead = sharded(&clients[0], &path, &leader, policy, false);
    eventually(WAIT, "the first producer leads", || lead.is_leader());
    let background = sharded(&clients[1], &path, &leader, policy, true);
    let coalesced = QueueBuilder::new(&clients[2], &path, StringSerializer)
        .put_in_background(true)
        .coalesce_puts(true)
        .build_sharded_queue(&leader, policy)
        .unwrap();
    let sampler = Sampler::start(&path);
    std::thread::scope(|s| {
        s.spawn(|| {
            for item in items("lead-", 1_500) {
                lead.put_timeout(item, WAIT).unwrap();
            }
        });
        s.spawn(|| {
            for item in items("background-", 3_000) {
                background.put_timeout(item, ANSWER).unwrap();
            }
        });
        s.spawn(|| {
            for item in items("coalesced-", 3_000) {
                coalesced.put_timeout(item, ANSWER).unwrap();
            }
        });
    });
    assert!(background.flush_timeout(WAIT) && coalesced.flush_timeout(WAIT));
    let (most_sampled, _) = sampler.stop();
    let nodes = shard_nodes(&clients[0], &path);
    let most = nodes.values().copied().max().unwrap();
    // Three handles putting at once: threshold + 2 * puts_per_count.
    let bound = 300 + 2 * per_count;
    eprintln!("three producers at once: the fullest shard {most} nodes ({most_sampled} sampled), bound {bound}");
    assert!(
        most <= bound && most_sampled <= bound,
        "a shard past {bound} nodes: {most_sampled} sampled, {nodes:?}"
    );
    assert!(most >= 300 - per_count, "the shards were not filled: {nodes:?}");
    let stored = lead.stats().puts + background.stats().puts + coalesced.stats().puts;
    assert_eq!(stored, 1_500 + 3_000 + 3_000, "every item stored");
}

#[test]
fn a_follower_asks_the_leader_for_a_shard_instead_of_overfilling_one() {
    let clients = [client(), client()];
    let path = unique_path("sharded-bound-asks");
    let leader = unique_path("sharded-bound-asks-leader");
    let first = sharded(&clients[0], &path, &leader, policy(10, 3), false);
    eventually(WAIT, "the first sharder leads", || first.is_leader());
    let second = sharded(&clients[1], &path, &leader, policy(10, 3), false);
    for item in items("item-", 15) {
        second.put_timeout(item, ANSWER).unwrap();
    }
    assert!(!second.is_leader());
    let mut sizes: Vec<usize> = shard_nodes(&clients[0], &path).into_values().collect();
    sizes.sort_unstable();
    assert_eq!(sizes, vec![5, 10], "the leader added the shard the follower asked for");
    let (data, _) = clients[0].get_data(&leader).unwrap();
    assert!(!data.is_empty(), "the request is the leader path's data");
    let (children, _) = clients[0].get_children(&leader).unwrap();
    assert_eq!(children.len(), 2, "one latch node each, nothing else: {children:?}");

    // Leadership moves to the second sharder; when its puts find every
    // shard full it adds one itself.
    first.close();
    assert!(
        second.await_leadership_timeout(WAIT).unwrap(),
        "the second sharder leads"
    );
    for item in items("after-", 6) {
        second.put_timeout(item, ANSWER).unwrap();
    }
    let mut sizes: Vec<usize> = shard_nodes(&clients[0], &path).into_values().collect();
    sizes.sort_unstable();
    assert_eq!(sizes, vec![1, 10, 10]);
}

#[test]
fn a_full_sharded_queue_refuses_puts_with_full_from_a_leader_and_a_follower() {
    logs::start();
    let clients = [client(), client()];
    let path = unique_path("sharded-bound-full");
    let leader = unique_path("sharded-bound-full-leader");
    let lead = sharded(&clients[0], &path, &leader, policy(5, 2), false);
    eventually(WAIT, "the first sharder leads", || lead.is_leader());
    let follower = sharded(&clients[1], &path, &leader, policy(5, 2), true);
    for item in items("item-", 10) {
        if let Err(e) = follower.put_timeout(item, ANSWER) {
            panic!("{e:?}: {:#?}", logs::lines_with(&path));
        }
    }
    assert!(follower.flush_timeout(WAIT));
    assert_eq!(follower.stats().puts, 10);
    for queue in [&lead, &follower] {
        let put = queue.put("more".to_string());
        assert!(
            matches!(put, Err(Error::Full)),
            "{put:?} {:?}",
            shard_nodes(&clients[0], &path)
        );
        match queue.put_timeout("timed".to_string(), Duration::from_secs(1)) {
            Err(PutError::Full(item)) => assert_eq!(item, "timed"),
            other => panic!("not refused: {other:?}"),
        }
        match queue.try_put("tried".to_string()) {
            Err(PutError::Full(item)) => assert_eq!(item, "tried"),
            other => panic!("not refused: {other:?}"),
        }
        match queue.put_multi_timeout(vec!["a".to_string(), "b".to_string()], Duration::ZERO) {
            Err(PutError::Full(items)) => assert_eq!(items.len(), 2),
            other => panic!("not refused: {other:?}"),
        }
    }
    let nodes = shard_nodes(&clients[0], &path);
    assert_eq!(nodes.len(), 2);
    assert!(nodes.values().all(|&n| n == 5), "{nodes:?}");
}

#[test]
fn a_put_at_the_maximum_waits_for_room_when_the_policy_says_wait() {
    let client = client();
    let path = unique_path("sharded-bound-wait");
    let leader = unique_path("sharded-bound-wait-leader");
    let queue = sharded(&client, &path, &leader, policy(3, 1).when_full(WhenFull::Wait), false);
    for item in items("item-", 3) {
        queue.put_timeout(item, WAIT).unwrap();
    }
    let started = Instant::now();
    assert!(queue
        .put_timeout("late".to_string(), Duration::from_millis(300))
        .unwrap_err()
        .is_full());
    assert!(started.elapsed() >= Duration::from_millis(300), "it waited its timeout");
    assert!(
        queue.try_put("now".to_string()).unwrap_err().is_full(),
        "try_put never waits"
    );
    std::thread::scope(|s| {
        let waiting = s.spawn(|| queue.put_timeout("waits".to_string(), WAIT));
        // A consumer makes room: one item taken.
        let shard = &queue.shard_paths()[0];
        let (mut names, _) = client.get_children(shard).unwrap();
        names.sort();
        client.delete(&format!("{shard}/{}", names[0]), None).unwrap();
        waiting.join().unwrap().unwrap();
    });
    assert_eq!(queue.len().unwrap(), 3);
}

#[test]
fn a_handle_that_does_not_run_for_leader_never_leads_and_a_producer_started_after_it_does() {
    let clients = [client(), client()];
    let path = unique_path("sharded-bound-no-run");
    let leader = unique_path("sharded-bound-no-run-leader");
    let consumer = sharded(&clients[0], &path, &leader, policy(5, 3).run_for_leader(false), false);
    assert!(matches!(
        consumer.await_leadership_timeout(Duration::ZERO),
        Err(Error::InvalidArgument(_))
    ));
    let producer = sharded(&clients[1], &path, &leader, policy(5, 3), false);
    assert!(producer.await_leadership_timeout(WAIT).unwrap(), "the producer leads");
    assert!(!consumer.is_leader());
    let (children, _) = clients[0].get_children(&leader).unwrap();
    assert_eq!(children.len(), 1, "only the producer is in the election: {children:?}");
    // The non-candidate's puts ask the producer for shards.
    for item in items("item-", 12) {
        consumer.put_timeout(item, ANSWER).unwrap();
    }
    let mut sizes: Vec<usize> = shard_nodes(&clients[0], &path).into_values().collect();
    sizes.sort_unstable();
    assert_eq!(sizes, vec![2, 5, 5]);
}

#[test]
fn a_put_that_waits_for_room_returns_by_its_deadline_when_the_server_stops_answering() {
    let proxy = FaultProxy::start(&shared_connect_string()).unwrap();
    let client = client_of(&proxy.connect_string());
    let path = unique_path("sharded-bound-stalled");
    let leader = unique_path("sharded-bound-stalled-leader");
    let queue = sharded(&client, &path, &leader, policy(3, 1).when_full(WhenFull::Wait), false);
    for item in items("item-", 3) {
        queue.put_timeout(item, WAIT).unwrap();
    }
    // Full, and waiting for room, when the server stops answering: the
    // counts and the request give up at the put's deadline (plus the
    // client's documented grace for an answer in flight).
    proxy.blackhole();
    let timeout = Duration::from_secs(1);
    let result = within(
        "a put waiting for room, the server stalled",
        Bound::past(timeout, DEADLINE_GRACE),
        || queue.put_timeout("late".to_string(), timeout),
    );
    assert!(result.is_err(), "stored while the server answered nothing");
    proxy.heal();
}
