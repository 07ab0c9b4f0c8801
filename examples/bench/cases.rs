//! The cases: producers and consumers of each queue kind, run concurrently.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant, SystemTime};

use anyhow::{bail, ensure, Context};
use clap::ValueEnum;
use zk_queue::{
    client::ClientStats, inspect::Kind, kinds, BytesSerializer, ConsumeError, DeliverAt, Error, ItemMeta, PutListener,
    Queue, QueueBuilder, ZkClient,
};

use super::report::CaseReport;
use super::simple;
use super::util::{self, Budget, Collector, Deadline};

/// Items per node of the `multi` case.
const MULTI_ITEMS_PER_NODE: usize = 100;

/// Threads sharing the producer handle of the `coalesced` case.
const COALESCED_THREADS: usize = 8;

/// The cases, in the order they run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, ValueEnum)]
pub enum CaseName {
    /// Background puts only, then flush_timeout
    Put,
    /// 1 producer, 1 callback consumer, plain queue
    E2e,
    /// --threads producers and --threads consumers, each with its own client
    #[value(name = "e2e-4x4")]
    E2e4x4,
    /// 1 producer, 1 consumer with a lock path
    LockSafe,
    /// 1 producer, 4 plain consumers, each with its own client
    #[value(name = "consumers-4")]
    Consumers4,
    /// 1 producer, 16 plain consumers, each with its own client
    #[value(name = "consumers-16")]
    Consumers16,
    /// 1 producer, 4 lock-safe consumers, each with its own client
    #[value(name = "lock-safe-4")]
    LockSafe4,
    /// 1 producer, 16 lock-safe consumers, each with its own client
    #[value(name = "lock-safe-16")]
    LockSafe16,
    /// e2e on a priority queue with random priorities
    Priority,
    /// e2e on a delay queue, every item already due
    Delay,
    /// put_multi with 100 items per node, 1 consumer
    Multi,
    /// SimpleQueue: 1 thread offers, 1 thread takes, one item at a time
    Simple,
    /// SimpleQueue: 1 thread offers with put_all (64 a call), 1 thread takes with prefetch 64
    #[value(name = "simple-batched")]
    SimpleBatched,
    /// 8 threads sharing one producer handle with coalesced puts, single
    /// puts each; 1 consumer
    Coalesced,
    /// 1 producer, 1 lock-safe consumer that fails every item's first
    /// delivery (requeued at once, no back-off), then consumes it; not in
    /// the default set
    #[value(name = "lock-safe-requeue")]
    LockSafeRequeue,
}

impl CaseName {
    /// The default set: every case but the optional ones.
    pub fn all() -> Vec<CaseName> {
        let optional = [CaseName::LockSafeRequeue];
        CaseName::value_variants()
            .iter()
            .copied()
            .filter(|case| !optional.contains(case))
            .collect()
    }

    pub fn name(self) -> &'static str {
        match self {
            CaseName::Put => "put",
            CaseName::E2e => "e2e",
            CaseName::E2e4x4 => "e2e-4x4",
            CaseName::LockSafe => "lock-safe",
            CaseName::Consumers4 => "consumers-4",
            CaseName::Consumers16 => "consumers-16",
            CaseName::LockSafe4 => "lock-safe-4",
            CaseName::LockSafe16 => "lock-safe-16",
            CaseName::Priority => "priority",
            CaseName::Delay => "delay",
            CaseName::Multi => "multi",
            CaseName::Simple => "simple",
            CaseName::SimpleBatched => "simple-batched",
            CaseName::Coalesced => "coalesced",
            CaseName::LockSafeRequeue => "lock-safe-requeue",
        }
    }
}

/// What every case needs.
pub struct Ctx<'a> {
    pub admin: &'a ZkClient,
    pub connect: &'a str,
    pub root: &'a str,
    pub items: usize,
    pub size: usize,
    pub threads: usize,
    pub budget: Budget,
    pub show_progress: bool,
    pub priority_refresh: usize,
    /// The consumers' `claim_window`, when not the queue's default.
    pub claim_window: Option<usize>,
    /// The server's item ceiling, items/s.
    pub ceiling: f64,
    /// The server's pipelined creates/s.
    pub create_ceiling: f64,
}

/// How a case is set up.
#[derive(Clone, Copy, Debug)]
pub struct Spec {
    kind: Kind,
    pub producers: usize,
    pub consumers: usize,
    pub lock: bool,
    pub items_per_node: usize,
    /// The producers are threads sharing one handle that coalesces puts.
    pub coalesced: bool,
    /// The consumers fail every item's first delivery.
    pub fail_first: bool,
    /// Serial requests an item is expected to cost (for the deadline).
    serial_requests_per_item: f64,
}

/// What a case measured.
pub struct Measured {
    pub secs: f64,
    pub put_secs: f64,
    pub latencies_ns: Vec<u64>,
    pub duplicates: usize,
    pub consumer_stats: Vec<ClientStats>,
    pub producer_stats: Vec<ClientStats>,
}

/// Runs one case; failures are part of the report.
pub fn run(ctx: &Ctx, case: CaseName, e2e_rate: Option<f64>) -> CaseReport {
    let spec = |kind, producers, consumers, lock, items_per_node, serial| Spec {
        kind,
        producers,
        consumers,
        lock,
        items_per_node,
        coalesced: case == CaseName::Coalesced,
        fail_first: case == CaseName::LockSafeRequeue,
        serial_requests_per_item: serial,
    };
    // Expected serial requests per item: a create per put; a consumer's read
    // and delete plus its share of listings; a lock's create and delete.
    let spec = match case {
        CaseName::Put => spec(Kind::Plain, 1, 0, false, 1, 1.0),
        CaseName::E2e => spec(Kind::Plain, 1, 1, false, 1, 3.0),
        CaseName::E2e4x4 => spec(Kind::Plain, ctx.threads, ctx.threads, false, 1, 3.0),
        CaseName::LockSafe => spec(Kind::Plain, 1, 1, true, 1, 5.0),
        CaseName::Consumers4 => spec(Kind::Plain, 1, 4, false, 1, 3.0),
        CaseName::Consumers16 => spec(Kind::Plain, 1, 16, false, 1, 3.0),
        CaseName::LockSafe4 => spec(Kind::Plain, 1, 4, true, 1, 5.0),
        CaseName::LockSafe16 => spec(Kind::Plain, 1, 16, true, 1, 5.0),
        CaseName::Priority => spec(Kind::Priority, 1, 1, false, 1, 3.0),
        CaseName::Delay => spec(Kind::Delay, 1, 1, false, 1, 3.0),
        CaseName::Multi => spec(Kind::Plain, 1, 1, false, MULTI_ITEMS_PER_NODE, 0.05),
        CaseName::Simple | CaseName::SimpleBatched => spec(Kind::Plain, 1, 1, false, 1, 3.0),
        CaseName::Coalesced => spec(Kind::Plain, COALESCED_THREADS, 1, false, 1, 1.0),
        // Twice a lock-safe item's trip: a failed delivery and its requeue,
        // then the delivery that consumes it.
        CaseName::LockSafeRequeue => spec(Kind::Plain, 1, 1, true, 1, 10.0),
    };
    let name = case.name();
    let bar = util::bar(ctx.show_progress, ctx.items as u64, name);
    let measured = match case {
        CaseName::Simple => simple::case(ctx, name, None, &bar),
        CaseName::SimpleBatched => simple::case(ctx, name, Some(simple::BATCH), &bar),
        _ => queue_case(ctx, name, spec, &bar),
    };
    bar.finish_and_clear();
    CaseReport::new(
        name,
        ctx,
        &spec,
        measured,
        (case == CaseName::Multi).then_some(e2e_rate).flatten(),
    )
}

/// A queue kind a case builds and fills.
trait CaseKind: Send + Sized + 'static {
    fn build(builder: QueueBuilder<Vec<u8>>, refresh: usize) -> zk_queue::Result<Queue<Vec<u8>, Self>>;

    /// One item with `put`, several with `put_multi`; a random priority
    /// (0..100) or the due time `due` where the kind needs one.
    fn put(queue: &Queue<Vec<u8>, Self>, items: Vec<Vec<u8>>, due: DeliverAt) -> zk_queue::Result<()>;
}

impl CaseKind for kinds::Fifo {
    fn build(builder: QueueBuilder<Vec<u8>>, _: usize) -> zk_queue::Result<Queue<Vec<u8>, Self>> {
        builder.build_queue()
    }

    fn put(queue: &Queue<Vec<u8>, Self>, mut items: Vec<Vec<u8>>, _: DeliverAt) -> zk_queue::Result<()> {
        match items.len() {
            1 => queue.put(items.remove(0)),
            _ => queue.put_multi(items),
        }
    }
}

impl CaseKind for kinds::Priority {
    fn build(builder: QueueBuilder<Vec<u8>>, refresh: usize) -> zk_queue::Result<Queue<Vec<u8>, Self>> {
        builder.build_priority_queue(refresh)
    }

    fn put(queue: &Queue<Vec<u8>, Self>, mut items: Vec<Vec<u8>>, _: DeliverAt) -> zk_queue::Result<()> {
        let priority = fastrand::i32(0..100);
        match items.len() {
            1 => queue.put(items.remove(0), priority),
            _ => queue.put_multi(items, priority),
        }
    }
}

impl CaseKind for kinds::Delay {
    fn build(builder: QueueBuilder<Vec<u8>>, _: usize) -> zk_queue::Result<Queue<Vec<u8>, Self>> {
        builder.build_delay_queue()
    }

    fn put(queue: &Queue<Vec<u8>, Self>, mut items: Vec<Vec<u8>>, due: DeliverAt) -> zk_queue::Result<()> {
        match items.len() {
            1 => queue.put(items.remove(0), due),
            _ => queue.put_multi(items, due),
        }
    }
}

/// Counts stored items and turns a failed background put into a case failure.
struct PutWatch {
    stored: Arc<AtomicUsize>,
    collector: Arc<Collector>,
}

impl PutListener<Vec<u8>> for PutWatch {
    fn put_completed(&self, items: &[Vec<u8>]) {
        self.stored.fetch_add(items.len(), Ordering::Relaxed);
    }

    fn put_failed(&self, items: &[Vec<u8>], error: &Error) {
        self.collector
            .fail(format!("a background put of {} item(s) failed: {error}", items.len()));
    }
}

fn queue_case(ctx: &Ctx, name: &str, spec: Spec, bar: &indicatif::ProgressBar) -> anyhow::Result<Measured> {
    let path = format!("{}/{name}", ctx.root);
    let lock_path = spec.lock.then(|| format!("{}/{name}-locks", ctx.root));
    let expected_requests = spec.serial_requests_per_item * ctx.items as f64;
    let deadline = ctx.budget.deadline(&format!("case {name}"), expected_requests);
    let stop = Arc::new(AtomicBool::new(false));
    let lock = lock_path.as_deref();
    let result = match spec.kind {
        Kind::Priority => run_queue_case::<kinds::Priority>(ctx, &path, lock, spec, &deadline, &stop, bar),
        Kind::Delay => run_queue_case::<kinds::Delay>(ctx, &path, lock, spec, &deadline, &stop, bar),
        Kind::Plain => run_queue_case::<kinds::Fifo>(ctx, &path, lock, spec, &deadline, &stop, bar),
        other => Err(anyhow::anyhow!("no case builds a {other} queue")),
    };
    stop.store(true, Ordering::Release);
    let cleanup = util::remove_tree(ctx.admin, &path).and_then(|()| match &lock_path {
        Some(lock_path) => util::remove_tree(ctx.admin, lock_path),
        None => Ok(()),
    });
    let measured = result?;
    cleanup.with_context(|| format!("cleaning up case {name}"))?;
    Ok(measured)
}

fn run_queue_case<K: CaseKind>(
    ctx: &Ctx,
    path: &str,
    lock_path: Option<&str>,
    spec: Spec,
    deadline: &Deadline,
    stop: &Arc<AtomicBool>,
    bar: &indicatif::ProgressBar,
) -> anyhow::Result<Measured> {
    let collector = Arc::new(Collector::new(ctx.items));
    // Due a second ago: every item of the delay case is due at once.
    let due = DeliverAt::from(SystemTime::now() - Duration::from_secs(1));

    let mut consumers = Vec::new();
    for _ in 0..spec.consumers {
        let client = ZkClient::connect(ctx.connect).context("connecting a consumer")?;
        let record = Arc::clone(&collector);
        let fail_first = spec.fail_first;
        let mut builder = QueueBuilder::new(&client, path, BytesSerializer).consumer_with_meta(
            move |item: Vec<u8>, meta: &ItemMeta| -> Result<(), ConsumeError> {
                if fail_first && meta.attempt() == 1 {
                    return Err("failing the first delivery".into());
                }
                record.record(&item);
                Ok(())
            },
        );
        if let Some(lock_path) = lock_path {
            builder = builder.lock_path(lock_path);
        }
        if let Some(window) = ctx.claim_window {
            builder = builder.claim_window(window);
        }
        if spec.fail_first {
            builder = builder.redelivery_backoff(Duration::ZERO, Duration::ZERO);
        }
        let queue = K::build(builder, ctx.priority_refresh).context("building a consumer")?;
        consumers.push((client, queue));
    }

    // Producers are connected and started before the clock starts: a
    // handle each, or one coalescing handle all share.
    let stored = Arc::new(AtomicUsize::new(0));
    let mut producers = Vec::new();
    let handles = if spec.coalesced { 1 } else { spec.producers };
    for _ in 0..handles {
        let client = ZkClient::connect(ctx.connect).context("connecting a producer")?;
        let builder = QueueBuilder::new(&client, path, BytesSerializer)
            .put_in_background(true)
            .coalesce_puts(spec.coalesced);
        let queue = K::build(builder, ctx.priority_refresh).context("building a producer")?;
        queue.add_put_listener(PutWatch {
            stored: Arc::clone(&stored),
            collector: Arc::clone(&collector),
        });
        producers.push((client, Arc::new(queue)));
    }
    while producers.len() < spec.producers {
        let shared = producers[0].clone();
        producers.push(shared);
    }
    let producer_stats: Vec<ZkClient> = producers.iter().take(handles).map(|(c, _)| c.clone()).collect();

    let (done_tx, done_rx) = mpsc::channel();
    let started = Instant::now();
    for (p, (_client, queue)) in producers.into_iter().enumerate() {
        let indices: Vec<u64> = (p..ctx.items).step_by(spec.producers).map(|i| i as u64).collect();
        let (collector, stop, deadline, done_tx) = (
            Arc::clone(&collector),
            Arc::clone(stop),
            deadline.clone(),
            done_tx.clone(),
        );
        let (size, per_node) = (ctx.size, spec.items_per_node);
        std::thread::Builder::new()
            .name(format!("bench-producer-{p}"))
            .spawn(move || {
                let result = produce(&queue, &indices, per_node, size, due, &stop, &deadline);
                if let Err(e) = &result {
                    collector.fail(format!("producer {p}: {e:#}"));
                }
                // The last thread holding the handle closes it.
                drop(queue);
                let _ = done_tx.send(result);
            })
            .context("starting a producer thread")?;
    }
    drop(done_tx);

    let collected = if spec.consumers > 0 {
        Some(collector.wait(deadline, bar)?)
    } else {
        None
    };
    let mut put_done = started;
    for _ in 0..spec.producers {
        loop {
            match done_rx.recv_timeout(Duration::from_millis(100)) {
                Ok(result) => {
                    put_done = put_done.max(result?);
                    break;
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if spec.consumers == 0 {
                        bar.set_position(stored.load(Ordering::Relaxed) as u64);
                    }
                    if Instant::now() >= deadline.at {
                        bail!("{}: producers still putting", deadline.missed());
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => bail!("a producer thread died"),
            }
        }
    }
    if let Some(why) = collector.failure() {
        bail!("{why}");
    }
    let stored = stored.load(Ordering::Relaxed);
    ensure!(stored == ctx.items, "{stored} of {} items stored", ctx.items);

    let mut consumer_stats = Vec::new();
    for (client, queue) in consumers {
        queue.close();
        consumer_stats.push(client.stats());
        client.close();
    }
    if spec.consumers == 0 {
        let (names, _) = ctx.admin.get_children(path).context("counting the items put")?;
        let found = names.iter().filter(|n| n.starts_with("queue-")).count();
        ensure!(found == ctx.items, "{found} item nodes found after {} puts", ctx.items);
    }
    let end = collected.as_ref().map_or(put_done, |c| c.last);
    let (latencies_ns, duplicates) = collected.map_or((Vec::new(), 0), |c| (c.latencies_ns, c.duplicates));
    Ok(Measured {
        secs: (end - started).as_secs_f64(),
        put_secs: (put_done - started).as_secs_f64(),
        latencies_ns,
        duplicates,
        consumer_stats,
        producer_stats: producer_stats.iter().map(ZkClient::stats).collect(),
    })
}

/// Puts `indices` in nodes of `per_node` items, then waits for the puts to
/// be stored; returns when they were.
fn produce<K: CaseKind>(
    queue: &Queue<Vec<u8>, K>,
    indices: &[u64],
    per_node: usize,
    size: usize,
    due: DeliverAt,
    stop: &AtomicBool,
    deadline: &Deadline,
) -> anyhow::Result<Instant> {
    for chunk in indices.chunks(per_node) {
        if stop.load(Ordering::Acquire) {
            bail!("stopped");
        }
        let put_at = util::now_nanos();
        let items = chunk.iter().map(|&i| util::payload(put_at, i, size)).collect();
        K::put(queue, items, due).context("put")?;
        if Instant::now() >= deadline.at {
            bail!("{}: still putting", deadline.missed());
        }
    }
    if !queue.flush_timeout(deadline.remaining()) {
        bail!("{}: background puts still pending", deadline.missed());
    }
    Ok(Instant::now())
}
