//! `zkq recipe` on an ensemble: sessions are asked of the leader (`dump`)
//! and of every serving member (`cons`); a connect string naming only some
//! members gives no claim about connections.

use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use zk_queue::recipes::Mutex;
use zk_queue::testing::TestingCluster;
use zk_queue::ZkClient;

use crate::support::eventually;
use crate::support::server::unique_path;

/// How long a condition may take, under load.
const WAIT: Duration = Duration::from_secs(60);

/// `zkq --connect <connect> --json recipe <path>`, parsed.
fn recipe(connect: &str, path: &str) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_zkq"))
        .args(["--connect", connect, "--json", "recipe", path])
        .env_remove("ZK_CONNECT")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn states(out: &Value) -> Vec<String> {
    out["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["session_state"].as_str().unwrap_or("<none>").to_owned())
        .collect()
}

#[test]
fn cli_recipe_on_an_ensemble_marks_a_holder_cut_off_with_its_member_as_disconnected() {
    let cluster = TestingCluster::start(3).unwrap();
    let leader = cluster.wait_for_leader(WAIT).expect("a leader");
    let follower = (0..3).find(|&m| m != leader).unwrap();
    let path = unique_path("cli-recipe-ensemble");
    // The holder can only reach one follower; the waiter reaches all members.
    let cut_off = ZkClient::builder(&cluster.member_connect_string(follower))
        .session_timeout(Duration::from_secs(40))
        .connect()
        .unwrap();
    let holder = Mutex::builder(&cut_off, &path).build().unwrap();
    let guard = holder.lock().unwrap();
    let all = cluster.connect_string();

    let out = recipe(&all, &path);
    assert_eq!(states(&out), ["connected"]);
    let sessions = out["sessions"].as_str().unwrap();
    assert!(
        sessions.starts_with(&format!(
            "from dump on {} and cons on 3 server(s)",
            cluster.member_connect_string(leader)
        )),
        "{sessions}"
    );

    // Only one follower named: no leader to ask, no claim.
    let out = recipe(&cluster.member_connect_string(follower), &path);
    assert_eq!(states(&out), ["unknown"]);
    assert!(out["sessions"].as_str().unwrap().starts_with("unknown: "), "{out}");

    // Its member dies: the session lives on at the leader, unconnected.
    cluster.kill(follower).unwrap();
    eventually(WAIT, "the holder shows as disconnected", || {
        states(&recipe(&all, &path)) == ["disconnected"]
    });
    drop(guard);
    cut_off.close();
}
