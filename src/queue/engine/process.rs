//! Processing one item: plain (delete, then consume) or lock-safe (lock,
//! consume, then acknowledge).

use crossbeam_channel::Sender;

use super::ack::Ack;
use super::outcome;
use super::{Control, Locked};
use crate::codec::{decode_frame, trailer};
use crate::error::{Error, Result};
use crate::queue::core::Core;
use crate::queue::pull::Released;
use crate::queue::stats::QueueCounters;
use crate::queue::{ConsumeError, ErrorMode, ItemMeta};

/// An item's data, decoded.
pub(super) struct Decoded<'a, T> {
    /// The serialized records, for requeueing the ones not yet consumed.
    pub(super) records: Vec<&'a [u8]>,
    pub(super) values: Vec<T>,
    /// What the item's trailer records (nothing if it is damaged).
    pub(super) trailer: trailer::Trailer,
}

impl<T> Decoded<'_, T> {
    /// Failed deliveries so far.
    pub(super) fn attempts(&self) -> u32 {
        self.trailer.attempts
    }

    /// The item's first put, epoch milliseconds: recorded by a requeue, or
    /// `ctime`, the creation time of its node.
    pub(super) fn put_at(&self, ctime: i64) -> i64 {
        self.trailer.put_at.unwrap_or(ctime)
    }

    /// The metadata of item node `name`, created at `ctime`.
    pub(super) fn meta(&self, name: &str, ctime: i64) -> ItemMeta {
        ItemMeta::new(name, self.attempts(), self.put_at(ctime))
    }
}

/// Reads every record before anything is deleted, so an undecodable item is
/// never lost.
pub(super) fn decode<'a, T: 'static>(core: &Core<T>, item_path: &str, data: &'a [u8]) -> Result<Decoded<'a, T>> {
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
    Ok(Decoded {
        records,
        values,
        trailer,
    })
}

/// Plain mode: consumes the values of an item the scanner already deleted
/// (at most once: a consumer error cannot bring it back).
pub(super) fn consume_claimed<T: Send + 'static>(core: &Core<T>, name: &str, values: Vec<T>, meta: &ItemMeta) {
    for value in values {
        if let Err(e) = consume(core, value, meta) {
            log::warn!(
                "{}/{name}: the consumer failed; without a lock path the item was already deleted: {e}",
                core.path
            );
        }
    }
    QueueCounters::bump(&core.counters.settled);
}

/// Lock-safe mode: consumes an item the scanner locked, then queues its
/// acknowledgement, or requeues it or moves it to the dead-letter path.
pub(super) fn consume_locked<T: Send + 'static>(core: &Core<T>, control: &Control, acks: &Sender<Ack>, claim: Locked) {
    let Locked {
        name,
        item_path,
        item_version,
        ctime,
        data,
        lease,
    } = claim;
    let settled = match decode(core, &item_path, &data) {
        Err(corrupt) => outcome::dead_letter(core, control, &name, &data, item_version, Some(&lease), corrupt),
        Ok(decoded) => 'consume: {
            let meta = decoded.meta(&name, ctime);
            let (attempts, put_at) = (decoded.attempts(), decoded.put_at(ctime));
            let Decoded { records, values, .. } = decoded;
            for (index, value) in values.into_iter().enumerate() {
                let Err(e) = consume(core, value, &meta) else { continue };
                if Released::is(&e) {
                    if index > 0 {
                        break 'consume outcome::release_rest(
                            core,
                            &name,
                            item_version,
                            &lease,
                            &records[index..],
                            outcome::Story { attempts, put_at },
                        );
                    }
                    // Untouched: unlocked where it is, no attempt counted.
                    log::debug!("{item_path}: {e}; unlocked");
                    control.leases.let_go(core, &name, &lease);
                    QueueCounters::bump(&core.counters.settled);
                    return;
                }
                match core.options.error_mode {
                    ErrorMode::Delete => {
                        log::warn!("{item_path}: the consumer failed; deleting the record (error mode delete): {e}");
                    }
                    ErrorMode::Requeue => {
                        break 'consume outcome::requeue(
                            core,
                            control,
                            &name,
                            item_version,
                            &lease,
                            outcome::Failure {
                                remaining: &records[index..],
                                story: outcome::Story {
                                    attempts: attempts.saturating_add(1),
                                    put_at,
                                },
                                cause: &e,
                            },
                        );
                    }
                }
            }
            // Settled by the acknowledger, which also frees the lease.
            let ack = Ack {
                name,
                item_path,
                item_version,
                lease,
            };
            if let Err(unsent) = acks.send(ack) {
                let ack = unsent.into_inner();
                log::error!(
                    "{}: consumed, but the acknowledger is gone; it will be delivered again",
                    ack.item_path
                );
                control.leases.let_go(core, &ack.name, &ack.lease);
                QueueCounters::bump(&core.counters.settled);
            }
            return;
        }
    };
    if let Err(e) = &settled {
        log::warn!("queue {}: item {name}: {e}", core.path);
        core.tell_error(e);
    }
    match settled {
        // Free the item for another try; a lock that cannot be deleted now
        // is kept for a later pass. (A lost lease is another holder's lock
        // now: nothing of it is ours to delete.)
        Err(e) if !matches!(e, Error::LeaseLost { .. }) => control.leases.let_go(core, &name, &lease),
        _ => control.leases.finished([name.as_str()]),
    }
    QueueCounters::bump(&core.counters.settled);
}

/// Runs the consumer on one value; a panic counts as an error.
fn consume<T: Send + 'static>(core: &Core<T>, value: T, meta: &ItemMeta) -> std::result::Result<(), ConsumeError> {
    let Some(consumer) = &core.consumer else {
        return Ok(());
    };
    let call = std::panic::AssertUnwindSafe(|| consumer.consume_with_meta(value, meta));
    let result = match std::panic::catch_unwind(call) {
        Ok(result) => result,
        Err(_) => Err("the consumer panicked".into()),
    };
    let counter = match &result {
        Ok(()) => &core.counters.consumed,
        Err(e) if Released::is(e) => &core.counters.released,
        Err(_) => &core.counters.consumer_errors,
    };
    QueueCounters::bump(counter);
    result
}
