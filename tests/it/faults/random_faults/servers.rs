//! The servers of a run and the fault proxies in front of them.

use std::time::{Duration, Instant};

use zk_queue::testing::{FaultProxy, TestingCluster, TestingServer};

use crate::support::workload::{started_since, SplitMix64};

/// The servers of a run: one, or a 3-member ensemble.
pub(super) enum Servers {
    One(Box<TestingServer>),
    Ensemble(TestingCluster),
}

impl Servers {
    pub(super) fn start(ensemble: bool) -> Servers {
        if ensemble {
            Servers::Ensemble(TestingCluster::start(3).unwrap())
        } else {
            Servers::One(Box::new(TestingServer::start().unwrap()))
        }
    }

    /// Each member's address.
    pub(super) fn members(&self) -> Vec<String> {
        match self {
            Servers::One(server) => vec![server.connect_string()],
            Servers::Ensemble(cluster) => (0..cluster.size()).map(|m| cluster.member_connect_string(m)).collect(),
        }
    }

    pub(super) fn connect_string(&self) -> String {
        self.members().join(",")
    }

    /// Restarts one server (a random member of an ensemble); returns what
    /// it restarted once it is seen to have started again, or `None`.
    pub(super) fn restart_one(&mut self, rng: &mut SplitMix64) -> Option<String> {
        let since = Instant::now();
        let (member, what) = match self {
            Servers::One(server) => {
                server.restart().unwrap();
                (0, "restart of the server".to_owned())
            }
            Servers::Ensemble(cluster) => {
                let member = usize::try_from(rng.below(cluster.size() as u64)).unwrap();
                cluster.kill(member).unwrap();
                cluster.restart(member).unwrap();
                (member, format!("restart of member {member}"))
            }
        };
        started_since(&self.members()[member], since).then_some(what)
    }

    /// Kills the leader and restarts it once another member leads; returns
    /// what it did once the leader's process is seen gone, another member
    /// leading and the old leader started again; `None` without an ensemble
    /// or if one of those was not seen.
    pub(super) fn kill_leader(&mut self) -> Option<String> {
        let Servers::Ensemble(cluster) = self else {
            return None;
        };
        let leader = cluster.wait_for_leader(Duration::from_secs(60)).expect("a leader");
        cluster.kill(leader).unwrap();
        if cluster.is_running(leader) {
            return None;
        }
        let deadline = Instant::now() + Duration::from_secs(60);
        while cluster.leader().is_none_or(|l| l == leader) {
            assert!(
                Instant::now() < deadline,
                "no new leader after member {leader} died\n{}",
                member_log_tails(cluster)
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        let since = Instant::now();
        cluster.restart(leader).unwrap();
        started_since(&cluster.member_connect_string(leader), since)
            .then(|| format!("leader change (member {leader} killed and started again)"))
    }
}

/// A fault proxy in front of each member.
pub(super) struct Proxies(Vec<FaultProxy>);

impl Proxies {
    pub(super) fn start(servers: &Servers) -> Proxies {
        Proxies(
            servers
                .members()
                .iter()
                .map(|m| FaultProxy::start(m).unwrap())
                .collect(),
        )
    }

    pub(super) fn connect_string(&self) -> String {
        self.0
            .iter()
            .map(FaultProxy::connect_string)
            .collect::<Vec<_>>()
            .join(",")
    }

    pub(super) fn each(&self, f: impl Fn(&FaultProxy)) {
        self.0.iter().for_each(f);
    }

    /// The live connections the proxies cut so far.
    pub(super) fn connections_cut(&self) -> usize {
        self.0.iter().map(FaultProxy::connections_cut).sum()
    }

    /// Runs `fault` until it cut live connections (within ten seconds: a
    /// consumer may be between two connections); how many it cut.
    pub(super) fn cutting(&self, fault: impl Fn(&Proxies)) -> usize {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let before = self.connections_cut();
            fault(self);
            let cut = self.connections_cut() - before;
            if cut > 0 || Instant::now() >= deadline {
                return cut;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Arms a reply-dropping fault on every proxy, makes `traffic` for it,
    /// waits until one fired (the client talks to one member at a time),
    /// then heals all. Returns whether it fired within ten seconds.
    pub(super) fn drop_reply(&self, arm: impl Fn(&FaultProxy), traffic: impl FnOnce()) -> bool {
        self.each(arm);
        traffic();
        let deadline = Instant::now() + Duration::from_secs(10);
        let fired = || self.0.iter().any(|p| !p.dropping_reply());
        while !fired() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let fired = fired();
        self.each(FaultProxy::heal);
        fired
    }
}

/// The last lines of every member's log, for a failure message.
fn member_log_tails(cluster: &TestingCluster) -> String {
    (0..cluster.size())
        .map(|member| {
            let log = std::fs::read_to_string(cluster.log_path(member)).unwrap_or_default();
            let lines: Vec<&str> = log.lines().collect();
            let tail = lines[lines.len().saturating_sub(30)..].join("\n");
            format!("--- member {member} (running: {}):\n{tail}", cluster.is_running(member))
        })
        .collect::<Vec<_>>()
        .join("\n")
}
