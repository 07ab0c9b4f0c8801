//! The `SimpleQueue` cases: one thread offers while another takes.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use zk_queue::{SimpleQueue, ZkClient};

use super::cases::{Ctx, Measured};
use super::util::{self, Collector, Deadline};

/// Items per `put_all` call and the taker's prefetch in the batched case.
pub const BATCH: usize = 64;

/// `SimpleQueue`: one thread offers, another takes, concurrently; with
/// `batch`, offers go `batch` at a time (`put_all`) and the taker prefetches
/// `batch` items.
pub fn case(ctx: &Ctx, name: &str, batch: Option<usize>, bar: &indicatif::ProgressBar) -> anyhow::Result<Measured> {
    let path = format!("{}/{name}", ctx.root);
    let deadline = ctx.budget.deadline(&format!("case {name}"), 3.0 * ctx.items as f64);
    let stop = Arc::new(AtomicBool::new(false));
    let result = run(ctx, &path, batch, &deadline, &stop, bar);
    stop.store(true, Ordering::Release);
    let cleanup = util::remove_tree(ctx.admin, &path);
    let measured = result?;
    cleanup.with_context(|| format!("cleaning up case {name}"))?;
    Ok(measured)
}

fn run(
    ctx: &Ctx,
    path: &str,
    batch: Option<usize>,
    deadline: &Deadline,
    stop: &Arc<AtomicBool>,
    bar: &indicatif::ProgressBar,
) -> anyhow::Result<Measured> {
    let collector = Arc::new(Collector::new(ctx.items));
    let producer = ZkClient::connect(ctx.connect).context("connecting the producer")?;
    let consumer = ZkClient::connect(ctx.connect).context("connecting the consumer")?;
    let offers = SimpleQueue::new(&producer, path).context("opening the producer's queue")?;
    let takes = SimpleQueue::builder(&consumer, path)
        .prefetch(batch.unwrap_or(0))
        .build()
        .context("opening the consumer's queue")?;

    let (done_tx, done_rx) = mpsc::channel();
    let (taken_tx, taken_rx) = mpsc::channel();
    let started = Instant::now();
    {
        let (collector, stop, deadline, items, size) = (
            Arc::clone(&collector),
            Arc::clone(stop),
            deadline.clone(),
            ctx.items,
            ctx.size,
        );
        std::thread::Builder::new()
            .name("bench-offer".into())
            .spawn(move || {
                let result = (|| -> anyhow::Result<Instant> {
                    let per_call = batch.unwrap_or(1);
                    for first in (0..items).step_by(per_call) {
                        if stop.load(Ordering::Acquire) {
                            bail!("stopped");
                        }
                        let last = items.min(first + per_call);
                        if batch.is_none() {
                            offers
                                .offer(&util::payload(util::now_nanos(), first as u64, size))
                                .context("offer")?;
                        } else {
                            let now = util::now_nanos();
                            let payloads: Vec<Vec<u8>> =
                                (first..last).map(|i| util::payload(now, i as u64, size)).collect();
                            for result in offers.put_all(&payloads).context("put_all")? {
                                result.context("put_all")?;
                            }
                        }
                        if Instant::now() >= deadline.at {
                            bail!("{}: still offering", deadline.missed());
                        }
                    }
                    Ok(Instant::now())
                })();
                if let Err(e) = &result {
                    collector.fail(format!("producer: {e:#}"));
                }
                let _ = done_tx.send(result);
            })
            .context("starting the offer thread")?;
    }
    {
        let (collector, stop, deadline, items) =
            (Arc::clone(&collector), Arc::clone(stop), deadline.clone(), ctx.items);
        std::thread::Builder::new()
            .name("bench-take".into())
            .spawn(move || {
                while collector.unique() < items && !stop.load(Ordering::Acquire) && Instant::now() < deadline.at {
                    match takes.take_timeout(deadline.remaining().min(Duration::from_secs(1))) {
                        Ok(Some(item)) => collector.record(&item),
                        Ok(None) => {}
                        Err(e) => {
                            collector.fail(format!("consumer: take: {e}"));
                            break;
                        }
                    }
                }
                let _ = taken_tx.send(());
            })
            .context("starting the take thread")?;
    }
    let collected = collector.wait(deadline, bar)?;
    let put_done = done_rx
        .recv_timeout(deadline.remaining())
        .map_err(|_| anyhow::anyhow!("{}: producer still offering", deadline.missed()))??;
    // The taker stops once every item was taken; wait for it to be sure.
    let _ = taken_rx.recv_timeout(Duration::from_secs(5));
    Ok(Measured {
        secs: (collected.last - started).as_secs_f64(),
        put_secs: (put_done - started).as_secs_f64(),
        latencies_ns: collected.latencies_ns,
        duplicates: collected.duplicates,
        consumer_stats: vec![consumer.stats()],
        producer_stats: vec![producer.stats()],
    })
}
