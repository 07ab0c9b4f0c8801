//! The server's ceiling: how fast it creates and deletes znodes when the
//! client keeps many requests in flight, and the latency of one request at
//! a time.

use std::time::Instant;

use anyhow::{bail, Context};
use serde::Serialize;
use zk_queue::{
    client::{CreateMode, Op},
    ZkClient,
};

use super::cpu::CpuUse;
use super::java::JavaCeiling;
use super::util;

/// Requests per `create_many` / `delete_many` call: the client keeps up to
/// a thousand in flight within a call (as the Java peer does throughout),
/// and every call's end lets the pipeline run dry once, so calls are few.
const CHUNK: usize = 10_000;

/// Znodes per multi of the multi ceiling: pipelined multis of this many
/// creates, then of this many deletes.
pub const MULTI_OPS: usize = 64;

/// Create+delete pairs of the serial probe.
const SERIAL_PROBES: usize = 200;

/// Znodes created and deleted (pipelined, untimed) before the first
/// measurement, so the server's JVM has compiled its hot paths.
pub const WARMUP: usize = 5_000;

#[derive(Clone, Debug, Serialize)]
pub struct Ceiling {
    /// When it was measured: `before` or `after` the cases.
    pub when: &'static str,
    pub items: usize,
    pub size: usize,
    /// Znodes created and deleted before measuring (not timed).
    pub warmup_items: usize,
    pub creates_per_s: f64,
    pub deletes_per_s: f64,
    /// Items per second for a create and a delete each:
    /// `1 / (1/creates_per_s + 1/deletes_per_s)`.
    pub items_per_s: f64,
    /// Pipelined reads (`get_data`, one request per znode) and existence
    /// checks of the same znodes: a request costs the server about as much
    /// as a create, which is why consumers read a window with one
    /// multi-read.
    pub reads_per_s: f64,
    pub exists_per_s: f64,
    /// Pipelined multis as a lock-safe acknowledge sends them: a lock's
    /// check, then the item's and the lock's deletes.
    pub multis_per_s: f64,
    /// The multi ceiling: znodes per second created by pipelined multis of
    /// [`MULTI_OPS`] creates each, deleted the same way, and the items per
    /// second for a create and a delete each. What a queue that batches its
    /// writes into multis, one znode per item, could reach at most.
    pub multi_creates_per_s: f64,
    pub multi_deletes_per_s: f64,
    pub multi_items_per_s: f64,
    /// One create at a time, mean milliseconds.
    pub serial_create_ms: f64,
    /// One delete at a time, mean milliseconds.
    pub serial_delete_ms: f64,
    /// A plain Java client's rates on the same server, measured right after
    /// (`None` with `--no-java`).
    pub java: Option<JavaCeiling>,
    /// Where the machine's CPU went while it was measured (warm-up and
    /// serial probes included).
    pub cpu: Option<CpuUse>,
}

impl Ceiling {
    /// The mean latency of one serial write, for deadlines.
    pub fn serial_request_secs(&self) -> f64 {
        (self.serial_create_ms + self.serial_delete_ms) / 2.0 / 1e3
    }
}

/// Measures the ceiling after a warm-up of `warmup` znodes (rounded up to
/// whole chunks); `when` names the moment.
pub fn measure(
    client: &ZkClient,
    root: &str,
    (items, size): (usize, usize),
    (when, warmup): (&'static str, usize),
    progress: bool,
) -> anyhow::Result<Ceiling> {
    let path = format!("{root}/ceiling");
    client.ensure_path(&path).with_context(|| format!("creating {path}"))?;
    let data = vec![b'x'; size];

    let bar = util::bar(progress, warmup as u64, "warm-up");
    for _ in (0..warmup).step_by(CHUNK) {
        let nodes: Vec<(String, Vec<u8>)> = (0..CHUNK).map(|_| (format!("{path}/w-"), data.clone())).collect();
        let created: Vec<(String, Option<i32>)> = client
            .create_many(&nodes, CreateMode::PersistentSequential)?
            .into_iter()
            .map(|r| r.map(|p| (p, None)))
            .collect::<Result<_, _>>()
            .context("a pipelined warm-up create failed")?;
        for result in client.delete_many(&created)? {
            result.context("a pipelined warm-up delete failed")?;
        }
        bar.inc(CHUNK as u64);
    }
    bar.finish_and_clear();

    let bar = util::bar(progress, items as u64, "ceiling create");
    let mut created = Vec::with_capacity(items);
    let started = Instant::now();
    for start in (0..items).step_by(CHUNK) {
        let n = CHUNK.min(items - start);
        let nodes: Vec<(String, Vec<u8>)> = (0..n).map(|_| (format!("{path}/n-"), data.clone())).collect();
        for result in client.create_many(&nodes, CreateMode::PersistentSequential)? {
            created.push(result.context("a pipelined create failed")?);
        }
        bar.inc(n as u64);
    }
    let create_secs = started.elapsed().as_secs_f64();
    bar.finish_and_clear();

    let read_secs = timed(progress, "ceiling read", &created, |chunk| {
        for result in client.get_data_many(chunk)? {
            result.context("a pipelined read failed")?;
        }
        Ok(())
    })?;
    let exists_secs = timed(progress, "ceiling exists", &created, |chunk| {
        for result in client.exists_many(chunk)? {
            result.context("a pipelined exists failed")?;
        }
        Ok(())
    })?;
    let delete_secs = timed(progress, "ceiling delete", &created, |chunk| {
        let nodes: Vec<(String, Option<i32>)> = chunk.iter().map(|p| (p.clone(), None)).collect();
        for result in client.delete_many(&nodes)? {
            result.context("a pipelined delete failed")?;
        }
        Ok(())
    })?;
    let multi_secs = lock_safe_multis(client, &path, items, &data, progress)?;
    let (batch_create_secs, batch_delete_secs) = batched(client, &path, items, &data, progress)?;

    let (mut create_serial, mut delete_serial) = (0.0, 0.0);
    for _ in 0..SERIAL_PROBES {
        let t = Instant::now();
        let (node, _) = client.create(&format!("{path}/s-"), &data, CreateMode::PersistentSequential)?;
        create_serial += t.elapsed().as_secs_f64();
        let t = Instant::now();
        client.delete(&node, None)?;
        delete_serial += t.elapsed().as_secs_f64();
    }
    util::remove_tree(client, &path)?;
    let secs = [
        create_secs,
        read_secs,
        exists_secs,
        delete_secs,
        multi_secs,
        batch_create_secs,
        batch_delete_secs,
    ];
    if secs.iter().any(|&s| s <= 0.0) {
        bail!("the ceiling measurement took no time");
    }
    let per_s = |secs: f64| items as f64 / secs;
    let (creates_per_s, reads_per_s, exists_per_s, deletes_per_s, multis_per_s) = (
        per_s(create_secs),
        per_s(read_secs),
        per_s(exists_secs),
        per_s(delete_secs),
        per_s(multi_secs),
    );
    Ok(Ceiling {
        when,
        items,
        size,
        warmup_items: warmup,
        creates_per_s,
        deletes_per_s,
        items_per_s: 1.0 / (1.0 / creates_per_s + 1.0 / deletes_per_s),
        reads_per_s,
        exists_per_s,
        multis_per_s,
        multi_creates_per_s: per_s(batch_create_secs),
        multi_deletes_per_s: per_s(batch_delete_secs),
        multi_items_per_s: items as f64 / (batch_create_secs + batch_delete_secs),
        serial_create_ms: create_serial / SERIAL_PROBES as f64 * 1e3,
        serial_delete_ms: delete_serial / SERIAL_PROBES as f64 * 1e3,
        java: None,
        cpu: None,
    })
}

/// The higher of two ceilings: the one every ratio is taken to.
pub fn best(a: &Ceiling, b: Option<&Ceiling>) -> Ceiling {
    match b {
        Some(b) if b.items_per_s > a.items_per_s => b.clone(),
        _ => a.clone(),
    }
}

/// Runs `op` over `paths` a chunk at a time; returns the seconds it took.
fn timed(
    progress: bool,
    label: &str,
    paths: &[String],
    mut op: impl FnMut(&[String]) -> anyhow::Result<()>,
) -> anyhow::Result<f64> {
    let bar = util::bar(progress, paths.len() as u64, label);
    let started = Instant::now();
    for chunk in paths.chunks(CHUNK) {
        op(chunk)?;
        bar.inc(chunk.len() as u64);
    }
    bar.finish_and_clear();
    Ok(started.elapsed().as_secs_f64())
}

/// Creates `items` item znodes and as many lock znodes (not timed), then
/// times the multis that settle them as a lock-safe acknowledge does.
fn lock_safe_multis(client: &ZkClient, path: &str, items: usize, data: &[u8], progress: bool) -> anyhow::Result<f64> {
    let mut pairs = Vec::with_capacity(items);
    for start in (0..items).step_by(CHUNK) {
        let n = CHUNK.min(items - start);
        let nodes: Vec<(String, Vec<u8>)> = (0..n)
            .flat_map(|_| {
                [
                    (format!("{path}/i-"), data.to_vec()),
                    (format!("{path}/l-"), b"lock".to_vec()),
                ]
            })
            .collect();
        let created: Vec<String> = client
            .create_many(&nodes, CreateMode::PersistentSequential)?
            .into_iter()
            .collect::<Result<_, _>>()
            .context("a pipelined create of items and locks failed")?;
        pairs.extend(created.chunks(2).map(|pair| (pair[0].clone(), pair[1].clone())));
    }
    let multis: Vec<Vec<Op>> = pairs
        .iter()
        .map(|(item, lock)| vec![Op::check(lock, 0), Op::delete(item, None), Op::delete(lock, None)])
        .collect();
    let bar = util::bar(progress, items as u64, "ceiling multi");
    let started = Instant::now();
    for chunk in multis.chunks(CHUNK) {
        for result in client.multi_many(chunk)? {
            result.context("a pipelined multi failed")?;
        }
        bar.inc(chunk.len() as u64);
    }
    bar.finish_and_clear();
    Ok(started.elapsed().as_secs_f64())
}

/// Times pipelined multis of [`MULTI_OPS`] creates for `items` znodes, then
/// multis of as many deletes; returns the seconds of each.
fn batched(client: &ZkClient, path: &str, items: usize, data: &[u8], progress: bool) -> anyhow::Result<(f64, f64)> {
    let paths: Vec<String> = (0..items).map(|i| format!("{path}/b-{i:010}")).collect();
    let create_secs = timed(progress, "ceiling multi creates", &paths, |chunk| {
        let multis: Vec<Vec<Op>> = chunk
            .chunks(MULTI_OPS)
            .map(|paths| {
                paths
                    .iter()
                    .map(|p| Op::create(p, data.to_vec(), CreateMode::Persistent))
                    .collect()
            })
            .collect();
        for result in client.multi_many(&multis)? {
            result.context("a pipelined multi of creates failed")?;
        }
        Ok(())
    })?;
    let delete_secs = timed(progress, "ceiling multi deletes", &paths, |chunk| {
        let multis: Vec<Vec<Op>> = chunk
            .chunks(MULTI_OPS)
            .map(|paths| paths.iter().map(|p| Op::delete(p, None)).collect())
            .collect();
        for result in client.multi_many(&multis)? {
            result.context("a pipelined multi of deletes failed")?;
        }
        Ok(())
    })?;
    Ok((create_secs, delete_secs))
}
