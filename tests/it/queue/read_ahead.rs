//! An idle plain consumer woken by a new item reads the item in the round
//! trip of its listing instead of after it. Behind a proxy that delays every
//! chunk by [`DELAY`] each way, the item then comes one way (the watch
//! event) and two round trips (listing with the read, then the claiming
//! delete) after its put: five delays, where reading after the listing
//! takes seven.

use std::time::{Duration, Instant};

use zk_queue::testing::{FaultProxy, TestingServer};
use zk_queue::{ConsumeError, QueueBuilder, StringSerializer};

use super::WAIT;
use crate::support::queues::producer;
use crate::support::server::unique_path;
use crate::support::{self, client_of};

/// The proxy's delay per forwarded chunk, each way.
const DELAY: Duration = Duration::from_millis(400);

#[test]
fn an_idle_plain_consumer_reads_a_new_item_in_the_round_trip_of_its_listing() {
    // A server of its own: the shared one's load would add its queueing to
    // the round trips this test counts.
    let server = TestingServer::start().unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).unwrap();
    let slow = support::proxied_client(&proxy);
    let fast = client_of(&server.connect_string());
    let path = unique_path("read-ahead-idle");
    let producer = producer(&fast, &path).build_queue().unwrap();
    let (tx, rx) = crossbeam_channel::unbounded();
    let consumer = QueueBuilder::new(&slow, &path, StringSerializer)
        .consumer(move |item: String| -> Result<(), ConsumeError> {
            tx.send((item, Instant::now())).ok();
            Ok(())
        })
        .build_queue()
        .unwrap();
    proxy.set_delay(DELAY);

    producer.put("first".to_string()).unwrap();
    let (item, _) = rx.recv_timeout(WAIT).unwrap();
    assert_eq!(item, "first");
    // Its delete fired the consumer's watch, so it lists the queue again.
    // A pass sends a request at least every round trip: once nothing was
    // sent for two and a half, the consumer waits for the next item.
    let deadline = Instant::now() + WAIT;
    let (mut sent, mut since) = (slow.stats().total(), Instant::now());
    while since.elapsed() < 5 * DELAY {
        assert!(Instant::now() < deadline, "the consumer never went quiet");
        std::thread::sleep(Duration::from_millis(10));
        let now_sent = slow.stats().total();
        if now_sent != sent {
            (sent, since) = (now_sent, Instant::now());
        }
    }

    let put_at = Instant::now();
    producer.put("second".to_string()).unwrap();
    let (item, delivered_at) = rx.recv_timeout(WAIT).unwrap();
    assert_eq!(item, "second");
    let took = delivered_at - put_at;
    eprintln!("an idle consumer delivered a new item {took:?} after its put");
    assert!(
        took < 6 * DELAY,
        "delivered {took:?} after its put: the item was read after the listing, not with it"
    );
    consumer.close();
    producer.close();
}
