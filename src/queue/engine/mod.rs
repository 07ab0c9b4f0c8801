//! The consumer engine of a queue: a scanner thread that lists, orders and
//! claims items, worker threads that run a callback consumer on them (or,
//! for a pull consumer, one dispatcher thread that hands them to the takers,
//! see `dispatch`), and a thread that forwards connection states to the
//! consumer. Either way an item is processed by the one state machine of
//! `process`.
//!
//! The scanner (`scan`) lists the queue (and the lock directory, in
//! lock-safe mode) with one watch each, hands the items of that listing to
//! the workers in order, and lists again only when a watch fired, the
//! connection changed, or a delayed item or a failed item backing off came
//! due: one listing per pass over the queue, not one per item. A plain
//! consumer claiming alone (and a priority consumer) also keeps a
//! persistent watch that names the items created since its listing; after a
//! pass that left nothing behind, it takes those without listing again
//! (see `kept`, and `contention` for when a plain consumer gives the watch
//! up). A long
//! lock-safe pass takes the items another consumer abandoned (it crashed, or
//! its session expired) as their locks vanish, within a second. Consumers
//! competing for one queue spread their claims over it instead of all
//! claiming its head (`spread`); this crate's consumers register beside the
//! queue (`registry`) and each claims its own stripe of the sequence numbers
//! (`stripes`), spreading over the others' only when its own is empty.
//!
//! In lock-safe mode a consumer never has more than `claim_window` lock
//! nodes on the server: the leases it holds (locked items not yet
//! acknowledged, released or requeued), and the locks it could not delete
//! yet or whose creation's outcome is unknown (orphans). A place in the
//! window is freed only once the server confirmed the lock's deletion or the
//! lock is known gone (another holder's, or gone with an expired session),
//! never when a delete is merely sent. So a consumer that dies or loses its
//! session leaves at most that many items to be delivered again. The lease
//! itself, from taking its lock to settling it (and keeping a lock whose fate
//! a lost reply left unknown as an orphan, settled on a later pass), lives in
//! `lease`.

mod ack;
mod claim;
mod contention;
mod deferred;
mod dispatch;
mod kept;
mod lease;
mod outcome;
mod process;
mod registry;
mod scan;
mod spread;
mod stripes;

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use self::deferred::Deferred;
use self::lease::{Lease, Leases};
use self::process::{Settle, Step};
use super::core::{Consumer, Core, Running};
use super::poll::POLL;
use super::ItemMeta;
use crate::error::{Error, Result};
use crate::sync::{Joiner, Latch};

/// The longest pause between scans while errors persist.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

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

    /// A worker gives the lease on the item named back (see
    /// [`Leases::let_go`]) and wakes the scanner: a pass that ran between
    /// the lock's deletion and the lease's end passed the item by as held,
    /// and no event would come for it again.
    fn let_go<T: Send + 'static>(&self, core: &Core<T>, name: &str, lease: &Lease) {
        self.leases.let_go(core, name, lease);
        self.wake.lock().open();
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
            Joiner::spawn("zk-queue-scan", move || scan::scan_loop(&core, &control, tx))
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
}

impl Running for Engine {
    fn stop(self: Box<Self>, deadline: Instant) {
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
