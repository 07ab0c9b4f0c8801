//! `zkq recipe`: lock, read-write lock, semaphore, leader latch and barrier
//! paths made by the crate's recipes and by Curator's (Java peers), shown
//! with their holders and waiters in order, and sessions marked.

use std::thread;
use std::time::Duration;

use serde_json::Value;
use zk_queue::inspect::{sessions_in_cons, sessions_in_dump};
use zk_queue::recipes::{Barrier, DoubleBarrier, LeaderLatch, Mutex, RwLock};
use zk_queue::testing::FaultProxy;
use zk_queue::ZkClient;

use super::{json, ok, zkq};
use crate::support::ledger::Ledger;
use crate::support::server::{shared_connect_string, shared_server, unique_path};
use crate::support::{client, eventually};

/// How long a condition may take, under load.
const WAIT: Duration = Duration::from_secs(30);

fn count(zk: &ZkClient, path: &str) -> usize {
    zk.get_children(path).map_or(0, |(names, _)| names.len())
}

fn field<'a>(nodes: &'a Value, key: &str) -> Vec<&'a str> {
    nodes
        .as_array()
        .expect("an array of nodes")
        .iter()
        .map(|n| n[key].as_str().unwrap_or("<none>"))
        .collect()
}

fn session_of(zk: &ZkClient) -> String {
    format!("0x{:x}", zk.session_id().unwrap())
}

#[test]
fn cli_recipe_shows_a_mutex_holder_then_its_waiters_in_arrival_order_with_their_sessions() {
    let path = unique_path("cli-recipe-mutex");
    let (a, b, c) = (client(), client(), client());
    let holder = Mutex::builder(&a, &path).build().unwrap();
    let first = Mutex::builder(&b, &path).build().unwrap();
    let second = Mutex::builder(&c, &path).build().unwrap();
    let guard = holder.lock().unwrap();
    thread::scope(|s| {
        let w1 = s.spawn(|| drop(first.lock().unwrap()));
        eventually(WAIT, "the first waiter's node", || count(&a, &path) == 2);
        let w2 = s.spawn(|| drop(second.lock().unwrap()));
        eventually(WAIT, "the second waiter's node", || count(&a, &path) == 3);

        let out = json(&["recipe", &path]);
        assert_eq!((out["kind"].as_str(), out["leases"].as_u64()), (Some("mutex"), Some(1)));
        let nodes = &out["nodes"];
        assert_eq!(field(nodes, "role"), ["holder", "waiter", "waiter"]);
        assert_eq!(
            field(nodes, "session"),
            [session_of(&a), session_of(&b), session_of(&c)]
        );
        assert_eq!(field(nodes, "session_state"), ["connected"; 3]);
        let holder_name = guard.node().rsplit('/').next().unwrap();
        assert_eq!(nodes[0]["name"], holder_name);
        assert!(holder_name.contains(nodes[0]["protected_id"].as_str().unwrap()));
        let (data, _) = a.get_data(guard.node()).unwrap();
        assert_eq!(nodes[0]["data"].as_str().unwrap().as_bytes(), data);
        let positions: Vec<u64> = (0..3).map(|i| nodes[i]["position"].as_u64().unwrap()).collect();
        assert_eq!(positions, [1, 2, 3]);
        let sequences: Vec<i64> = (0..3).map(|i| nodes[i]["sequence"].as_i64().unwrap()).collect();
        assert!(sequences.windows(2).all(|w| w[0] < w[1]), "{sequences:?}");
        let ages: Vec<i64> = (0..3).map(|i| nodes[i]["age_ms"].as_i64().unwrap()).collect();
        assert!(ages[0] >= ages[2], "the holder's node is the oldest: {ages:?}");

        let out = json(&["recipe", &path, "--leases", "2"]);
        assert_eq!(field(&out["nodes"], "role"), ["holder", "holder", "waiter"]);

        let text = ok(&["recipe", &path]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], format!("mutex {path} (leases 1)"));
        assert!(lines[1].starts_with(&format!("1\tholder\t{holder_name}\t")), "{text}");
        assert!(
            lines[1].ends_with(&format!("session={}(connected)", session_of(&a))),
            "{text}"
        );
        assert!(lines[3].starts_with("3\twaiter\t"), "{text}");
        assert!(lines[4].starts_with("sessions: from dump on "), "{text}");

        drop(guard);
        w1.join().unwrap();
        w2.join().unwrap();
    });
}

#[test]
fn cli_recipe_shows_a_read_write_lock_whose_reader_behind_a_waiting_writer_waits() {
    let path = unique_path("cli-recipe-rwlock");
    let (a, b, c) = (client(), client(), client());
    let reader = RwLock::builder(&a, &path).build().unwrap();
    let writer = RwLock::builder(&b, &path).build().unwrap();
    let late_reader = RwLock::builder(&c, &path).build().unwrap();
    let reading = reader.read().unwrap();
    thread::scope(|s| {
        let w = s.spawn(|| drop(writer.write().unwrap()));
        eventually(WAIT, "the writer's node", || count(&a, &path) == 2);
        let r = s.spawn(|| drop(late_reader.read().unwrap()));
        eventually(WAIT, "the late reader's node", || count(&a, &path) == 3);

        let out = json(&["recipe", &path]);
        assert_eq!(out["kind"], "rwlock");
        assert_eq!(field(&out["nodes"], "role"), ["holder", "waiter", "waiter"]);
        assert_eq!(field(&out["nodes"], "mode"), ["read", "write", "read"]);
        assert_eq!(
            field(&out["nodes"], "session"),
            [session_of(&a), session_of(&b), session_of(&c)]
        );
        let text = ok(&["recipe", &path]);
        assert!(text.lines().nth(2).unwrap().starts_with("2\twaiter(write)\t"), "{text}");
        drop(reading);
        w.join().unwrap();
        r.join().unwrap();
    });
}

#[test]
fn cli_recipe_shows_a_curator_writer_holding_and_a_rust_reader_waiting_behind_it() {
    let path = unique_path("cli-recipe-curator-rwlock");
    let ledger = Ledger::new();
    let writer = ledger
        .peer_command("curator-rwlock", &path, 1, "writer", Duration::from_secs(120))
        .property("peer.role", "write")
        .property("peer.sessionTimeoutMs", 4_000);
    let writer = crate::support::ledger::ready(writer, Duration::from_secs(60));
    writer.wait_for_stderr_line("held 1", WAIT).unwrap();
    let zk = client();
    let reader = RwLock::builder(&zk, &path).build().unwrap();
    thread::scope(|s| {
        let r = s.spawn(|| reader.read_timeout(Duration::from_secs(120)).map(|held| held.is_some()));
        eventually(WAIT, "the reader's node", || count(&zk, &path) == 2);
        let out = json(&["recipe", &path]);
        assert_eq!(out["kind"], "rwlock");
        assert_eq!(field(&out["nodes"], "role"), ["holder", "waiter"]);
        assert_eq!(field(&out["nodes"], "mode"), ["write", "read"]);
        assert_eq!(field(&out["nodes"], "session")[1], session_of(&zk));
        assert!(field(&out["nodes"], "name")[0].contains("-__WRIT__"));
        drop(writer); // killed: its node goes when its session expires
        assert_eq!(
            r.join().unwrap().ok(),
            Some(true),
            "the reader holds once the writer is gone"
        );
    });
}

#[test]
fn cli_recipe_shows_the_leader_of_a_latch_and_its_participants_ids() {
    let path = unique_path("cli-recipe-latch");
    let (a, b) = (client(), client());
    let alpha = LeaderLatch::builder(&a, &path).id("alpha").build().unwrap();
    alpha.await_leadership_timeout(WAIT).unwrap();
    let beta = LeaderLatch::builder(&b, &path).id("beta").build().unwrap();
    eventually(WAIT, "beta's node", || count(&a, &path) == 2);

    let out = json(&["recipe", &path]);
    assert_eq!(out["kind"], "leader-latch");
    assert_eq!(field(&out["nodes"], "role"), ["leader", "waiter"]);
    assert_eq!(field(&out["nodes"], "data"), ["alpha", "beta"]);
    assert_eq!(field(&out["nodes"], "data_encoding"), ["utf8", "utf8"]);
    alpha.close().unwrap();
    eventually(WAIT, "beta leads", || {
        let out = json(&["recipe", &path]);
        field(&out["nodes"], "data") == ["beta"] && field(&out["nodes"], "role") == ["leader"]
    });
    beta.close().unwrap();
}

#[test]
fn cli_recipe_shows_a_curator_semaphores_leases_and_the_acquirer_holding_its_locks() {
    let path = unique_path("cli-recipe-semaphore");
    let ledger = Ledger::new();
    let hold = Duration::from_secs(120);
    let holder = ledger.peer(
        "curator-semaphore-mutex",
        &path,
        1,
        "holder",
        hold,
        Duration::from_secs(60),
    );
    holder.wait_for_stderr_line("held 1", WAIT).unwrap();
    let _waiter = ledger.peer(
        "curator-semaphore-mutex",
        &path,
        1,
        "waiter",
        hold,
        Duration::from_secs(60),
    );
    let zk = client();
    let leases = format!("{path}/leases");
    eventually(WAIT, "the waiter's lease node", || count(&zk, &leases) == 2);

    // Without the lease count, the lease nodes are just leases.
    let out = json(&["recipe", &path]);
    assert_eq!(out["kind"], "semaphore");
    assert_eq!(field(&out["nodes"], "role"), ["lease", "lease"]);

    let out = json(&["recipe", &path, "--leases", "1"]);
    let nodes = &out["nodes"];
    assert_eq!(field(nodes, "role"), ["holder", "waiter"]);
    assert!(field(nodes, "name")
        .iter()
        .all(|n| n.starts_with("_c_") && n.contains("-lease-")));
    let sessions = field(nodes, "session");
    assert_ne!(sessions[0], sessions[1]);
    // The waiter holds the semaphore's mutex while it waits for a lease.
    let locks = &out["locks"];
    assert_eq!(field(locks, "role"), ["holder"]);
    assert_eq!(field(locks, "session"), [sessions[1]]);

    let text = ok(&["recipe", &path, "--leases", "1"]);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], format!("semaphore {path} (leases 1)"));
    assert_eq!(lines[1], "leases:");
    assert!(lines[2].starts_with("  1\tholder\t_c_"), "{text}");
    assert_eq!(lines[4], "locks:");
}

#[test]
fn cli_recipe_shows_a_double_barriers_members_and_marks_a_ready_its_members_left_as_stale() {
    let path = unique_path("cli-recipe-double-barrier");
    let (a, b) = (client(), client());
    let first = DoubleBarrier::builder(&a, &path, 2)
        .data(vec![0xff, 0x00])
        .build()
        .unwrap();
    let second = DoubleBarrier::builder(&b, &path, 2).build().unwrap();
    thread::scope(|s| {
        let entering = s.spawn(|| first.enter().unwrap());
        eventually(WAIT, "the first member's node", || count(&b, &path) == 1);
        second.enter().unwrap();
        entering.join().unwrap();
    });

    let out = json(&["recipe", &path]);
    assert_eq!(out["kind"], "double-barrier");
    let nodes = &out["nodes"];
    assert_eq!(field(nodes, "role"), ["member", "member", "ready"]);
    assert_eq!(field(nodes, "name")[..2], [first.id(), second.id()]);
    assert_eq!(field(nodes, "session_state"), ["connected", "connected", "<none>"]);
    assert_eq!(nodes[2]["session"], Value::Null, "ready is persistent");
    assert_eq!(field(nodes, "data_encoding")[..2], ["hex", "utf8"]);
    assert_eq!(nodes[0]["data"], "ff00");
    assert_eq!(nodes[2].get("stale"), None);

    // The members go without leaving: their nodes go with their sessions,
    // and `ready` stays, left from their round.
    a.close();
    b.close();
    let zk = client();
    eventually(WAIT, "the members' nodes are gone", || count(&zk, &path) == 1);
    let out = json(&["recipe", &path]);
    assert_eq!(field(&out["nodes"], "role"), ["ready"]);
    assert_eq!(out["nodes"][0]["stale"], true);
    let text = ok(&["recipe", &path]);
    assert!(text.lines().nth(1).unwrap().ends_with("\tpersistent\tstale"), "{text}");
}

#[test]
fn cli_recipe_shows_a_barrier_set_or_cleared_only_when_told_it_is_one() {
    let path = unique_path("cli-recipe-barrier");
    let zk = client();
    let barrier = Barrier::new(&zk, &path).unwrap();
    barrier.set_barrier().unwrap();

    let out = zkq(&["recipe", &path]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("not a recipe path") && stderr.contains("--kind barrier"),
        "{stderr}"
    );

    let out = json(&["recipe", &path, "--kind", "barrier"]);
    assert_eq!(
        (out["kind"].as_str(), out["state"].as_str()),
        (Some("barrier"), Some("set"))
    );
    assert_eq!(out["barrier"]["role"], "barrier");
    assert_eq!(out["barrier"]["session"], Value::Null);
    let (data, _) = zk.get_data(&path).unwrap();
    assert_eq!(out["barrier"]["data"].as_str().unwrap().as_bytes(), data);

    barrier.remove_barrier().unwrap();
    let out = json(&["recipe", &path, "--kind", "barrier"]);
    assert_eq!(out["state"], "cleared");
    assert_eq!(out["barrier"], Value::Null);
}

#[test]
fn cli_recipe_refuses_a_queue_path_and_a_missing_path_with_one_line() {
    let queue = unique_path("cli-recipe-not-a-recipe");
    ok(&["put", &queue, "a", "b"]);
    let refusal = format!("{queue} is not a recipe path: none of its 2 children");
    let out = zkq(&["recipe", queue.as_str()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with(&format!("zkq: {refusal}")), "{stderr}");
    // Under --json the error is one JSON object on stdout.
    let out = zkq(&["--json", "recipe", queue.as_str()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    let error: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(error["error"].as_str().unwrap().starts_with(&refusal), "{error}");
    let missing = unique_path("cli-recipe-missing");
    for kind in [None, Some("mutex"), Some("semaphore"), Some("double-barrier")] {
        let mut args = vec!["recipe", missing.as_str()];
        args.extend(kind.map(|k| ["--kind", k]).into_iter().flatten());
        let out = zkq(&args);
        assert_eq!(out.status.code(), Some(1));
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            format!("zkq: node {missing} does not exist\n")
        );
    }
    let out = zkq(&["recipe", &queue, "--kind", "queue"]);
    assert_eq!(out.status.code(), Some(2), "an unknown kind is a usage error");
}

#[test]
fn cli_recipe_marks_a_holder_whose_client_lost_its_connection_as_disconnected_until_expiry() {
    let path = unique_path("cli-recipe-disconnected");
    let proxy = FaultProxy::start(&shared_connect_string()).unwrap();
    let lost = ZkClient::builder(&proxy.connect_string())
        .session_timeout(Duration::from_secs(40))
        .connection_timeout(Duration::from_secs(5))
        .request_timeout(Duration::from_secs(5))
        .connect()
        .unwrap();
    let lost_session = session_of(&lost);
    let holder = Mutex::builder(&lost, &path).build().unwrap();
    let guard = holder.lock().unwrap();
    let zk = client();
    let waiter = Mutex::builder(&zk, &path).build().unwrap();
    thread::scope(|s| {
        let waiting = s.spawn(|| waiter.lock_timeout(Duration::from_secs(120)).map(|held| held.is_some()));
        eventually(WAIT, "the waiter's node", || count(&zk, &path) == 2);
        let out = json(&["recipe", &path]);
        assert_eq!(field(&out["nodes"], "session_state"), ["connected", "connected"]);

        // The holder's process is cut off: its session lives on, its node too.
        drop(proxy);
        eventually(WAIT, "the holder shows as disconnected", || {
            let out = json(&["recipe", &path]);
            field(&out["nodes"], "session_state") == ["disconnected", "connected"]
        });
        let out = json(&["recipe", &path]);
        assert_eq!(field(&out["nodes"], "session")[0], lost_session);
        assert_eq!(field(&out["nodes"], "role"), ["holder", "waiter"]);

        zk.close();
        assert!(waiting.join().unwrap().is_err(), "the waiter's client closed");
    });
    drop(guard);
    lost.close();
}

#[test]
fn the_leaders_dump_lists_a_session_until_it_closes_and_cons_its_connection() {
    let zk = client();
    let id = zk.session_id().unwrap();
    let server = shared_server();
    let dump = server.four_letter_word("dump", WAIT).unwrap();
    assert!(sessions_in_dump(&dump).expect("a dump").contains(&id), "{dump}");
    let cons = server.four_letter_word("cons", WAIT).unwrap();
    assert!(sessions_in_cons(&cons).expect("a cons").contains(&id), "{cons}");
    zk.close();
    eventually(WAIT, "the closed session leaves the dump", || {
        let dump = server.four_letter_word("dump", WAIT).unwrap();
        !sessions_in_dump(&dump).expect("a dump").contains(&id)
    });
}
