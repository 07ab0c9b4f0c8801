//! Ports of Curator's `TestDistributedDelayQueue`.

use std::thread;
use std::time::{Duration, Instant};

use zk_queue::{DeliverAt, QueueBuilder, StringSerializer};

use crate::queue::{in_millis, WAIT};
use crate::support::queues::producer;
use crate::support::recorder::Recorder;
use crate::support::{client, server::unique_path};

#[test]
fn delay_queue_holds_items_until_due_then_orders_by_due_time() {
    // Curator's testBasic, testLateAddition and testSorting (shuffled due times).
    let path = unique_path("delay");
    let client = client();
    let producer = producer(&client, &path).build_delay_queue().unwrap();
    let base = in_millis(-10_000).epoch_millis();
    let mut order: Vec<i64> = (0..50).collect();
    fastrand::shuffle(&mut order);
    for i in &order {
        producer
            .put(i.to_string(), DeliverAt::from_epoch_millis(base + i).unwrap())
            .unwrap();
    }
    producer.put("far future".into(), in_millis(i32::MAX as i64)).unwrap();
    producer.put("soon".into(), in_millis(1_500)).unwrap();
    let recorder = Recorder::new();
    let _consumer = QueueBuilder::new(&client, &path, StringSerializer)
        .consumer(recorder.clone())
        .build_delay_queue()
        .unwrap();
    let started = Instant::now();
    let due: Vec<String> = recorder.wait_for(50, WAIT);
    assert_eq!(
        due,
        (0..50).map(|i| i.to_string()).collect::<Vec<_>>(),
        "due order, not put order"
    );
    let got = recorder.wait_for(51, WAIT);
    assert_eq!(got[50], "soon");
    assert!(
        started.elapsed() >= Duration::from_millis(1_400),
        "delivered early: {:?}",
        started.elapsed()
    );
    thread::sleep(Duration::from_millis(500));
    assert_eq!(recorder.items().len(), 51, "the far-future item is not delivered");
}
