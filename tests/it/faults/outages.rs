//! Server restarts and stalls: blocked calls and sessions recover.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use zk_queue::testing::TestingServer;
use zk_queue::{ConnectionState, Error, SimpleQueue};

use crate::support::server::unique_path;
use crate::support::{short_session_client, wait_for_state};

#[test]
fn take_blocked_across_a_server_restart_returns_the_next_item() {
    let mut server = TestingServer::start().unwrap();
    let connect = server.connect_string();
    let consumer_client = short_session_client(&connect);
    let producer_client = short_session_client(&connect);
    let queue_path = unique_path("restart-take");
    let busy_path = unique_path("restart-offers");
    let consumer = SimpleQueue::new(&consumer_client, &queue_path).unwrap();
    let producer = SimpleQueue::new(&producer_client, &queue_path).unwrap();
    let busy = SimpleQueue::new(&producer_client, &busy_path).unwrap();
    let stop = AtomicBool::new(false);
    let (acknowledged, failed) = (Mutex::new(Vec::new()), AtomicUsize::new(0));
    let taken = thread::scope(|s| {
        let taker = s.spawn(|| consumer.take_timeout(Duration::from_secs(60)));
        // Offers of unique payloads keep running on another queue throughout the restart.
        s.spawn(|| {
            for i in 0.. {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                match busy.offer(format!("{i}").as_bytes()) {
                    Ok(_) => acknowledged.lock().unwrap().push(i.to_string()),
                    Err(_) => _ = failed.fetch_add(1, Ordering::SeqCst),
                }
            }
        });
        thread::sleep(Duration::from_millis(300));
        server.restart().unwrap();
        thread::sleep(Duration::from_millis(500));
        assert!(
            !taker.is_finished(),
            "take returned without an item: {:?}",
            taker.join()
        );
        let offer_after_restart = Instant::now() + Duration::from_secs(20);
        while let Err(e) = producer.offer(b"after-restart") {
            assert!(
                Instant::now() < offer_after_restart,
                "offers keep failing after the restart: {e}"
            );
            thread::sleep(Duration::from_millis(100));
        }
        stop.store(true, Ordering::SeqCst);
        taker.join().unwrap()
    });
    assert_eq!(taken.unwrap(), Some(b"after-restart".to_vec()));

    let mut stored = Vec::new();
    while let Some(item) = busy.poll().unwrap() {
        stored.push(String::from_utf8(item).unwrap());
    }
    let acknowledged = acknowledged.into_inner().unwrap();
    let distinct: HashSet<&String> = stored.iter().collect();
    let missing: Vec<&String> = acknowledged.iter().filter(|a| !distinct.contains(a)).collect();
    assert!(missing.is_empty(), "acknowledged offers lost: {missing:?}");
    let last = acknowledged.last().and_then(|a| a.parse::<usize>().ok()).unwrap_or(0);
    assert!(
        stored.iter().all(|s| s.parse::<usize>().is_ok_and(|i| i <= last + 1)),
        "an item nobody offered: {stored:?}"
    );
    // Attempts whose outcome the restart made unknown (a lost reply, or a
    // timed-out request the client still sent after reconnecting) may store an
    // item twice; a restart interrupts only a few.
    let duplicates = stored.len() - distinct.len();
    assert!(
        duplicates <= 4,
        "{duplicates} duplicates, {} failed offers",
        failed.load(Ordering::SeqCst)
    );
}

#[test]
fn a_stalled_server_gives_errors_in_bounded_time_then_a_new_session() {
    let server = TestingServer::start().unwrap();
    let client = short_session_client(&server.connect_string());
    let states = client.state_listener();
    let queue = SimpleQueue::new(&client, &unique_path("pause")).unwrap();
    queue.offer(b"before").unwrap();
    let old_session = client.session_id().unwrap();

    server.pause().unwrap();
    let started = Instant::now();
    let result = queue.offer(b"during");
    let waited = started.elapsed();
    assert!(
        matches!(
            result,
            Err(Error::Timeout { .. } | Error::ConnectionLoss { .. } | Error::SessionExpired)
        ),
        "{result:?}"
    );
    assert!(waited < Duration::from_secs(8), "error took {waited:?}");
    // Stall past the session timeout so the session expires.
    wait_for_state(&states, ConnectionState::Lost, Duration::from_secs(15));
    server.resume().unwrap();
    wait_for_state(&states, ConnectionState::Reconnected, Duration::from_secs(30));

    assert_ne!(
        client.session_id().unwrap(),
        old_session,
        "a new session replaced the expired one"
    );
    queue.offer(b"after").unwrap();
    let mut items = Vec::new();
    while let Some(item) = queue.poll().unwrap() {
        items.push(item);
    }
    assert_eq!(items.first().map(Vec::as_slice), Some(&b"before"[..]));
    assert_eq!(items.last().map(Vec::as_slice), Some(&b"after"[..]));
    assert!(items.len() <= 3, "at most the unknown-outcome offer besides: {items:?}");
}

#[test]
fn take_waiting_through_a_session_expiry_gets_the_next_item() {
    let server = TestingServer::start().unwrap();
    let client = short_session_client(&server.connect_string());
    let states = client.state_listener();
    let path = unique_path("expiry-take");
    let queue = SimpleQueue::new(&client, &path).unwrap();
    let result = thread::scope(|s| {
        let taker = s.spawn(|| queue.take_timeout(Duration::from_secs(60)));
        thread::sleep(Duration::from_millis(300));
        server.pause().unwrap();
        wait_for_state(&states, ConnectionState::Lost, Duration::from_secs(15));
        server.resume().unwrap();
        wait_for_state(&states, ConnectionState::Reconnected, Duration::from_secs(30));
        let producer_client = short_session_client(&server.connect_string());
        SimpleQueue::new(&producer_client, &path)
            .unwrap()
            .offer(b"next")
            .unwrap();
        taker.join().unwrap()
    });
    assert_eq!(result.unwrap(), Some(b"next".to_vec()));
}
