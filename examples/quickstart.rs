//! A producer thread and two consumer threads share one `SimpleQueue`.
//!
//! Run with `cargo run --example quickstart`. It uses the ZooKeeper named by
//! `ZK_CONNECT` (for example `ZK_CONNECT=127.0.0.1:2181`), or starts an
//! embedded local server when that is unset.

use std::thread;
use std::time::Duration;

use anyhow::Context;
use zk_queue::testing::{connect_string_from_env, TestingServer};
use zk_queue::{SimpleQueue, ZkClient};

const JOBS: usize = 20;

fn main() -> anyhow::Result<()> {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();

    // Keep the embedded server alive until the end of `main`.
    let (_server, connect) = match connect_string_from_env() {
        Some(connect) => (None, connect),
        None => {
            println!("ZK_CONNECT is unset: starting an embedded ZooKeeper");
            let server = TestingServer::start().context("starting an embedded ZooKeeper")?;
            let connect = server.connect_string();
            (Some(server), connect)
        }
    };
    println!("using ZooKeeper at {connect}");
    let path = format!("/zk-queue-demo/quickstart-{}", std::process::id());

    let taken: Vec<usize> = thread::scope(|s| -> anyhow::Result<Vec<usize>> {
        let producer = s.spawn(|| -> anyhow::Result<()> {
            let client = ZkClient::connect(&connect).context("connecting the producer")?;
            let queue = SimpleQueue::new(&client, &path)?;
            for i in 0..JOBS {
                let node = queue.offer(format!("job-{i}").as_bytes())?;
                println!("producer   offered job-{i:<2} as {node}");
                thread::sleep(Duration::from_millis(20));
            }
            Ok(())
        });
        let consumers: Vec<_> = ["consumer-a", "consumer-b"]
            .into_iter()
            .map(|name| {
                let (connect, path) = (&connect, &path);
                s.spawn(move || -> anyhow::Result<usize> {
                    let client = ZkClient::connect(connect).with_context(|| format!("connecting {name}"))?;
                    let queue = SimpleQueue::new(&client, path)?;
                    let mut count = 0;
                    // Stop after two quiet seconds: the producer is done.
                    while let Some(item) = queue.take_timeout(Duration::from_secs(2))? {
                        println!("{name} took     {}", String::from_utf8_lossy(&item));
                        count += 1;
                    }
                    Ok(count)
                })
            })
            .collect();
        producer.join().expect("producer panicked")?;
        consumers
            .into_iter()
            .map(|c| c.join().expect("consumer panicked"))
            .collect()
    })?;

    println!(
        "consumer-a took {}, consumer-b took {}: {} of {JOBS} jobs",
        taken[0],
        taken[1],
        taken.iter().sum::<usize>()
    );
    anyhow::ensure!(taken.iter().sum::<usize>() == JOBS, "some jobs were not consumed");
    ZkClient::connect(&connect)?.delete(&path, None)?;
    Ok(())
}
