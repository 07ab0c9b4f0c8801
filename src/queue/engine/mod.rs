//! The consumer engine of a queue: a scanner thread that lists, orders and
//! claims items, worker threads that run a callback consumer on them (or,
//! for a pull consumer, one dispatcher thread that hands them to the takers,
//! see `dispatch`), and a thread that forwards connection states to the
//! consumer. Either way an item is processed by the one state machine of
//! `process`.
//!
//! The scanner lists the queue (and the lock directory, in lock-safe mode)
//! with one watch each, hands the items of that listing to the workers in
//! order, and lists again only when a watch fired, the connection changed, or
//! a delayed item or a failed item backing off came due: one listing per pass
//! over the queue, not one per item.
//!
//! In lock-safe mode a consumer holds at most `claim_window` leases at once
//! (locked items not yet acknowledged, released or requeued), so a consumer
//! that dies or loses its session leaves at most that many items to be
//! delivered again. The lease itself, from taking its lock to settling it
//! (and keeping a lock whose fate a lost reply left unknown as an orphan,
//! settled on a later pass), lives in `lease`.

mod ack;
mod claim;
mod deferred;
mod dispatch;
mod lease;
mod outcome;
mod process;

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::Sender;
use parking_lot::{Condvar, Mutex};

use self::deferred::Deferred;
use self::lease::{Lease, Leases};
use self::process::{Settle, Step};
use super::core::{Consumer, Core};
use super::{DeliverAt, ItemMeta};
use crate::client::{ChildWatch, Opts};
use crate::error::{Error, Result};
use crate::naming::{delay_epoch, is_item, Kind};
use crate::sync::{earliest, Backoff, Joiner, Latch};

/// The longest pause between scans while errors persist.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// How often a blocked hand-off or state wait checks for shutdown (a pull
/// receiver's takers too).
pub(in crate::queue) const POLL: Duration = Duration::from_millis(100);

/// What the threads of one engine share.
pub(crate) struct Control {
    stopping: AtomicBool,
    /// The latch the scanner currently waits on; opened to stop it.
    wake: Mutex<Latch>,
    /// Lock-safe mode: the leases held, and the orphaned locks.
    leases: Leases,
    /// Undecodable items left in place (no dead-letter path), not read again.
    skipped: Mutex<HashSet<String>>,
    /// Failed items backing off: not due yet.
    deferred: Deferred,
    /// Workers still running.
    workers: Mutex<usize>,
    workers_done: Condvar,
}

impl Control {
    /// Whether the queue is stopping.
    fn stopping(&self) -> bool {
        self.stopping.load(Ordering::Acquire)
    }

    /// Stops claiming: the scanner ends, and the workers end once they have
    /// settled what they hold.
    fn stop(&self) {
        self.stopping.store(true, Ordering::Release);
        self.wake.lock().open();
    }

    /// Sets the item named aside: it is not read again.
    pub(crate) fn skip(&self, name: &str) {
        self.skipped.lock().insert(name.to_owned());
    }
}

/// What the scanner hands to a worker.
pub(crate) enum Work<T> {
    /// Plain mode: the scanner claimed (deleted) the item; consume its values.
    Claimed {
        name: String,
        values: Vec<T>,
        meta: ItemMeta,
    },
    /// Lock-safe mode: the scanner locked and read the item.
    Locked(Locked),
}

/// An item the scanner locked for this consumer, with its data.
pub(crate) struct Locked {
    name: String,
    item_path: String,
    item_version: i32,
    /// Creation time of the item node, epoch milliseconds.
    ctime: i64,
    data: Vec<u8>,
    lease: Lease,
}

/// What a worker thread runs: a callback consumer's loop, or a pull
/// consumer's dispatcher.
type Serve<T> = Box<dyn FnOnce(&Settle<'_, T>) + Send>;

/// The running engine of one queue.
pub(crate) struct Engine {
    control: Arc<Control>,
    /// Tells the consumer that the queue is closing.
    closing: Box<dyn Fn() + Send + Sync>,
    /// Settles lock-safe acknowledgements.
    acker: Option<ack::Acker>,
    scanner: Joiner,
    states: Joiner,
}

impl Engine {
    pub(crate) fn start<T: Send + 'static>(core: Arc<Core<T>>) -> Result<Engine> {
        let threads = core.options.consumer_threads;
        let control = Arc::new(Control {
            stopping: AtomicBool::new(false),
            wake: Mutex::new(Latch::new()),
            leases: Leases::new(),
            skipped: Mutex::new(HashSet::new()),
            deferred: Deferred::new(),
            workers: Mutex::new(0),
            workers_done: Condvar::new(),
        });
        // A rendezvous channel: the scanner hands over the next item only when
        // a worker is free, so one worker keeps FIFO order.
        let (tx, rx) = crossbeam_channel::bounded::<Work<T>>(0);
        let acker = match core.options.lock_path {
            Some(_) => Some(ack::Acker::start(Arc::clone(&core), Arc::clone(&control))?),
            None => None,
        };
        // Runs `serve` on a thread of its own, counted among the workers.
        let spawn = |name: &str, serve: Serve<T>| {
            *control.workers.lock() += 1;
            let (core, control) = (Arc::clone(&core), Arc::clone(&control));
            let acks = acker.as_ref().map(ack::Acker::sender);
            std::thread::Builder::new()
                .name(name.into())
                .spawn(move || {
                    serve(&Settle {
                        core: &core,
                        control: &control,
                        acks: acks.as_ref(),
                    });
                    let mut running = control.workers.lock();
                    *running -= 1;
                    control.workers_done.notify_all();
                })
                .map(drop)
        };
        match &core.consumer {
            Some(Consumer::Callback(consumer)) => {
                for _ in 0..threads {
                    let (consumer, rx) = (Arc::clone(consumer), rx.clone());
                    spawn(
                        "zk-queue-worker",
                        Box::new(move |cx| {
                            for work in rx {
                                let mut step = process::begin(cx, work);
                                while let Step::Deliver(value, item) = step {
                                    let answer = process::consume(consumer.as_ref(), value, item.meta());
                                    step = item.answered(cx, answer);
                                }
                            }
                        }),
                    )
                    .map_err(|e| Error::spawn("consumer worker", e))?;
                }
            }
            Some(Consumer::Pull(pull)) => {
                let (pull, rx) = (Arc::clone(pull), rx.clone());
                spawn("zk-queue-pull", Box::new(move |cx| dispatch::run(cx, &pull, &rx)))
                    .map_err(|e| Error::spawn("pull dispatcher", e))?;
            }
            None => {}
        }
        drop(rx);
        let scanner = {
            let (core, control) = (Arc::clone(&core), Arc::clone(&control));
            Joiner::spawn("zk-queue-scan", move || scan_loop(&core, &control, tx))
                .map_err(|e| Error::spawn("scanner", e))?
        };
        let states = {
            let (core, control) = (Arc::clone(&core), Arc::clone(&control));
            Joiner::spawn("zk-queue-states", move || forward_states(&core, &control))
                .map_err(|e| Error::spawn("connection state", e))?
        };
        let closing = Box::new(move || {
            if let Some(consumer) = &core.consumer {
                consumer.closing();
            }
        });
        Ok(Engine {
            control,
            closing,
            acker,
            scanner,
            states,
        })
    }

    /// Stops claiming, then waits until `deadline` for in-flight items.
    pub(crate) fn stop(self, deadline: Instant) {
        self.control.stop();
        (self.closing)();
        // A scanner blocked on a request ends on its own after the deadline.
        self.scanner.join_until(Some(deadline), "scanner");
        let mut running = self.control.workers.lock();
        let mut all_done = true;
        while *running > 0 {
            if self.control.workers_done.wait_until(&mut running, deadline).timed_out() {
                log::warn!(
                    "{} item(s) still being consumed at close; they finish (and release their locks) on their own",
                    *running
                );
                all_done = false;
                break;
            }
        }
        drop(running);
        if let Some(acker) = self.acker {
            // Settles every acknowledgement queued by the finished workers.
            if all_done {
                acker.stop(deadline);
            }
        }
        self.states.join_until(Some(deadline), "connection state");
    }
}

fn forward_states<T: Send + 'static>(core: &Core<T>, control: &Control) {
    let Some(consumer) = &core.consumer else { return };
    let states = core.client.state_listener();
    // The current state is sent first; the consumer hears of changes only.
    let _ = states.try_recv();
    while !control.stopping() {
        match states.recv_timeout(POLL) {
            Ok(state) => consumer.state_changed(state),
            Err(crossbeam_channel::RecvTimeoutError::Timeout) => {}
            Err(crossbeam_channel::RecvTimeoutError::Disconnected) => return,
        }
    }
}

fn scan_loop<T: Send + 'static>(core: &Core<T>, control: &Control, tx: Sender<Work<T>>) {
    let mut backoff = Backoff::new(POLL, MAX_BACKOFF);
    let mut failures = 0u32;
    while !control.stopping() {
        let latch = Latch::new();
        *control.wake.lock() = latch.clone();
        if control.stopping() {
            break;
        }
        // Connection changes (and a new session) wake the scanner to list again.
        let _guard = core.client.wake_on_state_change(&latch);
        match scan(core, control, &tx, &latch) {
            Ok(pass) => {
                backoff.reset();
                failures = 0;
                // Also list again after a while: ZooKeeper drops some watch
                // events (see `QueueBuilder::rescan_interval`). An interval
                // too long to add means never.
                let rescan_at = Instant::now().checked_add(core.options.rescan_interval);
                latch.wait_until(earliest(pass.wake_at, rescan_at));
            }
            Err(e) => {
                failures = failures.saturating_add(1);
                // A passing fault is a warning; one that persists is an error.
                let level = if failures >= 3 {
                    log::Level::Error
                } else {
                    log::Level::Warn
                };
                let pause = backoff.pause();
                log::log!(level, "queue {}: {e}; scanning again in {pause:?}", core.path);
                core.tell_error(&e);
                latch.wait_until(Some(Instant::now() + pause));
            }
        }
    }
}

/// The outcome of one pass: the watches to keep while waiting, and when to
/// scan again at the latest.
struct Pass {
    _watches: Vec<ChildWatch>,
    wake_at: Option<Instant>,
}

fn scan<T: Send + 'static>(core: &Core<T>, control: &Control, tx: &Sender<Work<T>>, latch: &Latch) -> Result<Pass> {
    let now = || Some(Instant::now());
    // A queue or lock node deleted under the consumer (by an operator, or
    // reaped as an empty container) is created again, and listed at once.
    let recreated = || -> Result<Pass> {
        core.ensure_nodes()?;
        Ok(Pass {
            _watches: Vec::new(),
            wake_at: now(),
        })
    };
    let (names, _, queue_watch) = match core.client.watch_children(&core.path, latch, Opts::new()) {
        Err(Error::NoNode { .. }) => return recreated(),
        other => other?,
    };
    let mut watches = vec![queue_watch];
    let mut locked = HashSet::new();
    // Orphans left are tried again soon; deleting one fires the lock watch.
    let mut wake_at = control.leases.settle_orphans(core);
    if let Some(lock_path) = &core.options.lock_path {
        // Watching the locks picks up an item the moment its holder dies.
        let (locks, _, lock_watch) = match core.client.watch_children(lock_path, latch, Opts::new()) {
            Err(Error::NoNode { .. }) => return recreated(),
            other => other?,
        };
        watches.push(lock_watch);
        locked.extend(locks);
    }
    let mut items: Vec<String> = names.into_iter().filter(|n| is_item(n)).collect();
    core.kind.sort(&mut items);
    control.deferred.keep_only(&items.iter().map(String::as_str).collect());

    // At least one item per listing, so a steady stream of puts cannot
    // starve the consumer (Curator's livelock with 0).
    let refresh_after = (core.kind == Kind::Priority).then(|| core.options.min_items_before_refresh.max(1));
    // Plain mode claims a window at a time; a priority queue's window ends
    // where it may have to look again.
    let window = refresh_after.map_or(core.options.claim_window, |n| n.min(core.options.claim_window));
    let now_ms = DeliverAt::now().epoch_millis();
    let lock_safe = core.options.lock_path.is_some();
    // Lock-safe: never more leases than the claim window.
    let room = || {
        if lock_safe {
            control
                .leases
                .room(core.options.claim_window, || control.stopping())
                .max(1)
        } else {
            window
        }
    };
    let mut limit = window.min(room());
    let mut handed = 0;
    let mut batch = Vec::with_capacity(window);
    for name in items {
        if control.stopping() {
            break;
        }
        if core.kind == Kind::Delay {
            let due = delay_epoch(&name);
            if due > now_ms {
                // Sorted by due time: nothing after this is due either.
                let due_at = Instant::now() + Duration::from_millis((due - now_ms).unsigned_abs());
                wake_at = earliest(wake_at, Some(due_at));
                break;
            }
        }
        if refresh_after.is_some_and(|n| handed >= n) && latch.is_open() {
            // The queue changed: look again for more urgent items.
            wake_at = now();
            break;
        }
        if locked.contains(&name) || control.skipped.lock().contains(&name) {
            continue;
        }
        if control.leases.holds(&name) || control.deferred.holds_back(&name) {
            continue;
        }
        batch.push(name);
        if batch.len() >= limit {
            handed += claim_window(core, control, tx, std::mem::take(&mut batch))?;
            limit = window.min(room());
        }
    }
    if !batch.is_empty() && !control.stopping() {
        claim_window(core, control, tx, batch)?;
    }
    // Wake for the first item backing off, once it is due.
    wake_at = earliest(wake_at, control.deferred.next_due());
    Ok(Pass {
        _watches: watches,
        wake_at,
    })
}

/// Claims a window of items in the queue's mode.
fn claim_window<T: Send + 'static>(
    core: &Core<T>,
    control: &Control,
    tx: &Sender<Work<T>>,
    names: Vec<String>,
) -> Result<usize> {
    match &core.options.lock_path {
        Some(lock_dir) => claim::locked_window(core, control, tx, lock_dir, names),
        None => claim::window(core, control, tx, names),
    }
}
