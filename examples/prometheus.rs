//! Exports the crate's metrics to Prometheus: a lock-safe queue stores jobs,
//! then consumes them (some fail once, some always and end as dead letters),
//! while `/metrics` serves the counts.
//!
//! Run with `cargo run --features metrics --example prometheus -- --port 9898`
//! (or `METRICS_PORT=9898`), then `curl http://127.0.0.1:9898/metrics`; press
//! Enter to exit. It uses `ZK_CONNECT`, or starts an embedded ZooKeeper when
//! that is unset. With `--wait` it also waits for a line on its standard
//! input between storing the jobs and consuming them.

mod common;

use std::io::BufRead;
use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::Parser;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};
use zk_queue::{ConsumeError, DistributedQueue, ItemMeta, QueueBuilder, StringSerializer, ZkClient};

/// The delivery whose failure sends a "poison" job to the dead-letter path.
const MAX_ATTEMPTS: u32 = 4;

#[derive(Parser)]
struct Args {
    /// The port of the `/metrics` listener, on 127.0.0.1.
    #[arg(long, env = "METRICS_PORT", default_value_t = 9898)]
    port: u16,
    /// The queue's path (default: one of this process's own).
    #[arg(long)]
    path: Option<String>,
    /// Jobs that succeed at once.
    #[arg(long, default_value_t = 20)]
    items: usize,
    /// Jobs that fail their first delivery, then succeed.
    #[arg(long, default_value_t = 3)]
    flaky: usize,
    /// Jobs that fail every delivery and end as dead letters.
    #[arg(long, default_value_t = 1)]
    poison: usize,
    /// How often the queue's gauges (depth, in flight) are sampled, in
    /// milliseconds.
    #[arg(long, default_value_t = 1000)]
    sample_ms: u64,
    /// The client's session timeout, in milliseconds.
    #[arg(long, default_value_t = 10_000)]
    session_timeout_ms: u64,
    /// Waits for a line on standard input before consuming.
    #[arg(long)]
    wait: bool,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let listen = SocketAddr::from((Ipv4Addr::LOCALHOST, args.port));
    // Buckets for both histograms (seconds), so Prometheus can aggregate
    // them across processes; without, the exporter writes summaries.
    let buckets = [
        0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
    ];
    PrometheusBuilder::new()
        .with_http_listener(listen)
        .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), &buckets)?
        .install()
        .context("starting the metrics listener")?;
    zk_queue::metrics::describe();
    println!("metrics at http://{listen}/metrics");

    let (connect, _server) = common::zookeeper()?;
    let client = ZkClient::builder(&connect)
        .session_timeout(Duration::from_millis(args.session_timeout_ms))
        .connect()?;
    let path = args
        .path
        .clone()
        .unwrap_or_else(|| format!("/zk-queue-demo/metrics-{}", std::process::id()));
    let sample = Duration::from_millis(args.sample_ms);

    let (producer, stored) = store(&client, &path, &args, sample)?;
    println!("stored {stored} jobs in {path}");
    if args.wait {
        wait_for_a_line();
    }
    // One handle of the queue at a time, so that one sampler sets its gauges.
    if !producer.close().is_complete() {
        bail!("the producer closed with puts pending");
    }
    // Kept until the end: its consumer and its gauges' sampler go on.
    let queue = consume(&client, &path, &args, sample)?;
    println!("press Enter to exit");
    wait_for_a_line();
    queue.close();
    Ok(())
}

/// Puts the jobs with a handle that only produces; returns it and how many
/// it stored.
fn store(
    client: &ZkClient,
    path: &str,
    args: &Args,
    sample: Duration,
) -> anyhow::Result<(DistributedQueue<String>, usize)> {
    let producer = QueueBuilder::new(client, path, StringSerializer)
        .metrics_interval(sample)
        .build_queue()?;
    let jobs = (0..args.items)
        .map(|i| format!("ok-{i}"))
        .chain((0..args.flaky).map(|i| format!("flaky-{i}")))
        .chain((0..args.poison).map(|i| format!("poison-{i}")));
    let mut stored = 0;
    for job in jobs {
        producer.put(job)?; // returns once the job is stored
        stored += 1;
    }
    Ok((producer, stored))
}

/// Consumes every job: "flaky" ones fail their first delivery, "poison" ones
/// every delivery. Returns the queue, still consuming, once all are
/// acknowledged or dead letters.
fn consume(client: &ZkClient, path: &str, args: &Args, sample: Duration) -> anyhow::Result<DistributedQueue<String>> {
    let queue = QueueBuilder::new(client, path, StringSerializer)
        .consumer_with_meta(|job: String, meta: &ItemMeta| -> Result<(), ConsumeError> {
            if job.starts_with("poison") || (job.starts_with("flaky") && meta.attempt() == 1) {
                return Err(format!("{job} failed on attempt {}", meta.attempt()).into());
            }
            Ok(())
        })
        .lock_path(&format!("{path}-locks"))
        .dead_letter_path(&format!("{path}-dead"))
        .max_attempts(MAX_ATTEMPTS)
        .redelivery_backoff(Duration::ZERO, Duration::ZERO)
        .metrics_interval(sample)
        .build_queue()?;
    let (acknowledged, dead) = ((args.items + args.flaky) as u64, args.poison as u64);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let stats = queue.stats();
        if stats.consumed == acknowledged && stats.dead_lettered == dead && stats.in_flight == 0 {
            println!(
                "consumed {} jobs, requeued {}, {} dead letters",
                stats.consumed, stats.requeued, stats.dead_lettered
            );
            return Ok(queue);
        }
        if Instant::now() >= deadline {
            bail!("not consumed within a minute: {stats:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits for a line (or the end) of standard input.
fn wait_for_a_line() {
    let _ = std::io::stdin().lock().read_line(&mut String::new());
}
