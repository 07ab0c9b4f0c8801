//! A delay queue: items are delivered when they come due, not when put.
//!
//! Run with `cargo run --example delayed` (uses `ZK_CONNECT`, or starts an
//! embedded ZooKeeper when it is unset).

mod common;

use std::time::{Duration, Instant, SystemTime};

use zk_queue::{DeliverAt, QueueBuilder, StringSerializer, ZkClient};

fn main() -> anyhow::Result<()> {
    let (connect, _server) = common::zookeeper()?;
    let path = format!("/zk-queue-demo/delayed-{}", std::process::id());
    let client = ZkClient::connect(&connect)?;

    let (builder, due) = QueueBuilder::new(&client, &path, StringSerializer).pull_consumer();
    let _consumer = builder.build_delay_queue()?;
    let producer = QueueBuilder::new(&client, &path, StringSerializer)
        .put_in_background(false)
        .build_delay_queue()?;

    let start = Instant::now();
    let now = SystemTime::now();
    for (reminder, after) in [("in 2 s", 2_000), ("now", 0), ("in 1 s", 1_000)] {
        producer.put(
            reminder.to_string(),
            DeliverAt::from(now + Duration::from_millis(after)),
        )?;
        println!("put {reminder:<7} due {after} ms from now");
    }
    for _ in 0..3 {
        let reminder = due
            .take_timeout(Duration::from_secs(10))?
            .ok_or_else(|| anyhow::anyhow!("nothing due"))?;
        println!("{:>5} ms: {}", start.elapsed().as_millis(), *reminder);
        reminder.ack();
    }
    Ok(())
}
