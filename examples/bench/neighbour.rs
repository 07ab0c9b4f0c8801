//! A CPU-bound neighbour (`--busy-neighbour`): a child process (this
//! executable with `--busy-child`) that keeps one core busy with a spin loop
//! while the open-loop latency runs are done a second time. It is killed and
//! reaped when dropped, and ends by itself when its parent is gone or its
//! deadline has passed.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;

use super::cpu;

/// The running neighbour.
pub struct Neighbour {
    child: Child,
}

impl Neighbour {
    /// Starts the spinning child; it ends by itself after `timeout`.
    pub fn start(timeout: Duration) -> anyhow::Result<Neighbour> {
        let exe = std::env::current_exe().context("locating the bench binary")?;
        let child = Command::new(exe)
            .arg("--busy-child")
            .args(["--child-timeout-secs", &timeout.as_secs().max(1).to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .context("starting the busy neighbour")?;
        Ok(Neighbour { child })
    }

    /// The child's CPU time so far, in ticks; `None` without `/proc` or
    /// once it has ended.
    pub fn ticks(&self) -> Option<u64> {
        cpu::process_ticks(&self.child.id().to_string())
    }
}

impl Drop for Neighbour {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Cores the neighbour used on average since `ticks` at `since`.
pub fn cores(neighbour: &Neighbour, ticks: Option<u64>, since: Instant) -> Option<f64> {
    let used = neighbour.ticks()?.saturating_sub(ticks?);
    let secs = since.elapsed().as_secs_f64();
    (secs > 0.0).then(|| used as f64 / cpu::TICKS_PER_S / secs)
}

/// The child: spins on trivial arithmetic until it is killed, its parent is
/// gone, or `timeout_secs` have passed.
pub fn child_main(timeout_secs: u64) -> anyhow::Result<()> {
    let parent = std::os::unix::process::parent_id();
    let deadline = Instant::now() + Duration::from_secs(timeout_secs);
    let mut x: u64 = 1;
    loop {
        for _ in 0..1_000_000 {
            x = std::hint::black_box(x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1));
        }
        if std::os::unix::process::parent_id() != parent || Instant::now() >= deadline {
            return Ok(());
        }
    }
}
