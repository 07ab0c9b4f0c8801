//! Processing one item: plain (delete, then consume) or lock-safe (lock,
//! consume, then acknowledge).

use super::finish::{self, Lock};
use super::Control;
use crate::codec::{decode_frame, trailer};
use crate::error::{Error, Result};
use crate::path;
use crate::queue::core::Core;
use crate::queue::{ConsumeError, ErrorMode};

/// An item's data, decoded.
pub(super) struct Decoded<'a, T> {
    /// The serialized records, for requeueing the ones not yet consumed.
    pub(super) records: Vec<&'a [u8]>,
    pub(super) values: Vec<T>,
    /// Failed deliveries so far.
    pub(super) attempts: u32,
}

/// Processes one item; errors are logged and told to the consumer.
pub(super) fn item<T: Send + 'static>(core: &Core<T>, control: &Control, name: &str) {
    let Some(lock_dir) = &core.options.lock_path else {
        return; // plain items are claimed by the scanner
    };
    let result = lock_safe(core, control, lock_dir, name);
    if let Err(e) = result {
        log::warn!("queue {}: item {name}: {e}", core.path);
        core.tell_error(&e);
    }
}

/// Reads every record before anything is deleted, so an undecodable item is
/// never lost.
pub(super) fn decode<'a, T: 'static>(core: &Core<T>, item_path: &str, data: &'a [u8]) -> Result<Decoded<'a, T>> {
    let corrupt = |source: Box<dyn std::error::Error + Send + Sync>| Error::CorruptItem {
        path: item_path.to_owned(),
        source,
    };
    let records = decode_frame(data).map_err(|e| corrupt(Box::new(e)))?;
    let values = records
        .iter()
        .map(|r| core.serializer.deserialize(r))
        .collect::<std::result::Result<Vec<T>, _>>()
        .map_err(|e| corrupt(Box::new(e)))?;
    let attempts = trailer::attempts(data, trailer::frame_len(&records));
    Ok(Decoded {
        records,
        values,
        attempts,
    })
}

/// Plain mode: consumes the values of an item the scanner already deleted
/// (at most once: a consumer error cannot bring it back).
pub(super) fn consume_claimed<T: Send + 'static>(core: &Core<T>, name: &str, values: Vec<T>) {
    for value in values {
        if let Err(e) = consume(core, value) {
            log::warn!(
                "{}/{name}: the consumer failed; without a lock path the item was already deleted: {e}",
                core.path
            );
        }
    }
}

/// At least once: lock, consume, then delete item and lock in one fenced multi.
fn lock_safe<T: Send + 'static>(core: &Core<T>, control: &Control, lock_dir: &str, name: &str) -> Result<()> {
    let Some(lock) = Lock::acquire(core, lock_dir, name)? else {
        return Ok(()); // another consumer holds it
    };
    let item_path = path::join(&core.path, name);
    let (data, stat) = match core.client.get_data(&item_path) {
        Ok(found) => found,
        Err(e) => {
            lock.release(core);
            return match e {
                Error::NoNode { .. } => Ok(()),
                e => Err(e),
            };
        }
    };
    let decoded = match decode(core, &item_path, &data) {
        Ok(decoded) => decoded,
        Err(corrupt) => return finish::dead_letter(core, control, name, &data, stat.version, Some(&lock), corrupt),
    };
    let Decoded {
        records,
        values,
        attempts,
    } = decoded;
    for (index, value) in values.into_iter().enumerate() {
        let Err(e) = consume(core, value) else { continue };
        match core.options.error_mode {
            ErrorMode::Delete => {
                log::warn!("{item_path}: the consumer failed; deleting the record (error mode delete): {e}");
            }
            ErrorMode::Requeue => {
                log::warn!("{item_path}: the consumer failed on attempt {}: {e}", attempts + 1);
                return finish::requeue(
                    core,
                    control,
                    name,
                    stat.version,
                    &lock,
                    &records[index..],
                    attempts + 1,
                );
            }
        }
    }
    finish::acknowledge(core, &item_path, stat.version, &lock)
}

/// Runs the consumer on one value; a panic counts as an error.
fn consume<T: Send + 'static>(core: &Core<T>, value: T) -> std::result::Result<(), ConsumeError> {
    let Some(consumer) = &core.consumer else {
        return Ok(());
    };
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| consumer.consume(value))) {
        Ok(result) => result,
        Err(_) => Err("the consumer panicked".into()),
    }
}
