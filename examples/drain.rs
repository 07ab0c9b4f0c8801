//! Measures how fast `SimpleQueue` drains a preloaded queue.
//!
//! `cargo run --release --example drain -- [ITEMS] [CONSUMERS]` (defaults:
//! 10000 items, 1 consumer). Uses `ZK_CONNECT` or an embedded server. Offers
//! are made from 8 threads to preload quickly; the drain is timed alone.

use std::time::{Duration, Instant};

use anyhow::Context;
use zk_queue::testing::{connect_string_from_env, TestingServer};
use zk_queue::{SimpleQueue, ZkClient};

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let items: usize = args.next().map_or(Ok(10_000), |a| a.parse()).context("ITEMS")?;
    let consumers: usize = args.next().map_or(Ok(1), |a| a.parse()).context("CONSUMERS")?;
    let (_server, connect) = match connect_string_from_env() {
        Some(connect) => (None, connect),
        None => {
            let server = TestingServer::start()?;
            let connect = server.connect_string();
            (Some(server), connect)
        }
    };
    let path = format!("/zk-queue-bench/drain-{}", std::process::id());
    let payload = vec![b'x'; 100];

    let started = Instant::now();
    std::thread::scope(|s| -> anyhow::Result<()> {
        let producers: Vec<_> = (0..8)
            .map(|p| {
                let (connect, path, payload) = (&connect, &path, &payload);
                s.spawn(move || -> anyhow::Result<()> {
                    let queue = SimpleQueue::new(&ZkClient::connect(connect)?, path)?;
                    for _ in (p..items).step_by(8) {
                        queue.offer(payload)?;
                    }
                    Ok(())
                })
            })
            .collect();
        producers
            .into_iter()
            .try_for_each(|p| p.join().expect("producer panicked"))
    })?;
    let preload = started.elapsed();
    println!(
        "preloaded {items} items of {} bytes in {:.2} s ({:.0} offers/s, 8 threads)",
        payload.len(),
        preload.as_secs_f64(),
        items as f64 / preload.as_secs_f64()
    );

    let started = Instant::now();
    let drained: usize = std::thread::scope(|s| {
        let workers: Vec<_> = (0..consumers)
            .map(|_| {
                let (connect, path) = (&connect, &path);
                s.spawn(move || -> anyhow::Result<usize> {
                    let queue = SimpleQueue::new(&ZkClient::connect(connect)?, path)?;
                    let mut n = 0;
                    while queue.take_timeout(Duration::from_millis(500))?.is_some() {
                        n += 1;
                    }
                    Ok(n)
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("consumer panicked"))
            .sum::<anyhow::Result<usize>>()
    })?;
    // The last consumer waited 500 ms on the empty queue before stopping.
    let drain = started.elapsed().saturating_sub(Duration::from_millis(500));
    println!(
        "drained {drained} items with {consumers} consumer(s) in {:.2} s: {:.0} items/s",
        drain.as_secs_f64(),
        drained as f64 / drain.as_secs_f64()
    );
    anyhow::ensure!(drained == items, "drained {drained} of {items}");
    ZkClient::connect(&connect)?.delete(&path, None)?;
    Ok(())
}
