//! The server under test and the machine it runs on.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use serde::Serialize;
use zk_queue::testing::{connect_string_from_env, TestingCluster, TestingServer};

/// The ZooKeeper this run talks to; an embedded one lives as long as this.
pub struct Server {
    pub connect: String,
    pub origin: String,
    pub embedded: Option<TestingServer>,
    /// An embedded ensemble (`--ensemble N`), stopped when this is dropped.
    pub _ensemble: Option<TestingCluster>,
}

impl Server {
    /// `--connect`, else `ZK_CONNECT`, else an embedded server started here
    /// (an ensemble of `ensemble` members if given).
    /// An embedded server gets `heap_mb` of heap.
    pub fn connect_or_start(
        connect: Option<String>,
        ensemble: Option<usize>,
        heap_mb: usize,
    ) -> anyhow::Result<Server> {
        let given = |connect: String, origin: &str| Server {
            connect,
            origin: origin.to_owned(),
            embedded: None,
            _ensemble: None,
        };
        if let Some(connect) = connect {
            return Ok(given(connect, "--connect"));
        }
        if let Some(connect) = connect_string_from_env() {
            return Ok(given(connect, "ZK_CONNECT"));
        }
        if let Some(members) = ensemble {
            let cluster = TestingCluster::start(members)
                .with_context(|| format!("starting an embedded ensemble of {members} (TestingCluster)"))?;
            return Ok(Server {
                connect: cluster.connect_string(),
                origin: format!("embedded TestingCluster of {members} members (forceSync on)"),
                embedded: None,
                _ensemble: Some(cluster),
            });
        }
        let server = TestingServer::builder()
            .max_heap_mb(heap_mb)
            .start()
            .context("starting an embedded ZooKeeper (TestingServer)")?;
        Ok(Server {
            connect: server.connect_string(),
            origin: "embedded TestingServer (forceSync on)".to_owned(),
            embedded: Some(server),
            _ensemble: None,
        })
    }
}

impl Server {
    /// The embedded server's process (none for an ensemble or a server not
    /// started here).
    pub fn pids(&self) -> Vec<u32> {
        self.embedded.iter().filter_map(TestingServer::pid).collect()
    }
}

/// What the figures were measured on.
#[derive(Debug, Serialize)]
pub struct Machine {
    pub nproc: usize,
    pub mem_total_mb: Option<f64>,
    pub cpu_model: Option<String>,
    pub kernel: Option<String>,
    pub server_connect: String,
    pub server_origin: String,
    pub server_version: Option<String>,
    /// The embedded server's data directory and its filesystem type.
    pub server_data_dir: Option<String>,
    pub server_data_fs: Option<String>,
}

impl Machine {
    pub fn probe(server: &Server) -> Machine {
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let mem_total_mb = meminfo
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
            .map(|kb| kb / 1024.0);
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu_model = cpuinfo
            .lines()
            .find_map(|l| l.strip_prefix("model name")?.split_once(':'))
            .map(|(_, m)| m.trim().to_owned());
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .ok()
            .map(|k| k.trim().to_owned());
        let data_dir = server.embedded.as_ref().map(|s| s.data_dir().to_path_buf());
        Machine {
            nproc: std::thread::available_parallelism().map_or(1, |n| n.get()),
            mem_total_mb,
            cpu_model,
            kernel,
            server_connect: server.connect.clone(),
            server_origin: server.origin.clone(),
            server_version: server_version(&server.connect),
            server_data_fs: data_dir.as_deref().and_then(filesystem_of),
            server_data_dir: data_dir.map(|d| d.display().to_string()),
        }
    }
}

/// The version from the `srvr` four-letter word (allowed by default) of the
/// first server of the connect string.
fn server_version(connect: &str) -> Option<String> {
    let hosts = connect.split('/').next()?;
    let addr = hosts.split(',').next()?.to_socket_addrs().ok()?.next()?;
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    stream.write_all(b"srvr").ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    let line = answer.lines().find_map(|l| l.strip_prefix("Zookeeper version:"))?;
    let version = line.split(", built").next().unwrap_or(line).trim();
    // Debian's build leaves an unexpanded `-${mvngit.commit.id}` behind.
    Some(version.split("-${").next().unwrap_or(version).to_owned())
}

/// The type of the filesystem holding `path` (longest mount-point prefix).
fn filesystem_of(path: &Path) -> Option<String> {
    let path = path.canonicalize().ok()?;
    let mounts = std::fs::read_to_string("/proc/mounts").ok()?;
    mounts
        .lines()
        .filter_map(|l| {
            let mut fields = l.split_whitespace();
            let (_, mount, fs) = (fields.next()?, fields.next()?, fields.next()?);
            path.starts_with(mount)
                .then(|| (mount.len(), format!("{fs} on {mount}")))
        })
        .max_by_key(|(len, _)| *len)
        .map(|(_, fs)| fs)
}
