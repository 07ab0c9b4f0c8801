//! How the recipes are timed: uncontended cycles interleaved with the
//! floor's in blocks (so a machine whose load changes from second to second
//! loads both alike), the floor's reads and events, and hand-offs between
//! contenders.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context};
use parking_lot::{Condvar, Mutex};
use zk_queue::{
    client::{ClientStats, CreateMode},
    ZkClient,
};

use super::super::cases::Ctx;
use super::super::util::{percentile_ms, Deadline, Requests};
use super::Floor;

/// Cycles of one part in a row before the next part's.
const BLOCK: usize = 50;

/// Times of cycles (ns) and the seconds they took together.
pub struct Run {
    pub nanos: Vec<u64>,
    pub secs: f64,
    /// Requests per cycle, where known.
    pub requests: Option<Requests>,
}

/// One cycle of a part, given the part's deadline.
pub type CycleFn<'a> = Box<dyn FnMut(&Deadline) -> anyhow::Result<()> + 'a>;

/// One cycle of an uncontended recipe of ours, and the client it uses
/// (for its requests per cycle).
pub struct Cycle<'a> {
    pub client: ZkClient,
    pub cycle: CycleFn<'a>,
}

/// A part timed cycle by cycle.
struct Part<'a> {
    cycle: CycleFn<'a>,
    done: usize,
    nanos: Vec<u64>,
}

/// Runs the floor's cycle and each of `ours` in turn, `BLOCK` cycles at a
/// time, until each ran `n / 2` cycles unrecorded and `n` timed; returns
/// the floor (its reads and events measured after) and each recipe's run.
pub fn floor_and_cycles(
    ctx: &Ctx,
    root: &str,
    (n, contenders): (usize, usize),
    ours: Vec<Cycle<'_>>,
) -> anyhow::Result<(Floor, Vec<Run>)> {
    let path = format!("{root}/floor");
    ctx.admin.ensure_path(&path)?;
    let (creates, deletes) = (Mutex::new(Vec::new()), Mutex::new(Vec::new()));
    let floor_cycle = |_: &Deadline| -> anyhow::Result<()> {
        let t = Instant::now();
        let (node, _) = ctx
            .admin
            .create(&format!("{path}/n-"), b"", CreateMode::EphemeralSequential)?;
        let created = Instant::now();
        ctx.admin.delete(&node, None)?;
        creates.lock().push((created - t).as_nanos() as u64);
        deletes.lock().push(created.elapsed().as_nanos() as u64);
        Ok(())
    };
    let clients: Vec<ZkClient> = ours.iter().map(|c| c.client.clone()).collect();
    let mut parts: Vec<Part> = std::iter::once(Box::new(floor_cycle) as CycleFn)
        .chain(ours.into_iter().map(|c| c.cycle))
        .map(|cycle| Part {
            cycle,
            done: 0,
            nanos: Vec::with_capacity(n),
        })
        .collect();
    let total = n + n / 2;
    let deadline = ctx.budget.deadline("recipe cycles", 6.0 * (total * parts.len()) as f64);
    while parts.iter().any(|p| p.done < total) {
        for part in &mut parts {
            for _ in 0..BLOCK.min(total - part.done) {
                let t = Instant::now();
                (part.cycle)(&deadline)?;
                let took = t.elapsed().as_nanos() as u64;
                if part.done >= n / 2 {
                    part.nanos.push(took);
                }
                part.done += 1;
            }
            if Instant::now() >= deadline.at {
                bail!("{}", deadline.missed());
            }
        }
    }
    let mut runs: Vec<Run> = parts
        .into_iter()
        .map(|part| Run {
            secs: part.nanos.iter().sum::<u64>() as f64 / 1e9,
            nanos: part.nanos,
            requests: None,
        })
        .collect();
    for (run, client) in runs.iter_mut().skip(1).zip(&clients) {
        // A client of the recipe's own: every request it sent was the recipe's.
        run.requests = Some(Requests::per_item(&[client.stats()], total));
    }
    let mut floor_run = runs.remove(0);
    floor_run.nanos.sort_unstable();
    // Only the timed cycles' halves count.
    let (mut creates, mut deletes) = (creates.into_inner(), deletes.into_inner());
    let (creates, deletes) = (&mut creates[n / 2..], &mut deletes[n / 2..]);
    creates.sort_unstable();
    deletes.sort_unstable();
    let mut reads = listings(ctx, root, n, contenders)?;
    reads.sort_unstable();
    let (mut events, mut then_read) = delete_to_event(ctx, root, n, false)?;
    events.sort_unstable();
    then_read.sort_unstable();
    let (_, mut beside_rejoin) = delete_to_event(ctx, root, n, true)?;
    beside_rejoin.sort_unstable();
    let p = |v: &[u64], at| percentile_ms(v, at).unwrap_or(f64::NAN);
    let floor = Floor {
        cycles: n,
        per_s: n as f64 / floor_run.secs,
        p50_ms: p(&floor_run.nanos, 50.0),
        p99_ms: p(&floor_run.nanos, 99.0),
        create_p50_ms: p(creates, 50.0),
        delete_p50_ms: p(deletes, 50.0),
        read_p50_ms: p(&reads, 50.0),
        read_p99_ms: p(&reads, 99.0),
        event_p50_ms: p(&events, 50.0),
        event_p99_ms: p(&events, 99.0),
        event_then_read_p50_ms: p(&then_read, 50.0),
        event_then_read_p99_ms: p(&then_read, 99.0),
        event_then_read_rejoin_p50_ms: p(&beside_rejoin, 50.0),
        event_then_read_rejoin_p99_ms: p(&beside_rejoin, 99.0),
    };
    Ok((floor, runs))
}

/// Listings of a lock path with a node per contender, one at a time: `n`
/// timed after `n / 2`.
fn listings(ctx: &Ctx, root: &str, n: usize, contenders: usize) -> anyhow::Result<Vec<u64>> {
    let line = format!("{root}/line");
    ctx.admin.ensure_path(&line)?;
    for _ in 0..contenders {
        ctx.admin
            .create(&format!("{line}/n-"), b"", CreateMode::EphemeralSequential)?;
    }
    let mut nanos = Vec::with_capacity(n);
    for i in 0..n + n / 2 {
        let t = Instant::now();
        ctx.admin.get_children(&line)?;
        if i >= n / 2 {
            nanos.push(t.elapsed().as_nanos() as u64);
        }
    }
    Ok(nanos)
}

/// From a delete call of ours to a thread of another client waking on its
/// child watch of the deleted node's parent, and to that thread's listing
/// of the parent returning, `n` times (after `n / 2`). With `rejoin`, the
/// deleting client creates its next node as soon as its delete returns, as
/// a releasing holder joins the line again.
fn delete_to_event(ctx: &Ctx, root: &str, n: usize, rejoin: bool) -> anyhow::Result<(Vec<u64>, Vec<u64>)> {
    let path = format!("{root}/event-{}", if rejoin { "rejoin" } else { "alone" });
    ctx.admin.ensure_path(&path)?;
    let watcher = ZkClient::connect(ctx.connect).context("connecting the watcher")?;
    let deadline = ctx.budget.deadline("recipe event", 6.0 * n as f64);
    let (mut nanos, mut then_read) = (Vec::with_capacity(n), Vec::with_capacity(n));
    let create = || {
        ctx.admin
            .create(&format!("{path}/n-"), b"", CreateMode::EphemeralSequential)
    };
    let mut next = None;
    let result = (0..n + n / 2).try_for_each(|i| -> anyhow::Result<()> {
        let node = match next.take() {
            Some(node) => node,
            None => create()?.0,
        };
        let (_, _, watch) = watcher.get_children_watch(&path)?;
        let woke = std::thread::scope(|s| {
            let waiting = s.spawn(|| {
                watch.wait_timeout(deadline.remaining());
                let woke = Instant::now();
                watcher.get_children(&path).map(|_| (woke, Instant::now()))
            });
            let t = Instant::now();
            let deleted = ctx.admin.delete(&node, None);
            if rejoin && deleted.is_ok() {
                next = Some(create()?.0);
            }
            let (woke, listed) = waiting.join().map_err(|_| anyhow::anyhow!("the watcher died"))??;
            deleted?;
            anyhow::Ok((woke - t, listed - t))
        })?;
        if i >= n / 2 {
            nanos.push(woke.0.as_nanos() as u64);
            then_read.push(woke.1.as_nanos() as u64);
        }
        if Instant::now() >= deadline.at {
            bail!("{}", deadline.missed());
        }
        Ok(())
    });
    watcher.close();
    result.map(|()| (nanos, then_read))
}

/// The line of a hand-off part: holders note their release; the next
/// holder records the time since.
pub struct Line {
    released: Mutex<Option<Instant>>,
    recorded: Mutex<Vec<u64>>,
    /// Hand-offs wanted: unrecorded ones first, then these.
    warmup: usize,
    cycles: usize,
    seen: AtomicUsize,
    first: Mutex<Option<Instant>>,
    last: Mutex<Option<Instant>>,
    failed: AtomicBool,
    /// Signalled when the contenders may stop.
    over: (Mutex<()>, Condvar),
    pub deadline: Deadline,
}

impl Line {
    /// Whether the contenders may stop.
    pub fn finished(&self) -> bool {
        self.failed.load(Ordering::Acquire) || self.seen.load(Ordering::Acquire) >= self.warmup + self.cycles
    }

    /// Called by a contender as soon as it holds.
    pub fn acquired(&self) {
        let now = Instant::now();
        let Some(then) = self.released.lock().take() else {
            return;
        };
        let i = self.seen.fetch_add(1, Ordering::AcqRel);
        if i == self.warmup {
            *self.first.lock() = Some(then);
        }
        if (self.warmup..self.warmup + self.cycles).contains(&i) {
            self.recorded.lock().push((now - then).as_nanos() as u64);
            *self.last.lock() = Some(now);
        }
        if i + 1 == self.warmup + self.cycles {
            self.signal_over();
        }
    }

    /// Wakes those waiting in [`wait_until_finished`](Self::wait_until_finished).
    fn signal_over(&self) {
        let _held = self.over.0.lock();
        self.over.1.notify_all();
    }

    /// Blocks until the contenders may stop or the deadline passes
    /// (a thread that only waits for the run to be over, without polling).
    pub fn wait_until_finished(&self) {
        let mut held = self.over.0.lock();
        while !self.finished() && self.deadline.remaining() > std::time::Duration::ZERO {
            self.over.1.wait_until(&mut held, self.deadline.at);
        }
    }

    /// Called by the holder right before its release call.
    pub fn releasing(&self) {
        *self.released.lock() = Some(Instant::now());
    }
}

/// `contenders` threads, each with a client of its own, run `contend`
/// until `cycles` hand-offs were recorded after `cycles / 2` unrecorded.
pub fn handoffs(
    ctx: &Ctx,
    what: &str,
    (cycles, contenders): (usize, usize),
    contend: impl Fn(&ZkClient, &Arc<Line>) -> anyhow::Result<()> + Sync,
) -> anyhow::Result<Run> {
    // Shared, so that a contender's own threads (a selector's) reach it.
    let line = Arc::new(Line {
        released: Mutex::new(None),
        recorded: Mutex::new(Vec::with_capacity(cycles)),
        warmup: cycles / 2,
        cycles,
        seen: AtomicUsize::new(0),
        first: Mutex::new(None),
        last: Mutex::new(None),
        failed: AtomicBool::new(false),
        over: (Mutex::new(()), Condvar::new()),
        deadline: ctx.budget.deadline(&format!("recipe {what}"), 6.0 * cycles as f64),
    });
    let clients = (0..contenders)
        .map(|_| ZkClient::connect(ctx.connect).context("connecting a contender"))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let results: Vec<anyhow::Result<()>> = std::thread::scope(|s| {
        let threads: Vec<_> = clients
            .iter()
            .map(|client| {
                let (line, contend) = (&line, &contend);
                s.spawn(move || {
                    let result = contend(client, line);
                    if result.is_err() {
                        line.failed.store(true, Ordering::Release);
                        line.signal_over();
                    }
                    result
                })
            })
            .collect();
        threads
            .into_iter()
            .map(|t| {
                t.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("a contender panicked")))
            })
            .collect()
    });
    let sent: Vec<ClientStats> = clients.iter().map(ZkClient::stats).collect();
    for client in clients {
        client.close();
    }
    results.into_iter().collect::<anyhow::Result<()>>()?;
    let (first, last) = (*line.first.lock(), *line.last.lock());
    let secs = match first.zip(last) {
        Some((first, last)) => (last - first).as_secs_f64(),
        None => bail!("no hand-off recorded"),
    };
    let handed = line.seen.load(Ordering::Acquire);
    let nanos = std::mem::take(&mut *line.recorded.lock());
    Ok(Run {
        nanos,
        secs,
        requests: Some(Requests::per_item(&sent, handed)),
    })
}
