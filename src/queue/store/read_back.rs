//! Resolving puts whose create reply was lost: reading the queue's newest
//! items back for their tokens (see the module doc of `store`).

use std::collections::{HashMap, HashSet};

use super::{fail_all, Multi, Put, State, Store};
use crate::client::Opts;
use crate::codec::trailer;
use crate::error::{Error, Result};
use crate::naming::{parse_sequence, SequenceKey};
use crate::path;
use crate::queue::stats::QueueCounters;

impl Store {
    /// Looks for the tokens of puts in `State::Unknown` among the queue's
    /// newest items: found ones are done, and so are the others of their
    /// multi (a multi is applied whole, so a put of it that is not found was
    /// stored and taken already); the others are sent again. If the queue
    /// cannot be read now, they stay unknown and the error is returned.
    pub(super) fn resolve(&self, puts: &[Put], states: &mut [State], opts: Opts<'_>) -> Result<()> {
        let unknown: Vec<(usize, Option<SequenceKey>, Option<Multi>)> = states
            .iter()
            .enumerate()
            .filter_map(|(i, s)| match s {
                State::Unknown(floor, multi) => Some((i, *floor, *multi)),
                _ => None,
            })
            .collect();
        if unknown.is_empty() {
            return Ok(());
        }
        let floors: Vec<(usize, Option<SequenceKey>)> = unknown.iter().map(|&(i, floor, _)| (i, floor)).collect();
        match self.find_tokens(puts, &floors, opts) {
            Ok(found) => {
                let applied: HashSet<Multi> = unknown
                    .iter()
                    .filter(|&&(i, _, _)| found.contains_key(&puts[i].token))
                    .filter_map(|&(_, _, multi)| multi)
                    .collect();
                for (i, _, multi) in unknown {
                    states[i] = if let Some(created) = found.get(&puts[i].token) {
                        log::debug!("a put whose reply was lost was applied: {created}");
                        State::Done(Ok(()))
                    } else if multi.is_some_and(|m| applied.contains(&m)) {
                        log::debug!("a put whose reply was lost was applied with its multi, and taken since");
                        State::Done(Ok(()))
                    } else {
                        QueueCounters::bump(&self.counters.puts_resent);
                        log::info!(
                            "a put under {} whose reply was lost is not in the queue; sending it again \
                             (stored twice if a consumer already took it)",
                            self.path
                        );
                        State::Send
                    };
                }
            }
            Err(e) if e.is_retryable() => {
                log::debug!("reading back puts under {}: {e}", self.path);
                return Err(e);
            }
            Err(e) => fail_all(states, |s| matches!(s, State::Unknown(..)), &e),
        }
        Ok(())
    }

    /// The paths of the items holding any of the `unknown` puts' tokens.
    fn find_tokens(
        &self,
        puts: &[Put],
        unknown: &[(usize, Option<SequenceKey>)],
        opts: Opts<'_>,
    ) -> Result<HashMap<u128, String>> {
        // One attempt each: `store` retries by the policy, within its
        // deadline. The sync first: after a reconnection to another member,
        // a create applied by the leader may not have reached it yet.
        self.client.sync(&self.path, opts.once())?;
        let names = match self.client.get_children_with(&self.path, opts.once()) {
            Ok((names, _)) => names,
            Err(Error::NoNode { .. }) => return Ok(HashMap::new()),
            Err(e) => return Err(e),
        };
        // The lowest floor of each prefix; `None` means no floor is known.
        let mut floors: HashMap<&str, Option<SequenceKey>> = HashMap::new();
        for &(i, floor) in unknown {
            let prefix = path::name(&puts[i].node_prefix);
            let entry = floors.entry(prefix).or_insert(floor);
            *entry = match (*entry, floor) {
                (Some(a), Some(b)) => Some(a.min(b)),
                _ => None,
            };
        }
        let candidates: Vec<String> = names
            .iter()
            .filter(|name| {
                floors.iter().any(|(prefix, floor)| {
                    parse_sequence(name, prefix)
                        .and_then(SequenceKey::new)
                        .is_some_and(|key| floor.is_none_or(|f| key >= f))
                })
            })
            .map(|name| path::join(&self.path, name))
            .collect();
        let mut found = HashMap::new();
        for (candidate, result) in candidates
            .iter()
            .zip(self.client.get_data_many_with(&candidates, opts)?)
        {
            match result {
                Ok((data, _)) => {
                    if let Some(token) = trailer::token_of(&data) {
                        found.insert(token, candidate.clone());
                    }
                }
                // Consumed since the listing.
                Err(Error::NoNode { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(found)
    }
}
