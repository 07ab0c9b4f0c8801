//! `LeaderLatch` against a real server: who leads and when leadership moves
//! (`election`), leadership under connection faults and session expiry
//! (`faults`), and one election shared with Curator's `LeaderLatch` in Java
//! (`curator`).

mod curator;
mod election;
mod faults;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use zk_queue::{
    recipes::{LeaderLatch, Leadership},
    ZkClient,
};

use crate::support::eventually;

/// The longest wait for anything these tests wait on.
const WAIT: Duration = Duration::from_secs(30);

/// The leadership changes a latch's listener heard, in order.
#[derive(Clone, Default)]
struct Heard(Arc<Mutex<Vec<Leadership>>>);

impl Heard {
    /// Everything heard, once there are at least `n` changes (a change is
    /// visible to `has_leadership` just before the listener hears of it).
    fn after(&self, n: usize) -> Vec<Leadership> {
        eventually(WAIT, &format!("{n} leadership changes were heard"), || {
            self.0.lock().unwrap().len() >= n
        });
        self.0.lock().unwrap().clone()
    }
}

/// A latch at `path` with id `id` whose listener records into the returned
/// [`Heard`]; returns once its node exists, so latches built one after the
/// other queue up in that order.
fn join(client: &ZkClient, path: &str, id: &str) -> (LeaderLatch, Heard) {
    let heard = Heard::default();
    let record = heard.clone();
    let latch = LeaderLatch::builder(client, path)
        .id(id)
        .listener(move |change| record.0.lock().unwrap().push(change))
        .build()
        .unwrap();
    eventually(WAIT, "the latch has its node", || latch.our_path().is_some());
    (latch, heard)
}
