//! The ensemble harness: a real 3-node ZooKeeper ensemble survives losing its
//! leader, and the client keeps working.

use std::time::{Duration, Instant};

use zk_queue::testing::TestingCluster;
use zk_queue::{client::CreateMode, SimpleQueue, ZkClient};

#[test]
fn an_ensemble_keeps_serving_when_its_leader_dies_and_takes_it_back() {
    let cluster = TestingCluster::start(3).unwrap();
    assert_eq!(cluster.size(), 3);
    let client = ZkClient::builder(&cluster.connect_string())
        .session_timeout(Duration::from_secs(6))
        .request_timeout(Duration::from_secs(5))
        .connect()
        .unwrap();
    let queue = SimpleQueue::new(&client, "/ensemble-queue").unwrap();
    queue.offer(b"before").unwrap();
    let leader = cluster.leader().expect("a leader was elected");
    cluster.kill(leader).unwrap();
    assert!(!cluster.is_running(leader));
    // The other two elect a new leader; the client moves over by itself.
    let deadline = Instant::now() + Duration::from_secs(30);
    while let Err(e) = queue.offer(b"during") {
        assert!(Instant::now() < deadline, "no service without the old leader: {e}");
        std::thread::sleep(Duration::from_millis(100));
    }
    let new_leader = cluster.wait_for_leader(Duration::from_secs(30)).expect("a new leader");
    assert_ne!(new_leader, leader);
    cluster.restart(leader).unwrap();
    assert!(cluster.is_running(leader));
    // The restarted member serves the data written while it was down.
    let direct = ZkClient::connect(&cluster.member_connect_string(leader)).unwrap();
    assert!(direct.get_children("/ensemble-queue").unwrap().0.len() >= 2);
    direct.create("/from-old-leader", b"", CreateMode::Persistent).unwrap();
    assert_eq!(queue.poll().unwrap(), Some(b"before".to_vec()));
}
