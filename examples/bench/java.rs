//! Java peers on the same server, compiled with `javac` against Debian's
//! ZooKeeper and Curator jars once per run: a plain Java client's pipelined
//! create and delete rates beside each ceiling measurement
//! (`interop/java/CeilingPeer.java`, same sizes and warm-up), and Curator's
//! plain queue at each open-loop latency rate
//! (`interop/java/CuratorLatencyPeer.java`), and Curator's coordination
//! recipes (`interop/java/CuratorRecipePeer.java`, `--recipes`). Without a
//! JDK or the jars the comparison says why it is missing; the benchmark
//! goes on.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use zk_queue::ZkClient;

use super::recipes::CuratorRecipes;
use super::util;

/// The peers' sources, written out to be compiled.
const SOURCES: &[(&str, &str)] = &[
    (
        "PeerWatchdog.java",
        include_str!("../../interop/java/PeerWatchdog.java"),
    ),
    ("CeilingPeer.java", include_str!("../../interop/java/CeilingPeer.java")),
    (
        "CuratorLatencyPeer.java",
        include_str!("../../interop/java/CuratorLatencyPeer.java"),
    ),
    (
        "CuratorRecipePeer.java",
        include_str!("../../interop/java/CuratorRecipePeer.java"),
    ),
];

include!("../../interop/java/jars.rs");

/// How long one peer run may take before it is killed.
const TIMEOUT: Duration = Duration::from_secs(180);

/// The Java client's rates, and ours divided by them.
#[derive(Clone, Debug, Default, Serialize)]
pub struct JavaCeiling {
    pub creates_per_s: Option<f64>,
    pub deletes_per_s: Option<f64>,
    pub items_per_s: Option<f64>,
    /// Our client's rate ÷ the Java client's, for creates, deletes and items.
    pub ours_to_java_creates: Option<f64>,
    pub ours_to_java_deletes: Option<f64>,
    pub ours_to_java_items: Option<f64>,
    /// Why there are no rates (no JDK, the peer failed).
    pub error: Option<String>,
}

impl JavaCeiling {
    pub fn failed(error: String) -> JavaCeiling {
        JavaCeiling {
            error: Some(error),
            ..JavaCeiling::default()
        }
    }
}

/// What the Curator latency peer measured.
#[derive(Deserialize)]
pub struct CuratorLatency {
    pub achieved_rate: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

#[derive(Deserialize)]
struct PeerOutput {
    creates_per_s: f64,
    deletes_per_s: f64,
    items_per_s: f64,
}

/// The compiled peer.
pub struct Peer {
    dir: PathBuf,
    classpath: String,
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Peer {
    /// Compiles the peer into a private temporary directory.
    pub fn compile() -> anyhow::Result<Peer> {
        let jars: Vec<String> = JARS.iter().map(|jar| format!("{JAR_DIR}/{jar}")).collect();
        if let Some(missing) = jars.iter().find(|jar| !Path::new(jar).exists()) {
            bail!(
                "unavailable: {missing} is missing (install the Debian packages zookeeper and libcurator-recipes-java)"
            );
        }
        let dir = std::env::temp_dir().join(format!("zkq-bench-java-{}", std::process::id()));
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let peer = Peer {
            classpath: format!("{}:{}", dir.display(), jars.join(":")),
            dir,
        };
        let mut sources = Vec::new();
        for (name, text) in SOURCES {
            let source = peer.dir.join(name);
            std::fs::write(&source, text).with_context(|| format!("writing {}", source.display()))?;
            sources.push(source);
        }
        let out = Command::new("javac")
            .args(["-encoding", "UTF-8", "-implicit:none", "-cp", &peer.classpath, "-d"])
            .arg(&peer.dir)
            .args(&sources)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| {
                anyhow::anyhow!("unavailable: cannot run javac ({e}); install a JDK (default-jdk-headless)")
            })?;
        if !out.status.success() {
            bail!("javac failed: {}", String::from_utf8_lossy(&out.stderr).trim());
        }
        Ok(peer)
    }

    /// Runs the peer against `connect` under `{root}/java-ceiling`, and sets
    /// our rates beside its own.
    pub fn measure(
        &self,
        admin: &ZkClient,
        connect: &str,
        root: &str,
        (items, size, warmup): (usize, usize, usize),
        ours: (f64, f64, f64),
    ) -> JavaCeiling {
        let parent = format!("{root}/java-ceiling");
        let result = admin
            .ensure_path(&parent)
            .with_context(|| format!("creating {parent}"))
            .and_then(|()| {
                let args = [
                    connect.to_owned(),
                    parent.clone(),
                    items.to_string(),
                    size.to_string(),
                    warmup.to_string(),
                ];
                self.run::<PeerOutput>("CeilingPeer", &args)
            });
        let _ = util::remove_tree(admin, &parent);
        match result {
            Ok(rates) => JavaCeiling {
                creates_per_s: Some(rates.creates_per_s),
                deletes_per_s: Some(rates.deletes_per_s),
                items_per_s: Some(rates.items_per_s),
                ours_to_java_creates: Some(ours.0 / rates.creates_per_s),
                ours_to_java_deletes: Some(ours.1 / rates.deletes_per_s),
                ours_to_java_items: Some(ours.2 / rates.items_per_s),
                error: None,
            },
            Err(e) => JavaCeiling::failed(format!("{e:#}")),
        }
    }

    /// Curator's plain queue at `rate` items/s for `items` items of `size`
    /// bytes (open loop) under `path`, which is removed afterwards; the
    /// peer's JVM first warms up on `warmup` items, consumed as fast as
    /// they come.
    pub fn curator_latency(
        &self,
        admin: &ZkClient,
        connect: &str,
        path: &str,
        (rate, items, size, warmup): (f64, usize, usize, usize),
    ) -> anyhow::Result<CuratorLatency> {
        let args = [
            connect.to_owned(),
            path.to_owned(),
            format!("{rate}"),
            items.to_string(),
            size.to_string(),
            warmup.to_string(),
        ];
        let result = self.run::<CuratorLatency>("CuratorLatencyPeer", &args);
        let _ = util::remove_tree(admin, path);
        result
    }

    /// Curator's recipes under `path` (which exists, and is removed
    /// afterwards): `cycles` of each after `warmup`, hand-offs between
    /// `contenders` (see `interop/java/CuratorRecipePeer.java`).
    pub fn curator_recipes(
        &self,
        admin: &ZkClient,
        connect: &str,
        path: &str,
        (cycles, warmup, contenders): (usize, usize, usize),
    ) -> anyhow::Result<CuratorRecipes> {
        let args = [
            connect.to_owned(),
            path.to_owned(),
            cycles.to_string(),
            warmup.to_string(),
            contenders.to_string(),
        ];
        let result = self.run::<CuratorRecipes>("CuratorRecipePeer", &args);
        let _ = util::remove_tree(admin, path);
        result
    }

    /// Runs the class `main` with `args` and reads its one JSON line.
    fn run<T: DeserializeOwned>(&self, main: &str, args: &[String]) -> anyhow::Result<T> {
        let mut child = Command::new("java")
            .arg(format!("-Dpeer.timeout.ms={}", TIMEOUT.as_millis()))
            .args(["-cp", &self.classpath, main])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| anyhow::anyhow!("unavailable: cannot run java ({e})"))?;
        let deadline = Instant::now() + TIMEOUT + Duration::from_secs(30);
        let status = loop {
            if let Some(status) = child.try_wait()? {
                break status;
            }
            if Instant::now() >= deadline {
                let _ = child.kill();
                let _ = child.wait();
                bail!("the Java peer {main} did not finish within {TIMEOUT:?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let (mut stdout, mut stderr) = (String::new(), String::new());
        if let Some(mut out) = child.stdout.take() {
            out.read_to_string(&mut stdout)?;
        }
        if let Some(mut err) = child.stderr.take() {
            err.read_to_string(&mut stderr)?;
        }
        if !status.success() {
            bail!("the Java peer {main} failed ({status}): {}", stderr.trim());
        }
        let line = stdout.lines().last().unwrap_or_default();
        serde_json::from_str(line).with_context(|| format!("the Java peer {main} printed {stdout:?}"))
    }
}
