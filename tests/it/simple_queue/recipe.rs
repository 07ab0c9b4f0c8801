//! `SimpleQueue` against a real server: the twelve scenarios of ZooKeeper's
//! `DistributedQueueTest`, Curator's `testPollWithTimeout` and
//! `testHangFromContainerLoss`, and the classic recipe's bugs we do not have.

use std::thread;
use std::time::{Duration, Instant};

use zk_queue::testing::TestingServer;
use zk_queue::{client::CreateMode, Error, SimpleQueue, ZkClient};

use crate::support::{client, client_of, eventually, server::unique_path, wait_for_watches, watch_count, CloseOnPanic};

fn item(i: usize) -> Vec<u8> {
    format!("item-{i}").into_bytes()
}

/// Offers `offers` items through one client, removes `removes` through
/// another, and returns the two queues.
fn offer_then_remove(name: &str, offers: usize, removes: usize) -> (SimpleQueue, SimpleQueue, Option<Vec<u8>>) {
    let path = unique_path(name);
    let producer = SimpleQueue::new(&client(), &path).unwrap();
    let consumer = SimpleQueue::new(&client(), &path).unwrap();
    for i in 0..offers {
        producer.offer(&item(i)).unwrap();
    }
    let mut last = None;
    for _ in 0..removes {
        last = Some(consumer.remove().unwrap());
    }
    (producer, consumer, last)
}

#[test]
fn offer_then_remove_on_the_same_handle_returns_the_item() {
    let queue = SimpleQueue::new(&client(), &unique_path("offer1")).unwrap();
    queue.offer(b"data").unwrap();
    assert_eq!(queue.remove().unwrap(), b"data");
}

#[test]
fn offer_and_remove_through_different_clients() {
    let (_, _, last) = offer_then_remove("offer2", 1, 1);
    assert_eq!(last.unwrap(), item(0));
}

#[test]
fn offer_then_take_returns_the_item() {
    let queue = SimpleQueue::new(&client(), &unique_path("take1")).unwrap();
    queue.offer(b"data").unwrap();
    assert_eq!(queue.take().unwrap(), b"data");
}

#[test]
fn remove_on_a_queue_never_created_is_no_such_element() {
    let queue = SimpleQueue::new(&client(), &unique_path("remove1")).unwrap();
    assert!(matches!(queue.remove(), Err(Error::NoSuchElement)));
    assert!(matches!(queue.element(), Err(Error::NoSuchElement)));
    assert_eq!(queue.poll().unwrap(), None);
    assert_eq!(queue.peek().unwrap(), None);
}

#[test]
fn remove_twice_after_ten_offers_returns_the_second_item() {
    let (_, _, last) = offer_then_remove("remove2", 10, 2);
    assert_eq!(last.unwrap(), item(1));
}

#[test]
fn thousand_offers_then_thousand_removes_end_with_the_last_item() {
    let (_, consumer, last) = offer_then_remove("remove3", 1000, 1000);
    assert_eq!(last.unwrap(), item(999));
    assert!(matches!(consumer.remove(), Err(Error::NoSuchElement)));
}

#[test]
fn element_returns_the_head_after_removes() {
    for (offers, removes) in [(1, 0), (10, 2), (1000, 500), (1000, 999)] {
        let (producer, consumer, _) = offer_then_remove(&format!("element-{offers}-{removes}"), offers, removes);
        assert_eq!(consumer.element().unwrap(), item(removes), "({offers}, {removes})");
        // A handle that never removed sees the same head.
        assert_eq!(
            producer.element().unwrap(),
            item(removes),
            "({offers}, {removes}) fresh handle"
        );
        assert_eq!(producer.peek().unwrap(), Some(item(removes)));
    }
}

fn take_waits_for_an_offer(rounds: usize) {
    // A server of its own: the take's watch is the only one on it.
    let server = TestingServer::start().unwrap();
    let path = unique_path("take-wait");
    let consumer_client = client_of(&server.connect_string());
    let consumer = SimpleQueue::new(&consumer_client, &path).unwrap();
    let producer = SimpleQueue::new(&client_of(&server.connect_string()), &path).unwrap();
    for round in 0..rounds {
        let (taken, returned_at, offered_at) = thread::scope(|s| {
            let _guard = CloseOnPanic(&consumer_client);
            let taker = s.spawn(|| (consumer.take(), Instant::now()));
            // The take found the queue empty and waits on its watch.
            wait_for_watches(&server, 1);
            assert!(!taker.is_finished(), "take returned on an empty queue");
            assert_eq!(producer.len().unwrap(), 0, "the queue is empty");
            let offered_at = Instant::now();
            producer.offer(&item(round)).unwrap();
            let (taken, returned_at) = taker.join().unwrap();
            (taken, returned_at, offered_at)
        });
        assert_eq!(taken.unwrap(), item(round));
        assert!(returned_at >= offered_at, "take returned before the offer");
        assert_eq!(producer.len().unwrap(), 0, "the take removed the item");
    }
}

#[test]
fn take_blocks_until_an_item_is_offered() {
    take_waits_for_an_offer(1);
}

#[test]
fn take_blocks_again_after_the_first_wake() {
    take_waits_for_an_offer(2);
}

#[test]
fn poll_timeout_on_an_empty_queue_returns_none_after_the_timeout() {
    let queue = SimpleQueue::new(&client(), &unique_path("poll-timeout")).unwrap();
    let started = Instant::now();
    assert_eq!(queue.take_timeout(Duration::from_secs(3)).unwrap(), None);
    let waited = started.elapsed();
    assert!(waited >= Duration::from_secs(3), "{waited:?}");
    assert!(waited < Duration::from_secs(6), "{waited:?}");
}

#[test]
fn take_timeout_returns_an_item_offered_during_the_wait() {
    // A server of its own: the take's watch is the only one on it.
    let server = TestingServer::start().unwrap();
    let path = unique_path("take-timeout");
    let queue = SimpleQueue::new(&client_of(&server.connect_string()), &path).unwrap();
    let producer = SimpleQueue::new(&client_of(&server.connect_string()), &path).unwrap();
    let got = thread::scope(|s| {
        let t = s.spawn(|| queue.take_timeout(Duration::from_secs(30)));
        // The take found the queue empty and waits on its watch.
        wait_for_watches(&server, 1);
        producer.offer(b"late").unwrap();
        t.join().unwrap()
    });
    assert_eq!(got.unwrap(), Some(b"late".to_vec()));
}

#[test]
fn take_survives_container_reaping() {
    // Curator's testHangFromContainerLoss (CURATOR-308): the server reaps the
    // empty container queue node while a consumer waits.
    let server = TestingServer::builder()
        .container_check_interval(Duration::from_millis(100))
        .start()
        .unwrap();
    let path = unique_path("container");
    let producer_client = client_of(&server.connect_string());
    let consumer_client = client_of(&server.connect_string());
    let producer = SimpleQueue::builder(&producer_client, &path)
        .container(true)
        .build()
        .unwrap();
    let consumer = SimpleQueue::builder(&consumer_client, &path)
        .container(true)
        .build()
        .unwrap();
    let created = |what: &str| {
        producer_client
            .exists(&path)
            .unwrap()
            .unwrap_or_else(|| panic!("no queue node {what}"))
            .czxid
    };
    let taken = thread::scope(|s| {
        let taker = s.spawn(|| {
            (0..10)
                .map(|_| {
                    consumer
                        .take_timeout(Duration::from_secs(30))
                        .unwrap()
                        .expect("take timed out")
                })
                .collect::<Vec<_>>()
        });
        for i in 0..10 {
            // The take waits on its watch of the queue node as it is now.
            wait_for_watches(&server, 1);
            let node = created("to offer to");
            producer.offer(&item(i)).unwrap();
            // Taken, the container is empty and the server reaps it: the node
            // is gone, or already created again (a new creation zxid).
            eventually(Duration::from_secs(30), "the empty container reaped", || {
                producer_client
                    .exists(&path)
                    .unwrap()
                    .is_none_or(|stat| stat.czxid != node)
            });
        }
        taker.join().unwrap()
    });
    assert_eq!(taken, (0..10).map(item).collect::<Vec<_>>());
}

#[test]
fn concurrent_first_offers_and_takes_on_a_missing_queue_all_succeed() {
    // The classic recipe throws NodeExistsException from 7 of 8 such calls.
    let path = unique_path("first-calls") + "/deeper/queue";
    let clients: Vec<ZkClient> = (0..4).map(|_| client()).collect();
    thread::scope(|s| {
        let takers: Vec<_> = clients
            .iter()
            .map(|c| {
                let path = path.clone();
                s.spawn(move || {
                    SimpleQueue::new(c, &path)
                        .unwrap()
                        .take_timeout(Duration::from_secs(20))
                })
            })
            .collect();
        let offerers: Vec<_> = clients
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let path = path.clone();
                s.spawn(move || SimpleQueue::new(c, &path).unwrap().offer(&item(i)))
            })
            .collect();
        for o in offerers {
            o.join().unwrap().unwrap();
        }
        let mut taken: Vec<Vec<u8>> = takers
            .into_iter()
            .map(|t| t.join().unwrap().unwrap().unwrap())
            .collect();
        taken.sort();
        assert_eq!(taken, (0..4).map(item).collect::<Vec<_>>());
    });
}

#[test]
fn poll_that_loses_a_race_takes_the_next_item() {
    let path = unique_path("poll-race");
    let fast = SimpleQueue::new(&client(), &path).unwrap();
    let slow = SimpleQueue::new(&client(), &path).unwrap();
    for i in 0..3 {
        fast.offer(&item(i)).unwrap();
    }
    // `slow` lists all three, then `fast` takes the head behind its back.
    assert_eq!(slow.peek().unwrap(), Some(item(0)));
    assert_eq!(fast.poll().unwrap(), Some(item(0)));
    assert_eq!(
        slow.poll().unwrap(),
        Some(item(1)),
        "a lost race must move on, not return None"
    );
    assert_eq!(slow.poll().unwrap(), Some(item(2)));
    assert_eq!(slow.poll().unwrap(), None);
}

#[test]
fn foreign_children_are_skipped_and_left_in_place() {
    let client = client();
    let path = unique_path("foreign");
    let queue = SimpleQueue::new(&client, &path).unwrap();
    queue.offer(b"a").unwrap();
    for name in ["lock", "queue-0000000001", "qn-notanumber"] {
        client
            .create(&format!("{path}/{name}"), b"foreign", CreateMode::Persistent)
            .unwrap();
    }
    queue.offer(b"b").unwrap();
    assert_eq!(queue.len().unwrap(), 2);
    assert_eq!(queue.poll().unwrap(), Some(b"a".to_vec()));
    assert_eq!(queue.poll().unwrap(), Some(b"b".to_vec()));
    assert_eq!(queue.poll().unwrap(), None);
    let (mut left, _) = client.get_children(&path).unwrap();
    left.sort();
    assert_eq!(left, ["lock", "qn-notanumber", "queue-0000000001"]);
}

#[test]
fn items_come_out_in_offer_order_with_len_tracking() {
    let queue = SimpleQueue::new(&client(), &unique_path("order")).unwrap();
    assert_eq!(queue.len().unwrap(), 0);
    assert!(queue.is_empty().unwrap());
    let nodes: Vec<String> = (0..20).map(|i| queue.offer(&item(i)).unwrap()).collect();
    assert!(nodes.windows(2).all(|w| w[0] < w[1]), "sequential names increase");
    assert_eq!(queue.len().unwrap(), 20);
    for i in 0..20 {
        assert_eq!(queue.take().unwrap(), item(i));
    }
    assert_eq!(queue.len().unwrap(), 0);
}

#[test]
fn empty_items_round_trip() {
    let queue = SimpleQueue::new(&client(), &unique_path("empty-item")).unwrap();
    queue.offer(b"").unwrap();
    assert_eq!(queue.poll().unwrap(), Some(Vec::new()));
}

#[test]
fn draining_lists_the_children_once_not_once_per_item() {
    let path = unique_path("linear");
    let producer = SimpleQueue::new(&client(), &path).unwrap();
    for i in 0..300 {
        producer.offer(&item(i)).unwrap();
    }
    let consumer_client = client();
    let consumer = SimpleQueue::new(&consumer_client, &path).unwrap();
    let before = consumer_client.stats();
    for i in 0..300 {
        assert_eq!(consumer.poll().unwrap(), Some(item(i)));
    }
    assert_eq!(consumer.poll().unwrap(), None);
    let after = consumer_client.stats();
    // One listing to fill the local list, one to find the queue empty.
    assert_eq!(after.get_children - before.get_children, 2);
    assert_eq!(after.get_data - before.get_data, 300);
    assert_eq!(after.delete - before.delete, 300);
}

#[test]
fn timed_out_waits_leave_no_watch_behind() {
    // A server of its own: only these waits watch on it.
    let server = TestingServer::start().unwrap();
    let client = client_of(&server.connect_string());
    // Five waits on each of four queues, all in one session.
    let queues: Vec<SimpleQueue> = (0..4)
        .map(|_| SimpleQueue::new(&client, &unique_path("idle-watches")).unwrap())
        .collect();
    for _ in 0..5 {
        for queue in &queues {
            assert_eq!(queue.take_timeout(Duration::from_millis(20)).unwrap(), None);
        }
    }
    // `mntr` counts child watches (`wchs` does not). The server keeps one
    // watch per path and session, and the client asks it to remove a path's
    // watch only once the last of its watchers on that path is dropped: a
    // server holding none means no timed-out wait left a watcher behind in
    // the client either (kazoo's LockingQueue and the classic recipe leave
    // one per call). The removal is sent as the wait returns, so it is
    // waited for.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut left = watch_count(&server);
    while left > 0 {
        assert!(
            Instant::now() < deadline,
            "{left} watches left after 20 timed waits on 4 queues"
        );
        thread::sleep(Duration::from_millis(20));
        left = watch_count(&server);
    }
}
