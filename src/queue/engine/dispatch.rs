//! The dispatcher of a pull consumer: hands the records of claimed items to
//! the takers of its [`ItemReceiver`](crate::ItemReceiver) in order, and
//! settles each item as its taker answers (acknowledges, fails, releases or
//! drops the delivery).
//!
//! One thread serves every taker, so a taker never waits for another's
//! answer: the dispatcher offers the next record, hears answers, and takes
//! the next claimed item, whichever comes first. A delivery is *outstanding*
//! from the moment a taker has it until its answer; at most `claim_window`
//! are outstanding at once. With the window full the dispatcher offers
//! nothing, so takers wait until a delivery is answered (with a lock path,
//! also until its lease is settled: the scanner holds at most `claim_window`
//! leases, the outstanding deliveries' among them).

use std::collections::{HashMap, VecDeque};

use crossbeam_channel::{Receiver, Select, SendError};

use super::process::{begin, InFlight, Settle, Step};
use super::{Work, POLL};
use crate::queue::pull::{PullConsumer, Released};

/// Serves the takers until the scanner is done and every delivery handed out
/// is answered.
pub(super) fn run<T: Send + 'static>(cx: &Settle<'_, T>, pull: &PullConsumer<T>, work: &Receiver<Work<T>>) {
    let window = cx.core.options.claim_window;
    // Records ready to offer, in order: the next record of an item being
    // answered goes first.
    let mut offers: VecDeque<(T, Box<InFlight<T>>)> = VecDeque::new();
    let mut outstanding: HashMap<u64, Box<InFlight<T>>> = HashMap::new();
    let mut next_id = 0u64;
    let mut scanning = true;
    loop {
        // An item locked under a session that has since expired is not
        // offered: another consumer may hold it now.
        if offers.iter().any(|(_, item)| item.lost_with_session(cx.core)) {
            for (value, item) in std::mem::take(&mut offers) {
                if item.lost_with_session(cx.core) {
                    item.forget(cx);
                } else {
                    offers.push_back((value, item));
                }
            }
        }
        let stopping = cx.control.stopping();
        if stopping {
            // Closing: what no taker took goes back, without an attempt.
            while let Some((_, item)) = offers.pop_front() {
                let back = Released("the queue closed before anyone took the item");
                next(item.answered(cx, Err(Box::new(back))), &mut offers);
            }
            if !scanning && outstanding.is_empty() {
                return;
            }
        }
        let room = outstanding.len() < window;
        let mut select = Select::new();
        let answer_op = select.recv(pull.answers());
        // While closing, claimed items are still taken (to be given back),
        // so the scanner never waits on a full window.
        let work_op = (scanning && offers.is_empty() && (room || stopping)).then(|| select.recv(work));
        let offer_op = (!stopping && room && !offers.is_empty()).then(|| select.send(pull.deliveries()));
        let Ok(op) = select.select_timeout(POLL) else { continue };
        let index = op.index();
        if index == answer_op {
            // The dispatcher holds a sender, so the channel stays open.
            let Ok((id, answer)) = op.recv(pull.answers()) else {
                continue;
            };
            match outstanding.remove(&id) {
                Some(item) => next(item.answered(cx, answer), &mut offers),
                None => log::error!(
                    "queue {}: an answer for delivery {id}, which is not outstanding",
                    cx.core.path
                ),
            }
        } else if Some(index) == work_op {
            match op.recv(work) {
                Ok(work) => next(begin(cx, work), &mut offers),
                Err(_) => scanning = false,
            }
        } else if Some(index) == offer_op {
            let Some((value, item)) = offers.pop_front() else {
                unreachable!("an offer is made only with a record in hand")
            };
            let id = next_id;
            next_id += 1;
            let delivery = pull.delivery(id, value, item.meta().clone());
            match op.send(pull.deliveries(), delivery) {
                Ok(()) => {
                    outstanding.insert(id, item);
                    if outstanding.len() == window {
                        log::debug!(
                            "queue {}: {window} deliveries outstanding (the claim window); takers wait until one is answered",
                            cx.core.path
                        );
                    }
                }
                Err(SendError(delivery)) => {
                    // No taker can ever come: give everything back, without
                    // an attempt, and claim nothing more.
                    PullConsumer::withdraw(delivery);
                    log::warn!(
                        "queue {}: every item receiver was dropped; it stops consuming and gives its items back",
                        cx.core.path
                    );
                    cx.control.stop();
                    let back = Released("every item receiver was dropped");
                    next(item.answered(cx, Err(Box::new(back))), &mut offers);
                }
            }
        }
    }
}

/// Puts a record to deliver (the next of an item, or a new item's first)
/// before the other offers.
fn next<T>(step: Step<T>, offers: &mut VecDeque<(T, Box<InFlight<T>>)>) {
    if let Step::Deliver(value, item) = step {
        offers.push_front((value, item));
    }
}
