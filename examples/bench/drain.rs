//! Drain scaling and memory: a preloaded queue drained by a plain consumer
//! in a child process (this executable with `--drain-child PATH N`), which
//! reports its drain time and peak RSS as one JSON line on stdout.

use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context};
use serde::{Deserialize, Serialize};
use zk_queue::{client::CreateMode, BytesSerializer, ConsumeError, QueueBuilder, ZkClient};

use super::cases::Ctx;
use super::report::DrainReport;
use super::util::{self, Requests};

/// Nodes per `create_many` call of the preload.
const CHUNK: usize = 1_000;

/// How long the parent waits beyond the child's own deadline (process start,
/// connecting, closing) before it kills the child.
const CHILD_GRACE: Duration = Duration::from_secs(20);

/// What the drain child reports.
#[derive(Debug, Serialize, Deserialize)]
pub struct ChildReport {
    pub items: usize,
    /// From building the consumer (which starts it) to its last consumed item.
    pub secs: f64,
    /// Peak RSS after connecting, before the consumer started.
    pub vmhwm_before_kb: u64,
    /// Peak RSS at the end of the drain.
    pub vmhwm_kb: u64,
    pub vmrss_kb: u64,
    pub requests_per_item: Requests,
}

/// Preloads a queue of `q` items, has a child drain it, cleans up.
pub fn run(ctx: &Ctx, q: usize) -> DrainReport {
    let path = format!("{}/drain-{q}", ctx.root);
    let result = drain(ctx, &path, q);
    let cleanup = util::remove_tree(ctx.admin, &path);
    let result = result
        .and_then(|r| cleanup.map(|()| r).with_context(|| format!("cleaning up {path}")))
        .with_context(|| format!("drain of {q} items"));
    DrainReport::new(q, ctx.ceiling, result)
}

/// A Curator item frame holding one item.
fn frame(item: &[u8]) -> Vec<u8> {
    let mut frame = Vec::with_capacity(item.len() + 10);
    frame.extend_from_slice(&[0, 1, 0, 1, 1]);
    frame.extend_from_slice(&i32::try_from(item.len()).expect("a small item").to_be_bytes());
    frame.extend_from_slice(item);
    frame.push(2);
    frame
}

fn drain(ctx: &Ctx, path: &str, q: usize) -> anyhow::Result<(f64, ChildReport)> {
    ctx.admin
        .ensure_path(path)
        .with_context(|| format!("creating {path}"))?;
    let bar = util::bar(ctx.show_progress, q as u64, &format!("preload {q}"));
    let started = Instant::now();
    for start in (0..q).step_by(CHUNK) {
        let end = (start + CHUNK).min(q);
        let nodes: Vec<(String, Vec<u8>)> = (start..end)
            .map(|i| (format!("{path}/queue-"), frame(&util::payload(0, i as u64, ctx.size))))
            .collect();
        for result in ctx.admin.create_many(&nodes, CreateMode::PersistentSequential)? {
            result.context("a pipelined preload create failed")?;
        }
        bar.inc((end - start) as u64);
    }
    let preload_secs = started.elapsed().as_secs_f64();
    bar.finish_and_clear();
    let report = drain_in_child(ctx, path, q, None)?;
    let (left, _) = ctx.admin.get_children(path).context("listing the drained queue")?;
    ensure!(left.is_empty(), "{} nodes left in the drained queue", left.len());
    Ok((preload_secs, report))
}

/// Drains the `q` items of the queue at `path` (sharded, with `leader` as
/// its leader path) in a child process; its report.
pub fn drain_in_child(ctx: &Ctx, path: &str, q: usize, leader: Option<&str>) -> anyhow::Result<ChildReport> {
    let deadline = ctx.budget.deadline(&format!("drain of {q} items"), 3.0 * q as f64);
    let exe = std::env::current_exe().context("locating the bench binary")?;
    let mut command = Command::new(exe);
    command
        .args(["--connect", ctx.connect])
        .args(["--drain-child", path, &q.to_string()])
        .args(["--child-timeout-secs", &deadline.allowed.as_secs().max(1).to_string()]);
    if let Some(leader) = leader {
        command.args(["--drain-child-leader", leader]);
    }
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .context("starting the drain child")?;
    let spinner = util::spinner(
        ctx.show_progress,
        &format!("drain {q}"),
        "the consumer process is draining",
    );
    let status = loop {
        if let Some(status) = child.try_wait().context("waiting for the drain child")? {
            break status;
        }
        if Instant::now() >= deadline.at + CHILD_GRACE {
            let _ = child.kill();
            let _ = child.wait();
            bail!("{} (the child was killed)", deadline.missed());
        }
        spinner.tick();
        std::thread::sleep(Duration::from_millis(50));
    };
    spinner.finish_and_clear();
    let mut stdout = String::new();
    if let Some(mut out) = child.stdout.take() {
        out.read_to_string(&mut stdout)
            .context("reading the drain child's report")?;
    }
    ensure!(status.success(), "the drain child failed ({status})");
    let line = stdout.lines().last().context("the drain child printed no report")?;
    let report: ChildReport =
        serde_json::from_str(line).with_context(|| format!("the drain child's report {line:?}"))?;
    ensure!(report.items == q, "the child drained {} of {q} items", report.items);
    Ok(report)
}

/// The child: drains `N` items from `PATH` with a plain consumer.
/// The drain child's consumer.
enum Consumer {
    Plain(zk_queue::DistributedQueue<Vec<u8>>),
    Sharded(zk_queue::ShardedQueue<Vec<u8>>),
}

pub fn child_main(cli: &super::Args, args: &[String]) -> anyhow::Result<()> {
    let [path, n] = args else {
        bail!("--drain-child takes PATH and N")
    };
    let n: usize = n.parse().with_context(|| format!("--drain-child N: {n:?}"))?;
    let connect = cli.connect.as_deref().context("--drain-child needs --connect")?;
    let deadline = Instant::now() + Duration::from_secs(cli.child_timeout_secs);
    let client = ZkClient::connect(connect).with_context(|| format!("connecting to {connect}"))?;
    let vmhwm_before_kb = util::proc_status_kb("VmHWM")?;

    let progress = Arc::new((Mutex::new((0usize, None::<Instant>)), Condvar::new()));
    let counter = Arc::clone(&progress);
    // The queue consumes from the moment it is built.
    let started = Instant::now();
    let builder =
        QueueBuilder::new(&client, path, BytesSerializer).consumer(move |item: Vec<u8>| -> Result<(), ConsumeError> {
            std::hint::black_box(item);
            let (count, done) = &*counter;
            let mut count = count.lock().unwrap_or_else(|e| e.into_inner());
            count.0 += 1;
            count.1 = Some(Instant::now());
            if count.0 >= n {
                done.notify_all();
            }
            Ok(())
        });
    // A sharded queue (with its leader path) is drained over every shard.
    let queue = match &cli.drain_child_leader {
        Some(leader) => Consumer::Sharded(
            builder
                .build_sharded_queue(leader, super::sharded::policy())
                .context("building the sharded consumer")?,
        ),
        None => Consumer::Plain(builder.build_queue().context("building the consumer")?),
    };
    let (count, done) = &*progress;
    let mut state = count.lock().unwrap_or_else(|e| e.into_inner());
    while state.0 < n {
        let now = Instant::now();
        if now >= deadline {
            bail!(
                "drain of {n} items did not finish within {} s: {} consumed",
                cli.child_timeout_secs,
                state.0
            );
        }
        state = done
            .wait_timeout(state, deadline - now)
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
    let (consumed, last) = (state.0, state.1.expect("an item was consumed"));
    drop(state);
    match queue {
        Consumer::Plain(queue) => drop(queue.close()),
        Consumer::Sharded(queue) => drop(queue.close()),
    }
    let report = ChildReport {
        items: consumed,
        secs: (last - started).as_secs_f64(),
        vmhwm_before_kb,
        vmhwm_kb: util::proc_status_kb("VmHWM")?,
        vmrss_kb: util::proc_status_kb("VmRSS")?,
        requests_per_item: Requests::per_item(&[client.stats()], consumed),
    };
    client.close();
    println!("{}", serde_json::to_string(&report)?);
    Ok(())
}
