//! How [`DeadLetters::requeue_to`](super::DeadLetters::requeue_to) moves
//! dead letters: read with multi-reads, in name order, then moved in multis
//! of several letters each (per letter, the create of the item and the
//! delete of the letter at the version read), one multi after the other so
//! the items keep the letters' order.
//!
//! A multi is all or nothing. One that fails on a letter's delete (another
//! client changed or took that letter) is sent again without it; one whose
//! outcome is unknown (a lost reply) is settled by reading its letters: if
//! any is still there at the version read, the multi was not applied.

use std::ops::Range;

use crate::client::{Acl, CreateMode, Op, Opts, ZkClient, MULTI_OPS};
use crate::codec::{decode_frame, trailer};
use crate::error::{Error, Result};
use crate::inspect::ItemName;
use crate::naming::item_prefix;
use crate::path;

use super::{Requeued, READ_BATCH};

/// Lost replies in a row for one multi before the requeue gives up with
/// the last error.
const UNKNOWN_OUTCOMES: usize = 3;

/// One dead letter to move: where it is, at which version, and the item it
/// becomes.
struct Letter {
    path: String,
    version: i32,
    target: String,
    frame: Vec<u8>,
}

/// Moves the dead letters `names` under `dead` to the queue `queue` (which
/// exists, with `acl`), in order.
pub(super) fn requeue(client: &ZkClient, dead: &str, names: &[ItemName], queue: &str, acl: &[Acl]) -> Result<Requeued> {
    let mut done = Requeued::default();
    for chunk in names.chunks(READ_BATCH) {
        let letters = read(client, dead, chunk, queue, &mut done)?;
        let mut rest = &letters[..];
        while !rest.is_empty() {
            let run = next_run(client, rest, acl);
            move_run(client, &rest[run.clone()], acl, &mut done)?;
            rest = &rest[run.end..];
        }
    }
    Ok(done)
}

/// Reads the dead letters `names` under `dead` (multi-reads, pipelined) and
/// returns the ones to move, in order; an undecodable one stays and is
/// counted skipped, one already gone is left out.
fn read(client: &ZkClient, dead: &str, names: &[ItemName], queue: &str, done: &mut Requeued) -> Result<Vec<Letter>> {
    let paths: Vec<String> = names.iter().map(|n| path::join(dead, &n.name)).collect();
    let reads = client.read_many_with(&paths, Opts::new())?;
    let mut letters = Vec::with_capacity(names.len());
    for ((name, letter), read) in names.iter().zip(paths).zip(reads) {
        let (data, stat) = match read {
            Ok(read) => read,
            Err(Error::NoNode { .. }) => continue,
            Err(e) => return Err(e),
        };
        match decode_frame(&data) {
            // Without the trailer: the attempt count starts again.
            Ok(records) => letters.push(Letter {
                frame: data[..trailer::frame_len(&records)].to_vec(),
                path: letter,
                version: stat.version,
                target: path::join(queue, item_prefix(&name.name)),
            }),
            Err(e) => {
                log::warn!("dead letter {letter} is not a valid item and stays: {e}");
                done.skipped += 1;
            }
        }
    }
    Ok(letters)
}

/// A letter's two operations: create its item, delete it at its version.
fn pair(letter: &Letter, acl: &[Acl]) -> [Op; 2] {
    [
        Op::create_with_acl(
            letter.target.clone(),
            letter.frame.clone(),
            CreateMode::PersistentSequential,
            acl.to_vec(),
        ),
        Op::delete(letter.path.clone(), Some(letter.version)),
    ]
}

/// The first letters of `letters` whose pairs fit one multi: at most
/// [`MULTI_OPS`] operations that the server accepts; at least one letter.
fn next_run(client: &ZkClient, letters: &[Letter], acl: &[Acl]) -> Range<usize> {
    let ops: Vec<Op> = letters.iter().take(MULTI_OPS / 2).flat_map(|l| pair(l, acl)).collect();
    let fits = client.multi_chunks(&ops, MULTI_OPS).first().map_or(0, |c| c.end);
    0..(fits / 2).max(1)
}

/// Moves `letters` in one multi, sent again without any letter another
/// client changed or took, until each is moved or skipped.
fn move_run(client: &ZkClient, letters: &[Letter], acl: &[Acl], done: &mut Requeued) -> Result<()> {
    let mut pending: Vec<&Letter> = letters.iter().collect();
    let mut unknown = 0;
    while !pending.is_empty() {
        let ops: Vec<Op> = pending.iter().flat_map(|l| pair(l, acl)).collect();
        match client.multi_with(&ops, Opts::new().once()) {
            Ok(_) => {
                done.requeued += pending.len();
                return Ok(());
            }
            Err(Error::MultiFailed { index, source })
                if index % 2 == 1 && matches!(*source, Error::NoNode { .. } | Error::BadVersion { .. }) =>
            {
                done.skipped += 1;
                pending.remove(index / 2);
            }
            Err(e) if e.is_retryable() && unknown < UNKNOWN_OUTCOMES => {
                unknown += 1;
                if !settle(client, &mut pending, done)? {
                    return Ok(());
                }
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// After a multi of `pending` whose outcome is unknown: reads its letters.
/// None left at the version read: it was applied, they are counted moved
/// and `false` returned. Otherwise it was not: the letters changed or gone
/// meanwhile are counted skipped and dropped from `pending`, and `true`
/// says to send the rest again.
fn settle(client: &ZkClient, pending: &mut Vec<&Letter>, done: &mut Requeued) -> Result<bool> {
    let mut still = Vec::with_capacity(pending.len());
    for letter in pending.iter() {
        // Retried by the client's policy: the connection may be coming back.
        let unchanged = client
            .exists(&letter.path)?
            .is_some_and(|s| s.version == letter.version);
        still.push(unchanged);
    }
    if !still.contains(&true) {
        done.requeued += pending.len();
        return Ok(false);
    }
    let before = pending.len();
    let mut keep = still.into_iter();
    pending.retain(|_| keep.next().unwrap_or(false));
    done.skipped += before - pending.len();
    Ok(true)
}
