//! zk-queue's performance report: the server's own ceiling, then every queue
//! kind end to end against it, drain scaling, and a consumer's peak memory.
//!
//! `cargo run --release --example bench -- [flags]` (`--help` lists them).
//!
//! Uses the connect string given (`--connect`, else `ZK_CONNECT`), else an
//! embedded ZooKeeper started here. Prints a table on stdout, or one JSON
//! document with `--json`; a progress bar goes to stderr when it is a
//! terminal. Fails if any part failed or missed its deadline.
//!
//! - Ceiling: pipelined creates, then deletes, of N znodes of S bytes
//!   (`create_many` / `delete_many`); the item ceiling is the create+delete
//!   rate `1 / (1/creates + 1/deletes)`. It is measured after a warm-up
//!   before the cases, and again after them; every ratio is to the better of
//!   the two (a server's JVM keeps getting faster as it warms up). A short
//!   serial probe (one create or delete at a time) sets the deadlines of the
//!   cases. Beside each measurement, a plain Java ZooKeeper client
//!   (`interop/java/CeilingPeer.java`, compiled here with `javac`) measures
//!   the same rates on the same server after its own warm-up, so the report
//!   says whether our client is slower than Java's (`--no-java` skips it;
//!   without a JDK the report says it is unavailable).
//! - Cases: each item carries its put time (nanoseconds since one `Instant`
//!   of this process, big-endian, first 8 bytes) and its index (next 8
//!   bytes); the consumer records `now - put time` (latency) and the index
//!   (loss and duplicate check). A case runs from the first put to the last
//!   consume; producers run concurrently with consumers.
//! - Priority backlogs: a preloaded priority queue of random priorities is
//!   drained by one consumer while one urgent item is put; the report gives
//!   the drain rate and the urgent item's latency.
//! - Open-loop latency: a producer paced by the clock at fixed rates, plain
//!   and lock-safe consumers, put-to-consume percentiles. They run last, after
//!   the ceiling's second measurement, so that a rate given as a share of the
//!   ceiling is a share of the best one. With `--busy-neighbour` they all
//!   run again beside a child process (this executable with `--busy-child`)
//!   that keeps one core busy for exactly those runs. Each of our runs also
//!   splits its latency into the producer's part (how late a put began, the
//!   put call) and the rest, and lists its items over 10 ms by episode.
//! - Coordination recipes (`--recipes`, see `recipes.rs`): the floor of a
//!   create and a delete one at a time, our `Mutex` uncontended and its
//!   hand-off between contenders, and Curator's mutex, semaphore and leader
//!   selector beside them (`interop/java/CuratorRecipePeer.java`).
//! - Drain scaling and memory: a queue preloaded with Curator frames by
//!   `create_many` is drained by a plain consumer in a child process (the
//!   current executable again, with `--connect C --drain-child PATH N`),
//!   which reports its time and its peak RSS (`VmHWM` of /proc/self/status).

mod cases;
mod ceiling;
mod cpu;
mod drain;
mod env;
mod java;
mod latency;
mod neighbour;
mod priority;
mod recipes;
mod report;
mod sharded;
mod simple;
mod tails;
mod util;

use std::process::ExitCode;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, ensure, Context};
use clap::Parser;
use zk_queue::ZkClient;

use cases::{CaseName, Ctx};
use report::{Document, Out, Settings};
use util::Budget;

/// zk-queue benchmark: server ceiling, queue cases, drain scaling and memory.
#[derive(Parser, Debug)]
#[command(name = "bench")]
struct Args {
    /// ZooKeeper connect string [default: ZK_CONNECT, else an embedded server started here]
    #[arg(long)]
    connect: Option<String>,
    /// Without a connect string: start an embedded ensemble of this many
    /// members instead of one server
    #[arg(long)]
    ensemble: Option<usize>,
    /// Skip the Java peers: a plain Java client's rates beside each ceiling
    /// measurement, and Curator's queue at each latency rate
    #[arg(long)]
    no_java: bool,
    /// Print one JSON document instead of tables
    #[arg(long)]
    json: bool,
    /// Items per case (and znodes of the ceiling measurement)
    #[arg(short = 'n', long = "items", default_value_t = 10_000)]
    items: usize,
    /// Bytes per item (at least 16: put time and index)
    #[arg(short = 's', long = "size", default_value_t = 100)]
    size: usize,
    /// Producers and consumers of the e2e-4x4 case
    #[arg(long, default_value_t = 4)]
    threads: usize,
    /// Cases to run, comma-separated [default: all]
    #[arg(long, value_enum, value_delimiter = ',')]
    cases: Option<Vec<CaseName>>,
    /// Queue lengths of the drain-scaling runs (the largest also gives the memory figure)
    #[arg(long, value_delimiter = ',', default_values_t = [1_000, 10_000, 40_000])]
    drain_sizes: Vec<usize>,
    /// A case fails if it takes longer than this many times its expected time
    /// (its serial requests at the measured serial request latency; at least 30 s)
    #[arg(long, default_value_t = 10.0)]
    deadline_factor: f64,
    /// `min_items_before_refresh` of the priority case
    #[arg(long, default_value_t = 10)]
    priority_refresh: usize,
    /// `claim_window` of the queue cases' consumers [default: the queue's, 64]
    #[arg(long)]
    claim_window: Option<usize>,
    /// Open-loop latency runs: items/s, or a percentage of the ceiling
    /// (`10%`); each runs Curator's plain queue (unless --no-java), then a
    /// plain and a lock-safe consumer of ours
    #[arg(long, value_delimiter = ',', default_values_t = [
        latency::Rate::PerSecond(500.0),
        latency::Rate::OfCeiling(10.0),
        latency::Rate::OfCeiling(50.0),
    ])]
    latency_rates: Vec<latency::Rate>,
    /// Backlogs of the priority-backlog runs (a preloaded priority queue
    /// drained while one urgent item is put)
    #[arg(long, value_delimiter = ',', default_values_t = [1_000, 10_000])]
    priority_backlogs: Vec<usize>,
    /// Seconds of each open-loop latency run
    #[arg(long, default_value_t = 5.0)]
    latency_secs: f64,
    /// Run the open-loop latency runs twice: alone, then beside a child
    /// process that keeps one core busy (a spin loop) for those runs
    #[arg(long)]
    busy_neighbour: bool,
    /// Internal: spin on one core until killed or the parent is gone
    #[arg(long, hide = true)]
    busy_child: bool,
    /// Also measure the coordination recipes beside Curator's: the floor
    /// (create + delete, one at a time), our Mutex uncontended and its
    /// hand-off, and Curator's mutex, semaphore and leader selector
    #[arg(long)]
    recipes: bool,
    /// Measure only the ceiling (the server's warm-up) and the recipes:
    /// no cases, drains, backlogs or latency runs
    #[arg(long)]
    recipes_only: bool,
    /// Cycles (and hand-offs) recorded per recipe, after half as many unrecorded
    #[arg(long, default_value_t = 2_000)]
    recipe_cycles: usize,
    /// Contenders of the hand-off parts, each with a client of its own
    #[arg(long, default_value_t = 8)]
    recipe_contenders: usize,
    /// Internal: drain the queue at PATH, which holds N items, and report as JSON
    #[arg(long, hide = true, num_args = 2, value_names = ["PATH", "N"])]
    drain_child: Option<Vec<String>>,
    /// Internal: the drain child's queue is sharded, with this leader path
    #[arg(long, hide = true)]
    drain_child_leader: Option<String>,
    /// Sharded backlogs: put this many items into a sharded queue (Curator's
    /// QueueSharder layout, threshold 10,000), with background puts and
    /// then with coalesced puts, and drain each in a child process; 0 skips
    #[arg(long, default_value_t = 0)]
    sharded_backlog: usize,
    /// Internal: a child's deadline in seconds (the drain child's, the busy neighbour's)
    #[arg(long, hide = true, default_value_t = 600)]
    child_timeout_secs: u64,
}

fn main() -> ExitCode {
    let args = Args::parse();
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Runs the benchmark, or the drain child when `--drain-child` is given.
/// Fails when a case or drain failed or missed its deadline.
fn run(args: &Args) -> anyhow::Result<()> {
    if let Some(path_and_n) = &args.drain_child {
        return drain::child_main(args, path_and_n).context("drain child");
    }
    if args.busy_child {
        return neighbour::child_main(args.child_timeout_secs).context("busy neighbour");
    }
    if !run_all(args)? {
        bail!("some parts failed (see above)");
    }
    Ok(())
}

/// The whole benchmark; `Ok(false)` when a case or drain failed.
fn run_all(cli: &Args) -> anyhow::Result<bool> {
    ensure!(cli.items > 0, "--items must be positive");
    ensure!(
        cli.size >= util::HEADER,
        "--size must be at least {} bytes",
        util::HEADER
    );
    ensure!(cli.threads > 0, "--threads must be positive");
    ensure!(cli.drain_sizes.iter().all(|&q| q > 0), "--drain-sizes must be positive");
    ensure!(cli.deadline_factor >= 1.0, "--deadline-factor must be at least 1");
    ensure!(cli.latency_secs > 0.0, "--latency-secs must be positive");
    ensure!(cli.ensemble.is_none_or(|n| n > 0), "--ensemble must be positive");
    ensure!(cli.recipe_cycles >= 2, "--recipe-cycles must be at least 2");
    ensure!(cli.recipe_contenders >= 2, "--recipe-contenders must be at least 2");
    let started = Instant::now();
    util::now_nanos(); // fixes the time base of put times
    let show_progress = util::progress_enabled();

    // An embedded server holds every znode in its heap: room for the
    // sharded backlog (about a gigabyte per million), else the default.
    let heap_mb = 256 + cli.sharded_backlog / 500;
    let server = env::Server::connect_or_start(cli.connect.clone(), cli.ensemble, heap_mb)?;
    let machine = env::Machine::probe(&server);
    let admin = ZkClient::connect(&server.connect).with_context(|| format!("connecting to {}", server.connect))?;
    let millis = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let root = format!("{}/run-{}-{millis}", util::BENCH_ROOT, std::process::id());
    admin.ensure_path(&root).with_context(|| format!("creating {root}"))?;

    let mut cases = match cli.recipes_only {
        true => Vec::new(),
        false => cli.cases.clone().unwrap_or_else(CaseName::all),
    };
    cases.sort();
    cases.dedup();
    let (drain_sizes, backlog_sizes, latency_rates) = match cli.recipes_only {
        true => (Vec::new(), Vec::new(), Vec::new()),
        false => (
            cli.drain_sizes.clone(),
            cli.priority_backlogs.clone(),
            cli.latency_rates.clone(),
        ),
    };
    let settings = Settings {
        items: cli.items,
        size: cli.size,
        threads: cli.threads,
        cases: cases.iter().map(|c| c.name().to_owned()).collect(),
        drain_sizes: drain_sizes.clone(),
        deadline_factor: cli.deadline_factor,
        priority_refresh: cli.priority_refresh,
        claim_window: cli.claim_window,
    };
    let out = Out::new(cli.json);
    out.header(&settings, &machine);

    let pids = server.pids();
    let meter = cpu::Meter::start(&pids);
    let mut before = ceiling::measure(
        &admin,
        &root,
        (cli.items, cli.size),
        ("before", ceiling::WARMUP),
        show_progress,
    )
    .context("measuring the server ceiling")?;
    before.cpu = meter.stop();
    let java_peer = (!cli.no_java).then(java::Peer::compile);
    let java_beside = |c: &mut ceiling::Ceiling| {
        c.java = java_peer.as_ref().map(|peer| match peer {
            Ok(peer) => peer.measure(
                &admin,
                &server.connect,
                &root,
                // The peer's JVM is new each time: it warms up its own JIT
                // (and the server) as our first measurement did.
                (c.items, c.size, ceiling::WARMUP),
                (c.creates_per_s, c.deletes_per_s, c.items_per_s),
            ),
            Err(e) => java::JavaCeiling::failed(format!("{e:#}")),
        });
    };
    java_beside(&mut before);
    let budget = Budget {
        factor: cli.deadline_factor,
        op_secs: before.serial_request_secs(),
    };

    let ctx = cases::Ctx {
        admin: &admin,
        connect: &server.connect,
        root: &root,
        items: cli.items,
        size: cli.size,
        threads: cli.threads,
        budget,
        show_progress,
        priority_refresh: cli.priority_refresh,
        claim_window: cli.claim_window,
        ceiling: before.items_per_s,
        create_ceiling: before.creates_per_s,
    };
    let mut case_reports = Vec::new();
    for case in cases {
        let e2e_rate = case_reports
            .iter()
            .find(|r: &&report::CaseReport| r.case == CaseName::E2e.name())
            .and_then(|r| r.items_per_s);
        let meter = cpu::Meter::start(&pids);
        let mut report = cases::run(&ctx, case, e2e_rate);
        report.cpu = meter.stop();
        case_reports.push(report);
    }
    let mut drains: Vec<_> = drain_sizes.iter().map(|&q| drain::run(&ctx, q)).collect();
    let mut backlogs = priority::run(&ctx, &backlog_sizes);
    let sharded = match if cli.recipes_only { 0 } else { cli.sharded_backlog } {
        0 => Vec::new(),
        items => {
            // The smallest drain's rate, what the sharded drains compare with.
            let small = drains.iter().min_by_key(|d| d.items).and_then(|d| d.items_per_s);
            sharded::run(&ctx, items, small)
        }
    };
    // Measured again, warm: the better of the two is the ceiling.
    let meter = cpu::Meter::start(&pids);
    let mut after = (!cli.recipes_only)
        .then(|| {
            ceiling::measure(&admin, &root, (cli.items, cli.size), ("after", 0), show_progress)
                .map_err(|e| eprintln!("bench: warning: measuring the ceiling after the cases: {e:#}"))
                .ok()
        })
        .flatten();
    let used = meter.stop();
    if let Some(after) = &mut after {
        after.cpu = used;
        java_beside(after);
    }
    let ceiling = ceiling::best(&before, after.as_ref());
    for report in &mut case_reports {
        report.rescale(&ceiling);
    }
    for report in &mut drains {
        report.rescale(&ceiling);
    }
    for report in &mut backlogs {
        report.rescale(&ceiling);
    }
    // Open-loop rates given as a share of the ceiling are shares of the
    // best one measured.
    let ctx = Ctx {
        ceiling: ceiling.items_per_s,
        ..ctx
    };
    let java = java_peer.as_ref().and_then(|peer| peer.as_ref().ok());
    let latencies = latency::run(
        &ctx,
        (&latency_rates, cli.latency_secs),
        java,
        &pids,
        cli.busy_neighbour,
    );
    let recipes =
        (cli.recipes || cli.recipes_only).then(|| recipes::run(&ctx, cli.recipe_cycles, cli.recipe_contenders, java));
    // A create and then a delete, one at a time: the least an item's trip
    // from put to consumer can take (the faster of the two measurements).
    let floor_ms = std::iter::once(&before)
        .chain(after.as_ref())
        .map(|c| c.serial_create_ms + c.serial_delete_ms)
        .fold(f64::INFINITY, f64::min);
    let ceilings: Vec<_> = std::iter::once(before).chain(after).collect();
    for c in &ceilings {
        out.ceiling(c, c.when == ceiling.when);
    }
    if !case_reports.is_empty() {
        out.case_header();
    }
    for report in &case_reports {
        out.case(report);
    }
    if !drains.is_empty() {
        out.drain_header();
    }
    for report in &drains {
        out.drain(report);
    }
    let scaling = report::DrainScaling::of(&drains);
    let memory = report::Memory::of(&drains);
    out.footer(scaling.as_ref(), memory.as_ref());
    cpu::print(cli.json, &ceilings, &case_reports);
    priority::print(cli.json, &backlogs);
    sharded::print(cli.json, &sharded);
    out.latency(&latencies, floor_ms);
    recipes::print(cli.json, recipes.as_ref());

    if let Err(e) = util::remove_tree(&admin, &root) {
        eprintln!("bench: warning: could not remove {root}: {e:#}");
    }
    // The shared parent goes too unless another run still uses it.
    let _ = admin.delete(util::BENCH_ROOT, None);

    let ok = case_reports.iter().all(|c| c.error.is_none())
        && drains.iter().all(|d| d.error.is_none())
        && latencies.iter().all(|l| l.error.is_none())
        && backlogs.iter().all(|b| b.error.is_none())
        && recipes.as_ref().is_none_or(|r| {
            // Curator's rows fail without a JDK, which is no failure of ours.
            r.error.is_none()
                && r.reports
                    .iter()
                    .all(|x| x.error.is_none() || x.implementation == "curator")
        });
    if cli.json {
        let document = Document {
            command: std::env::args().collect::<Vec<_>>().join(" "),
            machine,
            settings,
            ceiling,
            ceilings,
            cases: case_reports,
            drain: drains,
            drain_scaling: scaling,
            memory,
            latency: latencies,
            priority_backlogs: backlogs,
            sharded_backlogs: sharded,
            recipes,
            latency_floor_ms: floor_ms,
            total_secs: started.elapsed().as_secs_f64(),
            ok,
        };
        println!("{}", serde_json::to_string_pretty(&document)?);
    } else {
        println!("\ntotal time {:.1} s", started.elapsed().as_secs_f64());
    }
    // The clients go before an embedded server stops.
    admin.close();
    drop(server);
    Ok(ok)
}
