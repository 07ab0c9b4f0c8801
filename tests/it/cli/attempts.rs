//! `zkq peek` counts attempts as `ItemMeta::attempt` does.

use std::time::Duration;

use zk_queue::{QueueBuilder, StringSerializer};

use super::{json, ok};
use crate::support::client;
use crate::support::server::unique_path;

#[test]
fn cli_peek_shows_a_redelivered_items_attempt_as_its_consumer_sees_it() {
    let path = unique_path("cli-attempts");
    let zk = client();
    ok(&["put", &path, "flaky"]);
    assert_eq!(json(&["peek", &path])[0]["attempt"], 1, "never delivered");
    let (builder, receiver) = QueueBuilder::new(&zk, &path, StringSerializer)
        .lock_path(&format!("{path}-locks"))
        .redelivery_backoff(Duration::ZERO, Duration::ZERO)
        .claim_window(1)
        .pull_consumer();
    let consumer = builder.build_queue().unwrap();
    let wait = Duration::from_secs(30);
    let first = receiver.take_timeout(wait).unwrap().expect("the item");
    assert_eq!(first.meta().attempt(), 1);
    first.nack("try again");
    let again = receiver.take_timeout(wait).unwrap().expect("the item again");
    // The redelivery is held now: the node is the requeued one.
    let peeked = json(&["peek", &path]);
    assert_eq!(peeked[0]["name"], again.meta().name(), "{peeked}");
    assert_eq!(peeked[0]["attempt"], again.meta().attempt(), "{peeked}");
    assert_eq!(again.meta().attempt(), 2);
    assert!(
        ok(&["peek", &path]).contains(&format!("\tattempt={}\t", again.meta().attempt())),
        "the text shows the same number"
    );
    again.ack();
    consumer.close();
}
