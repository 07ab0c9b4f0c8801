//! Lock-safe workers with retries and a dead-letter path: every job is
//! processed at least once, a job that keeps failing is set aside.
//!
//! Run with `cargo run --example work_queue` (uses `ZK_CONNECT`, or starts an
//! embedded ZooKeeper when it is unset).

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use zk_queue::{ConsumeError, QueueBuilder, StringSerializer, ZkClient};

fn main() -> anyhow::Result<()> {
    let (connect, _server) = common::zookeeper()?;
    let run = std::process::id();
    let (jobs, locks, dead) = (
        format!("/zk-queue-demo/jobs-{run}"),
        format!("/zk-queue-demo/jobs-{run}-locks"),
        format!("/zk-queue-demo/jobs-{run}-dead"),
    );
    let client = ZkClient::connect(&connect)?;
    let done = Arc::new(AtomicUsize::new(0));
    // Deliveries per job, across both workers.
    let attempts = Arc::new(parking_lot::Mutex::new(std::collections::HashMap::<String, u32>::new()));

    // Two workers; "flaky" jobs fail once, the "poison" job always fails.
    let workers: Vec<_> = ["worker-a", "worker-b"]
        .into_iter()
        .map(|name| {
            let (done, attempts) = (Arc::clone(&done), Arc::clone(&attempts));
            let queue = QueueBuilder::new(&client, &jobs, StringSerializer)
                .consumer(move |job: String| -> Result<(), ConsumeError> {
                    let attempt = {
                        let mut seen = attempts.lock();
                        let n = seen.entry(job.clone()).or_default();
                        *n += 1;
                        *n
                    };
                    if job == "poison" || (job.starts_with("flaky") && attempt == 1) {
                        println!("{name}: {job} failed (attempt {attempt})");
                        return Err(format!("{job} failed").into());
                    }
                    println!("{name}: {job} done");
                    done.fetch_add(1, Ordering::SeqCst);
                    Ok(())
                })
                .lock_path(&locks)
                .max_attempts(3)
                .dead_letter_path(&dead)
                .build_queue()?;
            Ok(queue)
        })
        .collect::<anyhow::Result<_>>()?;

    let producer = QueueBuilder::new(&client, &jobs, StringSerializer).build_queue()?;
    for i in 0..6 {
        producer.put(format!("job-{i}"))?;
    }
    producer.put("flaky-1".to_string())?;
    producer.put("poison".to_string())?;
    anyhow::ensure!(producer.flush_timeout(Duration::from_secs(10)), "puts not flushed");

    let deadline = Instant::now() + Duration::from_secs(30);
    while done.load(Ordering::SeqCst) < 7 || client.get_children(&dead)?.0.is_empty() {
        anyhow::ensure!(Instant::now() < deadline, "jobs did not finish");
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(workers);
    let (dead_letters, _) = client.get_children(&dead)?;
    println!(
        "{} jobs done; {} set aside in {dead}",
        done.load(Ordering::SeqCst),
        dead_letters.len()
    );
    Ok(())
}
