//! Coalesced puts (`QueueBuilder::coalesce_puts`): single puts made while
//! the put thread writes go into one node in Curator's multi-item frame;
//! each put keeps its own result, one thread's items their order, a
//! priority its own nodes; id queues are not coalesced; Curator's consumer
//! reads the nodes.

use std::thread;
use std::time::Duration;

use zk_queue::inspect::{decode_item, ItemName, Layout};
use zk_queue::{QueueBuilder, StringSerializer, ZkClient};

use super::WAIT;
use crate::support::client;
use crate::support::java::PeerCommand;
use crate::support::recorder::Recorder;
use crate::support::server::{shared_connect_string, unique_path};

const THREADS: usize = 8;

/// Each node under `path` with its records, as text.
fn nodes(client: &ZkClient, path: &str) -> Vec<(String, Vec<String>)> {
    let (names, _) = client.get_children(path).unwrap();
    names
        .into_iter()
        .map(|name| {
            let (data, _) = client.get_data(&format!("{path}/{name}")).unwrap();
            let records = decode_item(Layout::Curator, &data)
                .unwrap()
                .records
                .iter()
                .map(|r| String::from_utf8(r.clone()).unwrap())
                .collect();
            (name, records)
        })
        .collect()
}

/// A plain queue at a new path named after `name`, its puts coalesced
/// (lingering 5 ms), filled by `THREADS` threads with `each` items each and
/// flushed; its path and handle.
fn coalesced_fill(client: &ZkClient, name: &str, each: usize) -> (String, zk_queue::DistributedQueue<String>) {
    let path = unique_path(name);
    let queue = QueueBuilder::new(client, &path, StringSerializer)
        .put_in_background(true)
        .coalesce_linger(Duration::from_millis(5))
        .build_queue()
        .unwrap();
    put_from_threads(each, |item| queue.put(item).unwrap());
    assert!(queue.flush_timeout(WAIT));
    (path, queue)
}

/// `THREADS` threads each putting `each` items `<thread>-<i>` with `put`.
fn put_from_threads(each: usize, put: impl Fn(String) + Sync) {
    thread::scope(|s| {
        for t in 0..THREADS {
            let put = &put;
            s.spawn(move || {
                for i in 0..each {
                    put(format!("{t}-{i:04}"));
                }
            });
        }
    });
}

#[test]
fn single_puts_from_eight_threads_share_nodes_and_each_is_consumed_once_in_its_thread_s_order() {
    const EACH: usize = 200;
    let client = client();
    let (path, queue) = coalesced_fill(&client, "coalesced-threads", EACH);
    let stored = nodes(&client, &path);
    let records: usize = stored.iter().map(|(_, records)| records.len()).sum();
    assert_eq!(records, THREADS * EACH);
    assert!(
        stored.len() * 4 <= records,
        "{} nodes for {records} items: not coalesced",
        stored.len()
    );
    assert_eq!(queue.stats().puts, (THREADS * EACH) as u64, "each put counted");

    let recorder = Recorder::new();
    let consumer = QueueBuilder::new(&client, &path, StringSerializer)
        .consumer(recorder.clone())
        .build_queue()
        .unwrap();
    let delivered = recorder.wait_for(THREADS * EACH, WAIT);
    consumer.close();
    for t in 0..THREADS {
        let mine: Vec<&String> = delivered.iter().filter(|i| i.starts_with(&format!("{t}-"))).collect();
        assert_eq!(mine.len(), EACH, "thread {t}'s items, each once");
        assert!(mine.windows(2).all(|w| w[0] < w[1]), "thread {t}'s items in its order");
    }
}

#[test]
fn foreground_puts_wait_for_their_shared_node_and_an_idle_put_is_written_alone() {
    const EACH: usize = 50;
    let client = client();
    let path = unique_path("coalesced-foreground");
    let queue = QueueBuilder::new(&client, &path, StringSerializer)
        .put_in_background(false)
        .coalesce_puts(true)
        .build_queue()
        .unwrap();
    // Nothing else is being written: the put is written at once, alone.
    queue.put("alone".to_string()).unwrap();
    let stored = nodes(&client, &path);
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].1, vec!["alone".to_string()]);
    // Each put returns once its node is stored.
    put_from_threads(EACH, |item| queue.put(item).unwrap());
    let stored = nodes(&client, &path);
    let records: usize = stored.iter().map(|(_, records)| records.len()).sum();
    assert_eq!(records, THREADS * EACH + 1);
    assert!(
        stored.len() < records,
        "{} nodes for {records} items: not coalesced",
        stored.len()
    );
}

#[test]
fn a_priority_is_coalesced_only_with_its_own_and_id_queues_not_at_all() {
    let client = client();
    let path = unique_path("coalesced-priorities");
    let queue = QueueBuilder::new(&client, &path, StringSerializer)
        .put_in_background(true)
        .coalesce_linger(Duration::from_millis(5))
        .build_priority_queue(10)
        .unwrap();
    put_from_threads(40, |item| {
        let priority = if item.ends_with(['0', '2', '4', '6', '8']) {
            1
        } else {
            2
        };
        queue.put(format!("p{priority}:{item}"), priority).unwrap();
    });
    assert!(queue.flush_timeout(WAIT));
    let stored = nodes(&client, &path);
    assert!(stored.len() < THREADS * 40, "not coalesced");
    for (name, records) in &stored {
        let priority = ItemName::parse(name, Some(Layout::Curator)).unwrap().priority.unwrap();
        assert!(
            records.iter().all(|r| r.starts_with(&format!("p{priority}:"))),
            "{name} mixes priorities: {records:?}"
        );
    }

    let ids = unique_path("coalesced-ids");
    let queue = QueueBuilder::new(&client, &ids, StringSerializer)
        .put_in_background(true)
        .coalesce_linger(Duration::from_millis(5))
        .build_id_queue()
        .unwrap();
    put_from_threads(5, |item| queue.put(item.clone(), &item).unwrap());
    assert!(queue.flush_timeout(WAIT));
    let stored = nodes(&client, &ids);
    assert_eq!(stored.len(), THREADS * 5, "one node per id");
}

#[test]
fn curator_s_consumer_takes_every_item_of_coalesced_nodes_once() {
    const EACH: usize = 25;
    let client = client();
    let (path, _queue) = coalesced_fill(&client, "coalesced-curator", EACH);
    assert!(nodes(&client, &path).len() < THREADS * EACH, "not coalesced");
    let mut taken = PeerCommand::new("curator-consume", &shared_connect_string(), &path, THREADS * EACH)
        .run()
        .unwrap();
    taken.sort();
    let mut want: Vec<String> = (0..THREADS)
        .flat_map(|t| (0..EACH).map(move |i| format!("{t}-{i:04}")))
        .collect();
    want.sort();
    assert_eq!(taken, want);
}
