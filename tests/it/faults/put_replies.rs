//! Puts whose create reply is lost are resolved by reading back their token:
//! the item is stored once and the put reports success. A `SimpleQueue`
//! offer has no token (the classic recipe stores raw bytes), so it cannot be
//! resolved: the offer sends its create again, and each lost reply stores
//! the item once more.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use zk_queue::testing::{FaultProxy, Request};
use zk_queue::{
    inspect, ConnectionState, Error, PutError, PutListener, QueueBuilder, SimpleQueue, StringSerializer, ZkClient,
};

use crate::support::queues::{consumer, producer};
use crate::support::recorder::Recorder;
use crate::support::server::{shared_connect_string, unique_path};
use crate::support::{self, wait_for_state};

/// The decoded items stored under `path`, in queue order.
fn stored(direct: &ZkClient, path: &str) -> Vec<String> {
    let (names, _) = direct.get_children(path).unwrap();
    let kind = inspect::Kind::detect(&names);
    inspect::order(&names, inspect::Layout::Curator, kind)
        .iter()
        .map(|item| {
            let name = &item.name;
            let (data, _) = direct.get_data(&format!("{path}/{name}")).unwrap();
            let records = inspect::decode_item(inspect::Layout::Curator, &data).unwrap().records;
            assert_eq!(records.len(), 1, "{name}");
            String::from_utf8(records[0].clone()).unwrap()
        })
        .collect()
}

/// Children listings the client has sent: the read-back is one of them.
fn listings(client: &ZkClient) -> u64 {
    client.stats().get_children
}

#[test]
fn a_put_whose_reply_is_dropped_is_stored_once_and_reported_stored() {
    let proxy = FaultProxy::start(&shared_connect_string()).unwrap();
    let client = support::proxied_client(&proxy);
    let direct = support::client();
    let path = unique_path("put-dropped-reply");
    let queue = producer(&client, &path).build_queue().unwrap();
    queue.put("before".into()).unwrap();
    let states = client.state_listener();
    let listed = listings(&client);

    proxy.drop_reply_to(Request::Create);
    queue.put("lost reply".into()).unwrap();

    wait_for_state(&states, ConnectionState::Suspended, Duration::from_secs(10));
    assert!(listings(&client) > listed, "the put's outcome was read back");
    assert_eq!(stored(&direct, &path), ["before", "lost reply"]);
    assert_eq!(queue.stats().puts_resent, 0, "found, so not sent again");
}

#[test]
fn a_put_whose_item_is_taken_before_its_read_back_is_sent_again_and_counted() {
    let proxy = FaultProxy::start(&shared_connect_string()).unwrap();
    // A put gives up a request timeout after it started: long enough here
    // for the consumer to take the item, and the put to read back after.
    let client = ZkClient::builder(&proxy.connect_string())
        .session_timeout(Duration::from_secs(30))
        .connection_timeout(Duration::from_secs(5))
        .request_timeout(Duration::from_secs(60))
        .retry_policy(zk_queue::client::RetryForever::new(Duration::from_millis(100)))
        .connect()
        .unwrap();
    let direct = support::client();
    let path = unique_path("put-taken-before-read-back");
    let recorder = Recorder::new();
    let _consumer = consumer(&direct, &path, &recorder).build_queue().unwrap();
    let queue = producer(&client, &path).build_queue().unwrap();

    // The create is applied and its reply dropped; the producer cannot read
    // back until the consumer has taken the item.
    proxy.drop_reply_to_then_blackhole(Request::Create);
    std::thread::scope(|s| {
        let put = s.spawn(|| queue.put("raced".into()));
        assert_eq!(recorder.wait_for(1, Duration::from_secs(30)), ["raced"]);
        assert!(!put.is_finished(), "the put returned before it could read back");
        proxy.heal();
        put.join().unwrap().unwrap();
    });

    assert_eq!(queue.stats().puts_resent, 1, "not found when read back, so sent again");
    assert_eq!(recorder.wait_for(2, Duration::from_secs(30)), ["raced", "raced"]);
    assert_eq!(queue.stats().puts, 1, "one put, reported stored once");
}

#[test]
fn a_first_put_whose_reply_is_dropped_is_found_among_other_producers_items() {
    let proxy = FaultProxy::start(&shared_connect_string()).unwrap();
    let client = support::proxied_client(&proxy);
    let direct = support::client();
    let path = unique_path("put-dropped-first");
    let other = producer(&direct, &path).build_queue().unwrap();
    for i in 0..3 {
        other.put(format!("other {i}")).unwrap();
    }
    // This producer has put nothing yet: its floor is the queue's cversion.
    let queue = producer(&client, &path).build_queue().unwrap();
    proxy.drop_reply_to(Request::Create);
    queue.put("mine".into()).unwrap();
    other.put("other 3".into()).unwrap();
    assert_eq!(
        stored(&direct, &path),
        ["other 0", "other 1", "other 2", "mine", "other 3"]
    );
}

#[test]
fn a_priority_put_whose_reply_is_dropped_is_stored_once() {
    let proxy = FaultProxy::start(&shared_connect_string()).unwrap();
    let client = support::proxied_client(&proxy);
    let direct = support::client();
    let path = unique_path("put-dropped-priority");
    let queue = producer(&client, &path).build_priority_queue(1).unwrap();
    queue.put("low".into(), 5).unwrap();
    proxy.drop_reply_to(Request::Create);
    queue.put("urgent".into(), -5).unwrap();
    assert_eq!(stored(&direct, &path), ["urgent", "low"]);
}

/// Counts what the put listener hears.
#[derive(Default)]
struct Outcomes {
    stored: Mutex<Vec<String>>,
    failed: Mutex<Vec<String>>,
}

struct Listen(Arc<Outcomes>);

impl PutListener<String> for Listen {
    fn put_completed(&self, items: &[String]) {
        self.0.stored.lock().extend_from_slice(items);
    }

    fn put_failed(&self, items: &[String], _error: &Error) {
        self.0.failed.lock().extend_from_slice(items);
    }
}

#[test]
fn background_puts_whose_replies_are_lost_mid_batch_are_each_stored_exactly_once() {
    let proxy = FaultProxy::start(&shared_connect_string()).unwrap();
    let client = support::proxied_client(&proxy);
    let direct = support::client();
    let path = unique_path("put-cut-batch");
    let queue = QueueBuilder::new(&client, &path, StringSerializer)
        .put_in_background(true)
        .build_queue()
        .unwrap();
    let outcomes = Arc::new(Outcomes::default());
    queue.add_put_listener(Listen(Arc::clone(&outcomes)));
    const ITEMS: usize = 2_000;
    let states = client.state_listener();
    let listed = listings(&client);
    for i in 0..ITEMS {
        queue.put(format!("item {i:05}")).unwrap();
        if i % 500 == 250 {
            // The put thread has batches in flight: the server applies the
            // next one, and its replies are lost with the connection.
            proxy.drop_next_reply();
        }
    }
    assert!(queue.flush_timeout(Duration::from_secs(60)), "every put finished");
    wait_for_state(&states, ConnectionState::Suspended, Duration::from_secs(10));
    assert!(listings(&client) > listed, "outcomes were read back");
    assert!(outcomes.failed.lock().is_empty(), "no put failed");
    assert_eq!(outcomes.stored.lock().len(), ITEMS, "every put reported stored");

    let mut items = stored(&direct, &path);
    assert_eq!(items.len(), ITEMS, "no item stored twice");
    items.sort();
    items.dedup();
    assert_eq!(items.len(), ITEMS, "every item stored");
}

#[test]
fn put_timeout_gives_up_at_its_deadline_while_the_server_is_unreachable() {
    let proxy = FaultProxy::start(&shared_connect_string()).unwrap();
    let client = ZkClient::builder(&proxy.connect_string())
        .session_timeout(Duration::from_secs(20))
        .connection_timeout(Duration::from_secs(5))
        .request_timeout(Duration::from_secs(1))
        // The policy alone would keep trying for a minute.
        .retry_policy(zk_queue::client::RetryUntilElapsed::new(
            Duration::from_secs(60),
            Duration::from_millis(200),
        ))
        .connect()
        .unwrap();
    let path = unique_path("put-timeout-unreachable");
    let queue = producer(&client, &path).build_queue().unwrap();
    proxy.blackhole();
    let started_at = std::time::Instant::now();
    let result = queue.put_timeout("stuck".into(), Duration::from_secs(2));
    let elapsed = started_at.elapsed();
    assert!(
        matches!(result, Err(PutError::Failed(Error::Timeout { .. }))),
        "{result:?}"
    );
    assert!(
        // Its deadline, and the second a request sent before it may take
        // while the (blackholed) server still looks connected.
        elapsed >= Duration::from_secs(2)
            && crate::support::Bound::past(Duration::from_secs(2), Duration::from_secs(1)).holds(elapsed),
        "gave up after {elapsed:?}"
    );
    proxy.heal();
    queue.put("after".into()).unwrap();
}

/// Offers one item to a `SimpleQueue` through a proxy that drops the replies
/// to the next `lost` creates (the offer's first attempt and its resends);
/// returns the node the offer reported and the nodes stored (path, data),
/// in order.
fn offer_losing_create_replies(name: &str, lost: u32) -> (String, Vec<(String, String)>) {
    let proxy = FaultProxy::start(&shared_connect_string()).unwrap();
    let client = support::proxied_client(&proxy);
    let direct = support::client();
    let path = unique_path(name);
    // The queue node exists: the only creates are the offer's.
    direct.ensure_path(&path).unwrap();
    let queue = SimpleQueue::new(&client, &path).unwrap();
    proxy.drop_replies_to(Request::Create, lost);
    let reported = queue.offer(b"job").unwrap();
    assert!(!proxy.dropping_reply(), "every fault fired");
    let (mut names, _) = direct.get_children(&path).unwrap();
    names.sort();
    let stored = names
        .into_iter()
        .map(|name| {
            let (data, _) = direct.get_data(&format!("{path}/{name}")).unwrap();
            (format!("{path}/{name}"), String::from_utf8(data).unwrap())
        })
        .collect();
    (reported, stored)
}

#[test]
fn a_simple_offer_whose_create_reply_is_lost_is_stored_twice() {
    let (reported, stored) = offer_losing_create_replies("simple-offer-reply-lost", 1);
    let data: Vec<&str> = stored.iter().map(|(_, data)| data.as_str()).collect();
    assert_eq!(data, ["job", "job"], "the lost attempt's node and the resend's");
    assert_eq!(reported, stored[1].0, "the offer reports the resend's node");
}

#[test]
fn a_simple_offer_whose_resend_loses_its_reply_too_is_stored_three_times() {
    let (reported, stored) = offer_losing_create_replies("simple-offer-replies-lost", 2);
    let data: Vec<&str> = stored.iter().map(|(_, data)| data.as_str()).collect();
    assert_eq!(data, ["job", "job", "job"], "one node per attempt");
    assert_eq!(reported, stored[2].0, "the offer reports the last attempt's node");
}
