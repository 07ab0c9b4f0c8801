//! A priority queue: urgent work overtakes routine work.
//!
//! Run with `cargo run --example priority` (uses `ZK_CONNECT`, or starts an
//! embedded ZooKeeper when it is unset).

mod common;

use std::time::Duration;

use zk_queue::{QueueBuilder, StringSerializer, ZkClient};

fn main() -> anyhow::Result<()> {
    let (connect, _server) = common::zookeeper()?;
    let path = format!("/zk-queue-demo/priority-{}", std::process::id());
    let client = ZkClient::connect(&connect)?;

    let producer = QueueBuilder::new(&client, &path, StringSerializer)
        .put_in_background(false)
        .build_priority_queue(1)?;
    for (task, priority) in [
        ("weekly report", 50),
        ("reindex", 20),
        ("page the on-call", -10),
        ("cleanup", 90),
    ] {
        producer.put(task.to_string(), priority)?;
        println!("put {task:<16} at priority {priority}");
    }

    let (builder, tasks) = QueueBuilder::new(&client, &path, StringSerializer).pull_consumer();
    let _consumer = builder.build_priority_queue(1)?;
    let mut order = Vec::new();
    while let Some(task) = tasks.take_timeout(Duration::from_secs(2))? {
        println!("took {}", *task);
        order.push(task.ack());
    }
    anyhow::ensure!(
        order == ["page the on-call", "reindex", "weekly report", "cleanup"],
        "order {order:?}"
    );
    Ok(())
}
