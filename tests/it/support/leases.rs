//! Samples the lock directory of a lock-safe queue from its own client: how
//! many leases (lock nodes) each session holds, so a test can assert the cap
//! of `claim_window` leases per consumer and aim a kill at a full window.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use zk_queue::ZkClient;

/// The leases each session held at the latest sample, and the most seen.
#[derive(Debug, Default)]
struct Samples {
    /// Samples taken since the start.
    taken: usize,
    latest: HashMap<i64, usize>,
    most: usize,
    most_by: i64,
    most_names: Vec<String>,
}

/// What a [`LeaseSampler`] saw over its life.
#[derive(Debug)]
pub struct LeaseReport {
    pub samples: usize,
    /// The most leases one session held in one sample.
    pub most: usize,
    /// That session.
    pub most_by: i64,
    /// The locks it held then.
    pub most_names: Vec<String>,
}

/// A thread listing the lock directory every few milliseconds.
pub struct LeaseSampler {
    samples: Arc<Mutex<Samples>>,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl LeaseSampler {
    /// Samples `locks` through a client of `connect` (the servers, not a
    /// fault proxy); a sample that fails (a server down) is skipped.
    pub fn start(connect: &str, locks: &str) -> LeaseSampler {
        let client = ZkClient::builder(connect)
            .session_timeout(Duration::from_secs(30))
            .connection_timeout(Duration::from_secs(20))
            .request_timeout(Duration::from_secs(2))
            .connect()
            .expect("the lease sampler connects");
        let samples = Arc::new(Mutex::new(Samples::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let (shared, stopping, locks) = (samples.clone(), stop.clone(), locks.to_owned());
        let handle = std::thread::spawn(move || {
            while !stopping.load(Ordering::Relaxed) {
                if let Some(held) = sample(&client, &locks) {
                    let mut samples = shared.lock().unwrap();
                    samples.taken += 1;
                    for (&session, names) in &held {
                        if names.len() > samples.most {
                            (samples.most, samples.most_by) = (names.len(), session);
                            samples.most_names = names.clone();
                        }
                    }
                    samples.latest = held.into_iter().map(|(s, names)| (s, names.len())).collect();
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        });
        LeaseSampler {
            samples,
            stop,
            handle: Some(handle),
        }
    }

    /// Waits for a sample, taken after this call, in which `session` holds
    /// `n` leases; panics if none did within `within`.
    pub fn wait_held(&self, session: i64, n: usize, within: Duration) {
        let after = self.samples.lock().unwrap().taken;
        super::eventually(within, &format!("session {session:x} holds {n} leases"), || {
            let samples = self.samples.lock().unwrap();
            samples.taken > after && samples.latest.get(&session) == Some(&n)
        });
    }

    /// Stops sampling and tells what it saw.
    pub fn stop(mut self) -> LeaseReport {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(handle) = self.handle.take() {
            handle.join().expect("the lease sampler");
        }
        let samples = self.samples.lock().unwrap();
        LeaseReport {
            samples: samples.taken,
            most: samples.most,
            most_by: samples.most_by,
            most_names: samples.most_names.clone(),
        }
    }
}

impl Drop for LeaseSampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// The leases each session holds under `locks`; `None` if listing failed.
fn sample(client: &ZkClient, locks: &str) -> Option<HashMap<i64, Vec<String>>> {
    let (names, listed) = client.get_children(locks).ok()?;
    let mut held: HashMap<i64, Vec<String>> = HashMap::new();
    for name in names {
        // Counted only if it is the lock the listing saw: a lock released
        // since is not counted, and one created again since (by any
        // consumer) is newer than the listing's last change.
        if let Ok(Some(stat)) = client.exists(&format!("{locks}/{name}")) {
            if stat.czxid <= listed.pzxid {
                held.entry(stat.ephemeral_owner).or_default().push(name);
            }
        }
    }
    Some(held)
}
