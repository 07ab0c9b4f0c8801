//! How a [`SimpleQueue`] handle claims items from its local list: one at a
//! time (a read, then the claiming delete), or, with a prefetch, a window at
//! a time (the window's data in multi-reads, then its deletes in multis).

use std::time::Instant;

use super::SimpleQueue;
use crate::client::{Deleted, Opts};
use crate::error::{Error, Result};
use crate::naming::SequenceKey;
use crate::path;

impl SimpleQueue {
    /// The next item from what this handle already knows of: its claimed
    /// items, else its local list. `None` when both are used up (or when
    /// `deadline` passed while another thread of the handle was claiming).
    pub(super) fn next_known(
        &self,
        remove: bool,
        opts: Opts<'_>,
        deadline: Option<Instant>,
    ) -> Result<Option<Vec<u8>>> {
        if self.prefetch == 0 {
            return self.first_from_local(remove, opts);
        }
        loop {
            if let Some(data) = self.ahead.first(remove) {
                return Ok(Some(data));
            }
            if !remove {
                // A peek reads the head without claiming anything.
                return self.first_from_local(false, opts);
            }
            let Some(_turn) = self.ahead.claim_turn(deadline) else {
                return Ok(None);
            };
            if self.ahead.len() > 0 {
                continue; // another thread claimed a window meanwhile
            }
            let window = self.local.take_first(self.prefetch);
            if window.is_empty() {
                return Ok(None);
            }
            self.claim_window(window, opts)?;
        }
    }

    /// Reads (and with `remove`, claims) the first item of the local list that
    /// still exists. `None` when the local list is used up.
    fn first_from_local(&self, remove: bool, opts: Opts<'_>) -> Result<Option<Vec<u8>>> {
        while let Some((key, name)) = self.local.first(remove) {
            let node = path::join(&self.dir, &name);
            let data = match self.client.get_data_with(&node, opts) {
                Ok((_, stat)) if stat.num_children > 0 => {
                    self.local.skip(&self.dir, key, name);
                    continue;
                }
                Ok((data, _)) => data,
                Err(Error::NoNode { .. }) => {
                    // Taken by another consumer since we listed it.
                    self.local.forget(key);
                    continue;
                }
                Err(e) => {
                    self.local.restore(key, name);
                    return Err(e);
                }
            };
            if !remove {
                return Ok(Some(data));
            }
            // The claim is finished within the request timeout whatever the
            // call's deadline: given up on, it could delete the item unseen.
            match self.client.delete_with(&node, None, Opts::new()) {
                Ok(Deleted::Yes) => return Ok(Some(data)),
                Ok(Deleted::Unknown) => {
                    warn_possible_duplicate(&node);
                    return Ok(Some(data));
                }
                Err(Error::NoNode { .. }) => continue,
                Err(e) => {
                    self.local.restore(key, name);
                    return Err(e);
                }
            }
        }
        Ok(None)
    }

    /// Claims a window of items taken off the local list: reads them all
    /// (multi-reads, within the call's deadline), then deletes those read
    /// (in multis, within the request timeout whatever the deadline, as a
    /// single claim is), and keeps the claimed items in order. Items another
    /// consumer took are passed over. On an error the window's unread items
    /// go back to the local list, and the error is returned only if nothing
    /// was claimed.
    fn claim_window(&self, window: Vec<(SequenceKey, String)>, opts: Opts<'_>) -> Result<()> {
        let nodes: Vec<String> = window.iter().map(|(_, name)| path::join(&self.dir, name)).collect();
        let reads = match self.client.read_many_with(&nodes, opts) {
            Ok(reads) => reads,
            Err(e) => {
                window.into_iter().for_each(|(key, name)| self.local.restore(key, name));
                return Err(e);
            }
        };
        let mut failed = None;
        let mut read = Vec::with_capacity(window.len());
        for ((key, name), result) in window.into_iter().zip(reads) {
            if failed.is_some() {
                // After a failed read, the rest waits for the next window, so
                // the items keep their order.
                self.local.restore(key, name);
                continue;
            }
            match result {
                Ok((_, stat)) if stat.num_children > 0 => self.local.skip(&self.dir, key, name),
                Ok((data, _)) => read.push((key, name, data)),
                Err(Error::NoNode { .. }) => {} // taken by another consumer
                Err(e) => {
                    self.local.restore(key, name);
                    failed = Some(e);
                }
            }
        }
        let deletes: Vec<(String, Option<i32>)> = read
            .iter()
            .map(|(_, name, _)| (path::join(&self.dir, name), None))
            .collect();
        let deleted = self
            .client
            .delete_in_multis_with(&deletes, Opts::new())
            .unwrap_or_else(|e| {
                // Nothing was sent (the client closed): every item stays.
                deletes.iter().map(|_| Err(e.clone())).collect()
            });
        let mut claimed = Vec::with_capacity(read.len());
        for ((key, name, data), result) in read.into_iter().zip(deleted) {
            let node = path::join(&self.dir, &name);
            // Sent but unanswered, it is resolved before anything is concluded.
            match self.client.settle_batch_delete(&node, None, result) {
                Ok(Deleted::Yes) => claimed.push(data),
                Ok(Deleted::Unknown) => {
                    warn_possible_duplicate(&node);
                    claimed.push(data);
                }
                Err(Error::NoNode { .. }) => {} // taken by another consumer
                Err(Error::NotEmpty { .. }) => self.local.skip(&self.dir, key, name),
                Err(e) => {
                    self.local.restore(key, name);
                    failed.get_or_insert(e);
                }
            }
        }
        let none_claimed = claimed.is_empty();
        self.ahead.extend(claimed);
        match failed {
            Some(e) if none_claimed => Err(e),
            _ => Ok(()),
        }
    }
}

fn warn_possible_duplicate(node: &str) {
    log::warn!(
        "{node}: the claiming delete's reply was lost; returning the item, which another consumer may also have"
    );
}
