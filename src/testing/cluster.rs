//! [`TestingCluster`]: a ZooKeeper ensemble of real servers on loopback ports.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tempfile::TempDir;

use super::certs::ServerTls;
use super::error::ServerError;
use super::launch::{self, Launch};
use super::probe;
use super::process::{self, GuardedJvm};

/// How long an ensemble may take to elect a leader and serve.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);

/// How many times an ensemble is started on new ports when one was taken.
const START_ATTEMPTS: u32 = 3;

/// An ensemble of ZooKeeper servers (Debian's package, `QuorumPeerMain`) on
/// free loopback ports, each with its own data directory in one temporary
/// directory. Members are numbered from 0. The ensemble stops on drop; as
/// with [`TestingServer`](super::TestingServer), its JVMs also die with the
/// process that started them.
///
/// ```no_run
/// use zk_queue::testing::TestingCluster;
///
/// let cluster = TestingCluster::start(3)?;
/// let client = zk_queue::ZkClient::connect(&cluster.connect_string())?;
/// let leader = cluster.leader().expect("a leader");
/// cluster.kill(leader)?; // the others elect a new leader
/// client.exists("/")?;
/// cluster.restart(leader)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct TestingCluster {
    root: TempDir,
    java: PathBuf,
    members: Vec<Member>,
}

struct Member {
    client_port: u16,
    secure_port: Option<u16>,
    dir: PathBuf,
    cfg: PathBuf,
    log: PathBuf,
    jvm: Mutex<Option<GuardedJvm>>,
}

impl TestingCluster {
    /// Starts an ensemble of `size` members (3 or 5 make sense) and waits
    /// until every member serves.
    ///
    /// # Errors
    /// Java or ZooKeeper missing, no free ports, or the ensemble not serving
    /// within a minute (the error quotes the member's log).
    ///
    /// ``` no_run
    /// use zk_queue::testing::TestingCluster;
    /// let cluster = TestingCluster::start(3)?;
    /// assert_eq!(cluster.size(), 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn start(size: usize) -> Result<TestingCluster, ServerError> {
        TestingCluster::start_with(size, None)
    }

    /// Starts an ensemble of `size` members each with a secure client port
    /// too, speaking TLS as `tls` says (see
    /// [`TestingServerBuilder::secure_client_port`](super::TestingServerBuilder::secure_client_port)),
    /// and waits until every member serves on both.
    ///
    /// # Errors
    /// As [`start`](TestingCluster::start).
    ///
    /// ``` no_run
    /// use zk_queue::testing::{ServerCertificate, TestCertificates, TestingCluster};
    /// let certs = TestCertificates::generate()?;
    /// let cluster = TestingCluster::start_with_tls(3, certs.server_tls(ServerCertificate::Valid))?;
    /// println!("tls at {}", cluster.secure_connect_string().unwrap());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn start_with_tls(size: usize, tls: ServerTls) -> Result<TestingCluster, ServerError> {
        TestingCluster::start_with(size, Some(&tls))
    }

    fn start_with(size: usize, tls: Option<&ServerTls>) -> Result<TestingCluster, ServerError> {
        // Free ports are picked, then bound by the servers: another process may
        // take one in between. Then the ensemble starts again on new ports.
        let mut attempt = 1;
        loop {
            match TestingCluster::start_once(size, tls) {
                Err(ServerError::PortInUse { port, .. }) if attempt < START_ATTEMPTS => {
                    log::debug!("port {port} was taken; starting the ensemble again on new ports");
                    attempt += 1;
                }
                other => return other,
            }
        }
    }

    fn start_once(size: usize, tls: Option<&ServerTls>) -> Result<TestingCluster, ServerError> {
        if size == 0 {
            return Err(ServerError::InvalidConfig {
                reason: "an ensemble needs at least one member".into(),
            });
        }
        launch::check_zookeeper_installed()?;
        let java = process::find_java()?;
        let root = tempfile::Builder::new()
            .prefix("zk-queue-ensemble-")
            .tempdir()
            .map_err(|e| ServerError::io("creating the ensemble's directory", e))?;
        let mut ports = Vec::with_capacity(size);
        for _ in 0..size {
            ports.push((launch::free_port()?, launch::free_port()?, launch::free_port()?));
        }
        let mut servers = String::new();
        for (i, (_, peer, election)) in ports.iter().enumerate() {
            let _ = writeln!(servers, "server.{}=127.0.0.1:{peer}:{election}", i + 1);
        }
        let mut members = Vec::with_capacity(size);
        for (i, (client_port, _, _)) in ports.iter().enumerate() {
            let dir = root.path().join(format!("member-{i}"));
            let data = dir.join("data");
            std::fs::create_dir_all(&data).map_err(|e| ServerError::io("creating a member's data directory", e))?;
            std::fs::write(data.join("myid"), format!("{}\n", i + 1))
                .map_err(|e| ServerError::io("writing a member's myid", e))?;
            let secure_port = match tls {
                Some(_) => Some(launch::free_port()?),
                None => None,
            };
            let mut cfg = format!(
                "tickTime=200\ninitLimit=25\nsyncLimit=10\ndataDir={}\nclientPort={client_port}\n\
                 clientPortAddress=127.0.0.1\nadmin.enableServer=false\n4lw.commands.whitelist=*\n\
                 minSessionTimeout=400\nmaxSessionTimeout=60000\n{servers}",
                data.display()
            );
            if let (Some(tls), Some(port)) = (tls, secure_port) {
                cfg.push_str(&tls.zoo_cfg(port));
            }
            std::fs::write(dir.join("zoo.cfg"), cfg).map_err(|e| ServerError::io("writing a member's zoo.cfg", e))?;
            members.push(Member {
                client_port: *client_port,
                secure_port,
                cfg: dir.join("zoo.cfg"),
                log: dir.join("server.log"),
                dir,
                jvm: Mutex::new(None),
            });
        }
        let cluster = TestingCluster { root, java, members };
        // Every member first, then wait: none serves before a quorum is up.
        let mut started = Vec::with_capacity(size);
        for i in 0..size {
            let launch = cluster.launch(i);
            started.push(launch.spawn()?);
        }
        for (i, (mut jvm, log_start)) in started.into_iter().enumerate() {
            let begun = Instant::now();
            cluster.launch(i).wait_ready(&mut jvm, log_start)?;
            let jvm = cluster.wait_for_secure_port(i, jvm, begun, log_start)?;
            *cluster.members[i].jvm.lock() = Some(jvm);
        }
        log::info!("zookeeper ensemble of {size} ready: {}", cluster.connect_string());
        Ok(cluster)
    }

    fn launch(&self, member: usize) -> Launch<'_> {
        let m = &self.members[member];
        Launch {
            java: &self.java,
            // An election's wait between vote checks backs off up to 60 s by
            // default; on a loaded test machine that can stall a new leader
            // for a minute after the old one dies.
            // A member cut off from its quorum serves read-only clients, as
            // production ensembles often let it, so a client's refusal of a
            // read-only server can be tested.
            system_properties: vec![
                "-Dzookeeper.fastleader.maxNotificationInterval=2000".to_owned(),
                "-Dreadonlymode.enabled=true".to_owned(),
            ],
            cfg: &m.cfg,
            root: &m.dir,
            data_dir: self.root.path(),
            log: &m.log,
            port: m.client_port,
            startup_timeout: STARTUP_TIMEOUT,
            main_class: launch::QUORUM_PEER,
        }
    }

    /// The connect string naming every member.
    ///
    /// ``` no_run
    /// use zk_queue::testing::TestingCluster;
    /// let cluster = TestingCluster::start(3)?;
    /// let client = zk_queue::ZkClient::connect(&cluster.connect_string())?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn connect_string(&self) -> String {
        self.members
            .iter()
            .map(|m| format!("127.0.0.1:{}", m.client_port))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The connect string naming every member's secure client port, if the
    /// ensemble has them ([`start_with_tls`](TestingCluster::start_with_tls)).
    ///
    /// ``` no_run
    /// use zk_queue::testing::TestingCluster;
    /// assert_eq!(TestingCluster::start(3)?.secure_connect_string(), None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn secure_connect_string(&self) -> Option<String> {
        let ports: Option<Vec<String>> = self
            .members
            .iter()
            .map(|m| m.secure_port.map(|port| format!("127.0.0.1:{port}")))
            .collect();
        ports.map(|ports| ports.join(","))
    }

    /// The connect string of one member.
    ///
    /// ``` no_run
    /// use zk_queue::testing::TestingCluster;
    /// let cluster = TestingCluster::start(3)?;
    /// // a client that can only reach member 0:
    /// let client = zk_queue::ZkClient::connect(&cluster.member_connect_string(0))?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn member_connect_string(&self, member: usize) -> String {
        format!("127.0.0.1:{}", self.members[member].client_port)
    }

    /// The number of members.
    ///
    /// ``` no_run
    /// use zk_queue::testing::TestingCluster;
    /// let cluster = TestingCluster::start(3)?;
    /// for member in 0..cluster.size() {
    ///     assert!(cluster.is_running(member));
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn size(&self) -> usize {
        self.members.len()
    }

    /// The member that leads now, as its `srvr` reply says.
    ///
    /// ``` no_run
    /// use zk_queue::testing::TestingCluster;
    /// let cluster = TestingCluster::start(3)?;
    /// let leader = cluster.leader().expect("an elected leader");
    /// println!("member {leader} leads");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn leader(&self) -> Option<usize> {
        (0..self.members.len()).find(|&i| {
            let addr = launch::loopback(self.members[i].client_port);
            probe::four_letter_word(addr, "srvr", Duration::from_secs(1)).is_ok_and(|r| r.contains("Mode: leader"))
        })
    }

    /// Whether a member serves read-only now, as its `isro` reply says: it
    /// lost its quorum and serves only clients that ask for read-only
    /// sessions (the members run with `readonlymode.enabled`).
    ///
    /// ``` no_run
    /// use zk_queue::testing::TestingCluster;
    /// let cluster = TestingCluster::start(3)?;
    /// assert!(!cluster.is_read_only(0));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_read_only(&self, member: usize) -> bool {
        let addr = launch::loopback(self.members[member].client_port);
        probe::four_letter_word(addr, "isro", Duration::from_secs(1)).is_ok_and(|r| r.trim() == "ro")
    }

    /// Waits up to `timeout` for a member to lead, as [`leader`](Self::leader)
    /// tells; `None` if none does by then (an election may still be going on
    /// after a member died or came back).
    ///
    /// ``` no_run
    /// use std::time::Duration;
    /// use zk_queue::testing::TestingCluster;
    /// let cluster = TestingCluster::start(3)?;
    /// let leader = cluster.wait_for_leader(Duration::from_secs(30)).expect("an elected leader");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wait_for_leader(&self, timeout: Duration) -> Option<usize> {
        let deadline = Instant::now().checked_add(timeout);
        loop {
            if let Some(leader) = self.leader() {
                return Some(leader);
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return None;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The file receiving a member's output, appended to by every start.
    ///
    /// ``` no_run
    /// use zk_queue::testing::TestingCluster;
    /// let cluster = TestingCluster::start(3)?;
    /// println!("member 0 logs to {}", cluster.log_path(0).display());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn log_path(&self, member: usize) -> &Path {
        &self.members[member].log
    }

    /// Kills a member's JVM (`SIGKILL`); its data stays.
    ///
    /// # Errors
    /// [`ServerError::NotRunning`] if it is not running.
    ///
    /// ``` no_run
    /// use zk_queue::testing::TestingCluster;
    /// let cluster = TestingCluster::start(3)?;
    /// cluster.kill(0)?;
    /// assert!(!cluster.is_running(0));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn kill(&self, member: usize) -> Result<(), ServerError> {
        let mut jvm = self.members[member].jvm.lock().take().ok_or(ServerError::NotRunning)?;
        jvm.kill()?;
        Ok(())
    }

    /// Starts a killed member again on its ports and data, and waits until it
    /// serves (which needs a quorum of the others).
    ///
    /// ``` no_run
    /// use zk_queue::testing::TestingCluster;
    /// let cluster = TestingCluster::start(3)?;
    /// cluster.kill(1)?;
    /// cluster.restart(1)?; // back with its data
    /// assert!(cluster.is_running(1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn restart(&self, member: usize) -> Result<(), ServerError> {
        if let Some(mut old) = self.members[member].jvm.lock().take() {
            let _ = old.kill();
        }
        let launch = self.launch(member);
        let begun = Instant::now();
        let (mut jvm, log_start) = launch.spawn()?;
        launch.wait_ready(&mut jvm, log_start)?;
        let jvm = self.wait_for_secure_port(member, jvm, begun, log_start)?;
        *self.members[member].jvm.lock() = Some(jvm);
        Ok(())
    }

    /// Waits until a member's JVM has bound its secure client port, if any,
    /// and it accepts connections (its log from byte `log_start` says so).
    fn wait_for_secure_port(
        &self,
        member: usize,
        jvm: GuardedJvm,
        begun: Instant,
        log_start: u64,
    ) -> Result<GuardedJvm, ServerError> {
        let m = &self.members[member];
        match m.secure_port {
            Some(port) => launch::wait_listening(jvm, port, begun, STARTUP_TIMEOUT, (&m.log, log_start)),
            None => Ok(jvm),
        }
    }

    /// Whether a member's JVM runs.
    ///
    /// ``` no_run
    /// use zk_queue::testing::TestingCluster;
    /// let cluster = TestingCluster::start(3)?;
    /// assert!(cluster.is_running(2));
    /// cluster.kill(2)?;
    /// assert!(!cluster.is_running(2));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_running(&self, member: usize) -> bool {
        self.members[member]
            .jvm
            .lock()
            .as_mut()
            .is_some_and(GuardedJvm::is_alive)
    }
}

impl Drop for TestingCluster {
    fn drop(&mut self) {
        for member in &self.members {
            if let Some(mut jvm) = member.jvm.lock().take() {
                let _ = jvm.kill();
            }
        }
    }
}

impl std::fmt::Debug for TestingCluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestingCluster")
            .field("connect_string", &self.connect_string())
            .finish()
    }
}
