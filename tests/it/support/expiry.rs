//! A lock holder's session expired while another participant waits: when
//! each side heard of it.

use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use zk_queue::testing::FaultProxy;

use super::eventually;

/// Blackholes `proxy`, the holder's way to the server, once `waiting` says
/// the next participant waits, until the server expires the holder's
/// session (a client of `short_session_client`) and `next` holds; asserts
/// that `lost` (the holder's loss) disconnected before `next` returned, and
/// returns what it returned (the next holder's token). The proxy stays
/// blackholed.
pub fn expire_holder(
    proxy: &FaultProxy,
    lost: Receiver<()>,
    waiting: impl FnMut() -> bool,
    next: impl FnOnce() -> u64 + Send,
) -> u64 {
    let lost_at = Mutex::new(None);
    let (held_at, token) = thread::scope(|s| {
        let lost_at = &lost_at;
        s.spawn(move || {
            let _ = lost.recv();
            *lost_at.lock().unwrap() = Some(Instant::now());
        });
        let holding = s.spawn(|| {
            let token = next();
            (Instant::now(), token)
        });
        eventually(Duration::from_secs(30), "the next participant waits", waiting);
        // A partition longer than the 2 s session: the server expires it.
        proxy.blackhole();
        holding.join().unwrap()
    });
    let lost_at = lost_at.lock().unwrap().expect("the loss was signalled");
    assert!(lost_at <= held_at, "the loss was signalled before another held");
    token
}

/// Blackholes `proxy`, a holder's way to the server, and has the holder
/// (`who` in `ledger`) count on its hold only while `is_held` says so,
/// sampled every millisecond: writes `exit <who>` at its first false
/// sample and returns how long into the partition that was. The proxy
/// stays blackholed.
pub fn stop_counting_once_partitioned(
    proxy: &FaultProxy,
    who: &str,
    ledger: &super::ledger::Ledger,
    is_held: impl Fn() -> bool,
) -> Duration {
    proxy.blackhole();
    let parted = Instant::now();
    while is_held() {
        thread::sleep(Duration::from_millis(1));
    }
    ledger.exit(who);
    let took = parted.elapsed();
    eprintln!("{who} stopped counting on its hold {took:?} into the partition");
    took
}
