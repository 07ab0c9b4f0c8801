//! A measurement, not a check (ignored; run it by name): uncontended
//! acquire-and-return cycles per second of this semaphore and of Curator's
//! `InterProcessSemaphoreV2` (the Java peer) on the shared server, and of
//! a bare create and delete for scale.
//!
//! `cargo test --all-features --test it -- semaphore::speed --ignored --nocapture`

use std::time::{Duration, Instant};

use super::{semaphore, Ledger, WAIT};
use crate::support::client;
use crate::support::server::unique_path;

/// Cycles measured, after as many for warming up.
const CYCLES: usize = 2_000;

#[test]
#[ignore = "a measurement: run by name with --ignored --nocapture"]
fn uncontended_acquire_and_return_rate_beside_curator() {
    let ledger = Ledger::new();
    let path = unique_path("semaphore-speed");
    let client = client();
    let semaphore = semaphore(&client, &path, 1);
    for _ in 0..CYCLES {
        drop(semaphore.acquire().unwrap());
    }
    let mut took = Vec::with_capacity(CYCLES);
    let started = Instant::now();
    for round in 0..CYCLES {
        let cycle = Instant::now();
        let lease = semaphore.acquire().unwrap();
        // As the Java peer does each round.
        ledger.enter(&format!("rust.{round}"));
        ledger.exit(&format!("rust.{round}"));
        drop(lease);
        took.push(cycle.elapsed());
    }
    let rust_rate = CYCLES as f64 / started.elapsed().as_secs_f64();
    // Twice one round trip with a write: the least a cycle can take.
    let raw = Instant::now();
    for _ in 0..CYCLES {
        let (node, _) = client
            .create(
                &format!("{path}/raw-"),
                b"",
                zk_queue::client::CreateMode::EphemeralSequential,
            )
            .unwrap();
        client.delete(&node, None).unwrap();
    }
    let raw_rate = CYCLES as f64 / raw.elapsed().as_secs_f64();
    eprintln!("a create and a delete, for scale: {raw_rate:.0} cycles/s");
    took.sort();
    eprintln!(
        "zk-queue Semaphore: {rust_rate:.0} cycles/s, p50 {:?}",
        took[CYCLES / 2]
    );

    // Two runs of the peer, of CYCLES and 2 * CYCLES cycles: the
    // difference is CYCLES warm cycles, without the JVM's start.
    let run = |cycles: usize| {
        let java_path = unique_path("semaphore-speed-curator");
        let command = ledger.peer_command("curator-semaphore", &java_path, cycles, "java", Duration::ZERO);
        let started = Instant::now();
        command.timeout(WAIT * 4).spawn().unwrap().wait().unwrap();
        started.elapsed()
    };
    let (short, long) = (run(CYCLES), run(2 * CYCLES));
    let java_rate = CYCLES as f64 / long.saturating_sub(short).as_secs_f64();
    eprintln!("Curator InterProcessSemaphoreV2: {java_rate:.0} cycles/s");
    eprintln!("ratio: {:.2}", rust_rate / java_rate);
}
