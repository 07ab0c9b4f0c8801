//! Processing one item, record by record: plain (deleted before the consumer
//! sees it) or lock-safe (locked, consumed, then acknowledged, requeued,
//! released or moved to the dead-letter path).
//!
//! An item is a small state machine ([`InFlight`]): [`begin`] decodes it and
//! offers its first record; each answer of the consumer
//! ([`InFlight::answered`]) either offers the next record or settles the
//! item. A callback worker answers at once by running the consumer; a pull
//! consumer's dispatcher answers when a taker acknowledges its delivery.

use crossbeam_channel::Sender;

use super::ack::Ending;
use super::lease::{lease_lost, report};
use super::outcome;
use super::{Control, Locked, Work};
use crate::codec::{decode_frame, trailer};
use crate::error::{Error, Result};
use crate::queue::core::Core;
use crate::queue::pull::Released;
use crate::queue::stats::QueueCounters;
use crate::queue::{ConsumeError, ErrorMode, ItemMeta, QueueConsumer};

/// An item's data, decoded.
pub(super) struct Decoded<T> {
    pub(super) values: Vec<T>,
    /// What the item's trailer records (nothing if it is damaged).
    pub(super) trailer: trailer::Trailer,
}

impl<T> Decoded<T> {
    /// What the item carries from node to node: its failed deliveries so
    /// far, and its first put (recorded by a requeue, or `ctime`, the
    /// creation time of its node, in epoch milliseconds).
    pub(super) fn story(&self, ctime: i64) -> outcome::Story {
        outcome::Story {
            attempts: self.trailer.attempts,
            put_at: self.trailer.put_at.unwrap_or(ctime),
        }
    }

    /// The metadata of item node `name`, created at `ctime`.
    pub(super) fn meta(&self, name: &str, ctime: i64) -> ItemMeta {
        let story = self.story(ctime);
        ItemMeta::new(name, story.attempts, story.put_at)
    }
}

/// Reads every record before anything is deleted, so an undecodable item is
/// never lost.
pub(super) fn decode<T: 'static>(core: &Core<T>, item_path: &str, data: &[u8]) -> Result<Decoded<T>> {
    let corrupt = |source: std::sync::Arc<dyn std::error::Error + Send + Sync>| Error::CorruptItem {
        path: item_path.to_owned(),
        source,
    };
    let records = decode_frame(data).map_err(|e| corrupt(std::sync::Arc::new(e)))?;
    let values = records
        .iter()
        .map(|r| core.serializer.deserialize(r))
        .collect::<std::result::Result<Vec<T>, _>>()
        .map_err(|e| corrupt(std::sync::Arc::new(e)))?;
    let trailer = trailer::read(data, trailer::frame_len(&records)).unwrap_or_else(|damage| {
        // Read as nothing recorded: delivered as if for the first time.
        log::warn!("{item_path}: {damage}; its attempts and back-off are read as none");
        trailer::Trailer::default()
    });
    Ok(Decoded { values, trailer })
}

/// What processing an item needs: the queue, its engine, and (lock-safe) the
/// acknowledger.
pub(super) struct Settle<'a, T> {
    pub(super) core: &'a Core<T>,
    pub(super) control: &'a Control,
    pub(super) acks: Option<&'a Sender<Ending>>,
}

/// What comes after a step of an item.
pub(super) enum Step<T> {
    /// Offer this record to the consumer; its answer goes to the item.
    Deliver(T, Box<InFlight<T>>),
    /// The item is settled (or handed to the acknowledger).
    Settled,
}

/// An item whose records are being offered to the consumer one at a time.
pub(super) struct InFlight<T> {
    /// The records not offered yet.
    values: std::vec::IntoIter<T>,
    /// How many records were offered so far.
    offered: usize,
    held: Held,
    /// What the consumer is told about the item.
    meta: ItemMeta,
}

/// How an item in flight is held.
enum Held {
    /// Plain mode: already deleted.
    Claimed { name: String },
    /// Lock-safe mode: locked, with its failed deliveries so far and first
    /// put.
    Locked { claim: Locked, story: outcome::Story },
}

/// Starts processing an item the scanner claimed: its first record, or
/// settled at once (undecodable, or no records).
pub(super) fn begin<T: Send + 'static>(cx: &Settle<'_, T>, work: Work<T>) -> Step<T> {
    match work {
        Work::Claimed { name, values, meta } => InFlight::new(values, Held::Claimed { name }, meta).advance(cx),
        Work::Locked(claim) => {
            let decoded = decode(cx.core, &claim.item_path, &claim.data)
                .map(|d| (d.meta(&claim.name, claim.ctime), d.story(claim.ctime), d.values));
            match decoded {
                Ok((meta, story, values)) => InFlight::new(values, Held::Locked { claim, story }, meta).advance(cx),
                Err(corrupt) => {
                    let data = claim.data.clone();
                    match outcome::move_or_leave(cx.core, cx.control, &claim.name, Some(&claim.lease), data, corrupt) {
                        Some(end) => end_lease(cx, claim, end),
                        // Left in place, its lease let go.
                        None => settled(cx, claim, Ok(())),
                    }
                    Step::Settled
                }
            }
        }
    }
}

impl<T: Send + 'static> InFlight<T> {
    fn new(values: Vec<T>, held: Held, meta: ItemMeta) -> InFlight<T> {
        InFlight {
            values: values.into_iter(),
            offered: 0,
            held,
            meta,
        }
    }

    /// What the consumer is told about the item.
    pub(super) fn meta(&self) -> &ItemMeta {
        &self.meta
    }

    /// The consumer's answer for the record offered last.
    pub(super) fn answered(
        self: Box<Self>,
        cx: &Settle<'_, T>,
        answer: std::result::Result<(), ConsumeError>,
    ) -> Step<T> {
        let core = cx.core;
        let counter = match &answer {
            Ok(()) => &core.counters.consumed,
            Err(e) if Released::is(e) => &core.counters.released,
            Err(_) => &core.counters.consumer_errors,
        };
        QueueCounters::bump(counter);
        if !matches!(&answer, Err(e) if Released::is(e)) {
            core.counters.metrics.taken(answer.is_ok(), self.meta.put_time());
        }
        let Err(e) = answer else { return self.advance(cx) };
        let released = Released::is(&e);
        match &self.held {
            Held::Claimed { name } => {
                log::warn!(
                    "{}/{name}: the consumer failed; without a lock path the item was already deleted: {e}",
                    core.path
                );
                return self.advance(cx);
            }
            Held::Locked { claim, .. } if !released && core.options.error_mode == ErrorMode::Delete => {
                log::warn!(
                    "{}: the consumer failed; deleting the record (error mode delete): {e}",
                    claim.item_path
                );
                return self.advance(cx);
            }
            Held::Locked { .. } => {}
        }
        let index = self.offered.saturating_sub(1);
        let Held::Locked { claim, story } = self.held else {
            return Step::Settled;
        };
        if released && index == 0 {
            // Untouched: unlocked where it is, no attempt counted.
            log::debug!("{}: {e}; unlocked", claim.item_path);
            cx.control.let_go(core, &claim.name, &claim.lease);
            QueueCounters::bump(&core.counters.settled);
            return Step::Settled;
        }
        let ended = match decode_frame(&claim.data) {
            Err(frame) => Err(Error::encoding(frame)),
            Ok(records) if released => outcome::give_back(&records[index..], story).map(Some),
            Ok(records) => outcome::requeue(
                core,
                cx.control,
                &claim.name,
                &claim.lease,
                outcome::Failure {
                    remaining: &records[index..],
                    story: outcome::Story {
                        attempts: story.attempts.saturating_add(1),
                        ..story
                    },
                    cause: &e,
                },
            ),
        };
        match ended {
            Ok(Some(end)) => end_lease(cx, claim, end),
            // Left in place, its lease let go.
            Ok(None) => settled(cx, claim, Ok(())),
            Err(e) => settled(cx, claim, Err(e)),
        }
        Step::Settled
    }

    /// Offers the next record, or settles the item once every record was
    /// answered.
    fn advance(mut self, cx: &Settle<'_, T>) -> Step<T> {
        if self.values.len() > 0 && self.lost_with_session(cx.core) {
            self.forget(cx);
            return Step::Settled;
        }
        if let Some(value) = self.values.next() {
            self.offered += 1;
            return Step::Deliver(value, Box::new(self));
        }
        match self.held {
            Held::Claimed { .. } => QueueCounters::bump(&cx.core.counters.settled),
            Held::Locked { claim, .. } => end_lease(cx, claim, outcome::End::Acknowledge),
        }
        Step::Settled
    }

    /// Whether the item is locked under a session that a server said expired
    /// (or that a new one replaced): its lock is gone, and another consumer
    /// may hold the item now, so it must not reach the consumer again.
    pub(super) fn lost_with_session(&self, core: &Core<T>) -> bool {
        match &self.held {
            Held::Locked { claim, .. } => !core.client.is_live(claim.lease.session()),
            Held::Claimed { .. } => false,
        }
    }

    /// Drops an item [lost with its session](Self::lost_with_session)
    /// without delivering the rest of it: its next holder delivers it. The
    /// lease is counted lost and forgotten (its lock went with the session).
    pub(super) fn forget(self, cx: &Settle<'_, T>) {
        let Held::Locked { claim, .. } = self.held else { return };
        let core = cx.core;
        log::info!(
            "{}: not delivered: its lock went with the expired session, and its next holder delivers it",
            claim.item_path
        );
        core.tell_error(&lease_lost(core, &claim.item_path));
        cx.control.leases.finished([claim.name.as_str()]);
        QueueCounters::bump(&core.counters.settled);
    }
}

/// Hands the end of a claim (its acknowledgement, requeue, records given
/// back or move to the dead-letter path) to the acknowledger, which sends it
/// with others in one multi and frees the lease; the worker does not wait
/// for it.
fn end_lease<T: Send + 'static>(cx: &Settle<'_, T>, claim: Locked, end: outcome::End) {
    let Locked {
        name,
        item_path,
        item_version,
        lease,
        ..
    } = claim;
    let ending = Ending::new(name, item_path, item_version, lease, end);
    let Some(acks) = cx.acks else {
        log::error!("{}: a locked item without an acknowledger", ending.item_path);
        cx.control.let_go(cx.core, &ending.name, &ending.lease);
        QueueCounters::bump(&cx.core.counters.settled);
        return;
    };
    cx.control.leases.ending(&ending.name);
    if let Err(unsent) = acks.send(ending) {
        let ending = unsent.into_inner();
        log::error!(
            "{}: not {}: the acknowledger is gone; it will be delivered again",
            ending.item_path,
            ending.end.done()
        );
        cx.control.let_go(cx.core, &ending.name, &ending.lease);
        QueueCounters::bump(&cx.core.counters.settled);
    }
}

/// After a locked item's end failed before it reached the acknowledger, or
/// it was left in place (`ended`): its lease is freed, or (lost) forgotten.
fn settled<T: Send + 'static>(cx: &Settle<'_, T>, claim: Locked, ended: Result<()>) {
    let core = cx.core;
    if let Err(e) = &ended {
        report(core, e);
    }
    match ended {
        // Free the item for another try; a lock that cannot be deleted now
        // is kept for a later pass. (A lost lease is another holder's lock
        // now: nothing of it is ours to delete.)
        Err(e) if !matches!(e, Error::LeaseLost { .. }) => cx.control.let_go(core, &claim.name, &claim.lease),
        _ => cx.control.leases.finished([claim.name.as_str()]),
    }
    QueueCounters::bump(&core.counters.settled);
}

/// Runs a callback consumer on one value of the item `meta` describes; a
/// panic counts as an error.
pub(super) fn consume<T: Send + 'static>(
    consumer: &dyn QueueConsumer<T>,
    value: T,
    meta: &ItemMeta,
) -> std::result::Result<(), ConsumeError> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| consumer.consume_with_meta(value, meta))) {
        Ok(result) => result,
        Err(_) => Err("the consumer panicked".into()),
    }
}
