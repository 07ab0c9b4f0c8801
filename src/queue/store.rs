//! Storing item nodes so that a lost create reply never stores an item twice.
//!
//! A create whose reply a dropped connection swallowed may or may not have
//! been applied. Retrying it blindly can store the item twice; giving up can
//! report a stored item as failed. So every put carries a random token in its
//! trailer (see `codec::trailer`), and an unknown outcome is resolved by
//! reading back: ZooKeeper names a sequential node after its parent's
//! `cversion` at the time of the create, so a create sent when the parent's
//! `cversion` was `c` can only have produced a node whose sequence is at least
//! `c`. The resolver lists the queue, reads the items of the put's prefix from
//! that floor on, and looks for the token. Found: the put succeeded there.
//! Not found: it was not applied, or a consumer already took it; it is sent
//! again. Only in that second case, a consumer taking the item before the
//! read-back, is it stored twice. The read-back runs once the client notices
//! the loss, up to a request timeout later, so an idle consumer may well win
//! that race: each lost reply can add one duplicate, never a loss.
//!
//! Consecutive puts go out as multis of creates (see
//! `ZkClient::create_in_multis_with`). A multi is applied whole or not at
//! all, so one of its tokens found settles all of its puts: those not found
//! were stored and taken already, and are not sent again.

use std::collections::{HashMap, HashSet};
use std::time::Instant;

use parking_lot::Mutex;

use super::core::Core;
use super::stats::QueueCounters;
use crate::client::{CreateMode, Created, Opts, Retry};
use crate::codec::trailer;
use crate::error::{Error, Result};
use crate::naming::{item_sequence, parse_sequence, SequenceKey};
use crate::path;

/// One item node to create: its path prefix and its data, which ends with a
/// trailer holding `token`.
pub(crate) struct Put {
    pub(crate) node_prefix: String,
    pub(crate) data: Vec<u8>,
    pub(crate) token: u128,
}

impl Put {
    /// A put of an encoded `frame`; appends a fresh token.
    pub(crate) fn new(node_prefix: String, mut frame: Vec<u8>) -> Put {
        let token = fastrand::u128(..);
        trailer::append_token(&mut frame, token);
        Put {
            node_prefix,
            data: frame,
            token,
        }
    }
}

/// A lower bound for the sequence of the queue's next item: the highest
/// sequence this producer has seen created, or the queue's `cversion`.
#[derive(Default)]
pub(crate) struct Floor(Mutex<Option<SequenceKey>>);

impl Floor {
    fn raise(&self, key: SequenceKey) {
        let mut floor = self.0.lock();
        if floor.is_none_or(|f| f < key) {
            *floor = Some(key);
        }
    }

    fn forget(&self) {
        *self.0.lock() = None;
    }
}

/// How one put stands while [`store`] runs.
enum State {
    /// To be sent (again).
    Send,
    /// Sent with the floor read before; no reply.
    Unknown(Option<SequenceKey>, Option<Multi>),
    /// Finished.
    Done(Result<()>),
}

/// One sending of the puts not stored yet.
#[derive(Clone, Copy)]
struct Sending<'a> {
    /// Which sending of [`store`] this is.
    number: usize,
    /// Whether the queue node was created again already.
    recreated: bool,
    opts: Opts<'a>,
}

/// The multi a put was sent in: which sending of [`store`] and which multi
/// of it. All the puts of one multi were stored, or none was.
type Multi = (usize, usize);

impl<T: Send + 'static> Core<T> {
    /// Creates the item nodes of `puts`, in pipelined multis of consecutive
    /// puts, with the queue's ACL, and returns each one's result, in order. Connection errors are
    /// retried by the client's retry policy; a create whose reply was lost is
    /// resolved by reading back its token, so it is not stored twice. At
    /// `deadline`, retries stop and what is not done fails with
    /// [`Error::Timeout`] (a put whose outcome is still unknown then may have
    /// been stored).
    pub(crate) fn store(&self, puts: &[Put], deadline: Option<Instant>) -> Vec<Result<()>> {
        let mut retry = Retry::new(&self.client, "create", deadline);
        // Every request gives up at the deadline, if there is one.
        let opts = Opts::new().until(deadline);
        let mut states: Vec<State> = puts.iter().map(|_| State::Send).collect();
        let mut recreated = false;
        let mut sendings = 0;
        // Why the puts not done yet are waiting for a retry.
        let mut cause: Option<Error> = None;
        loop {
            let session = self.client.session();
            if states.iter().any(|s| matches!(s, State::Send)) {
                sendings += 1;
                let sending = Sending {
                    number: sendings,
                    recreated,
                    opts,
                };
                let missing_queue = self.send(puts, &mut states, &sending, &mut cause);
                // The queue node vanished (a reaped container, say): create
                // it again, once, and resend what it refused.
                if missing_queue {
                    recreated = true;
                    self.floor.forget();
                    let acl = &self.options.acl;
                    if let Err(e) = self.client.ensure_path_with(&self.path, opts.acl(acl)) {
                        fail_all(&mut states, |s| matches!(s, State::Send), &e);
                    }
                    continue;
                }
            }
            if states.iter().all(|s| matches!(s, State::Done(_))) {
                break;
            }
            let err = cause.take().unwrap_or(Error::InvalidState("a put was left unfinished"));
            let paused = if deadline.is_some_and(|d| Instant::now() >= d) {
                log::debug!("puts under {}: deadline passed after {err}", self.path);
                Err(if self.client.state().is_connected() {
                    Error::Timeout {
                        operation: "put",
                        after: retry.elapsed(),
                    }
                } else {
                    self.client.unreachable(retry.elapsed())
                })
            } else {
                retry.pause(err, session, None)
            };
            if let Err(e) = paused {
                log::warn!("puts under {} failed: {e}", self.path);
                fail_all(&mut states, |s| !matches!(s, State::Done(_)), &e);
                break;
            }
            if let Err(e) = self.resolve(puts, &mut states, opts) {
                cause = Some(e);
            }
        }
        states
            .into_iter()
            .map(|s| match s {
                State::Done(result) => result,
                // The loop ends only when every put is done.
                State::Send | State::Unknown(..) => Err(Error::InvalidState("a put was left unfinished")),
            })
            .collect()
    }

    /// Sends the puts in `State::Send`, pipelined, and records each outcome.
    /// Returns whether the queue node is missing (and `recreated` is false).
    fn send(&self, puts: &[Put], states: &mut [State], sending: &Sending<'_>, cause: &mut Option<Error>) -> bool {
        let Sending {
            number,
            recreated,
            opts,
        } = *sending;
        let sending: Vec<usize> = (0..puts.len()).filter(|&i| matches!(states[i], State::Send)).collect();
        let floor = self.read_floor(opts);
        let nodes: Vec<(String, Vec<u8>)> = sending
            .iter()
            .map(|&i| (puts[i].node_prefix.clone(), puts[i].data.clone()))
            .collect();
        let opts = opts.mode(CreateMode::PersistentSequential).acl(&self.options.acl);
        let Created { results, multi, .. } = match self.client.create_in_multis_with(&nodes, opts) {
            Ok(created) => created,
            // Nothing was sent.
            Err(e) if e.is_retryable() => {
                *cause = Some(e);
                return false;
            }
            Err(e) => {
                fail_all(states, |s| matches!(s, State::Send), &e);
                return false;
            }
        };
        let mut missing_queue = false;
        for ((&i, result), multi) in sending.iter().zip(results).zip(multi) {
            states[i] = match result {
                Ok(created) => {
                    self.note_created(&created);
                    State::Done(Ok(()))
                }
                Err(Error::NoNode { .. }) if !recreated => {
                    missing_queue = true;
                    State::Send
                }
                // A retryable error (a lost connection, a timeout, an
                // expiry) leaves the create's outcome unknown.
                Err(e) if e.is_retryable() => {
                    *cause = Some(e);
                    State::Unknown(floor, multi.map(|m| (number, m)))
                }
                Err(e) => State::Done(Err(e)),
            };
        }
        missing_queue
    }

    /// The floor for a create sent now; `None` if it cannot be read, which
    /// makes a read-back look at every item.
    pub(crate) fn read_floor(&self, opts: Opts<'_>) -> Option<SequenceKey> {
        if let Some(floor) = *self.floor.0.lock() {
            return Some(floor);
        }
        match self.client.exists_with(&self.path, opts) {
            Ok(Some(stat)) => {
                let key = SequenceKey::new(i64::from(stat.cversion));
                if let Some(key) = key {
                    self.floor.raise(key);
                }
                key
            }
            _ => None,
        }
    }

    fn note_created(&self, created: &str) {
        if let Some(key) = item_sequence(path::name(created)).and_then(SequenceKey::new) {
            self.floor.raise(key);
        }
    }

    /// Looks for the tokens of puts in `State::Unknown` among the queue's
    /// newest items: found ones are done, and so are the others of their
    /// multi (a multi is applied whole, so a put of it that is not found was
    /// stored and taken already); the others are sent again. If the queue
    /// cannot be read now, they stay unknown and the error is returned.
    fn resolve(&self, puts: &[Put], states: &mut [State], opts: Opts<'_>) -> Result<()> {
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

/// Finishes every put whose state matches with a copy of `err`.
fn fail_all(states: &mut [State], which: impl Fn(&State) -> bool, err: &Error) {
    for state in states.iter_mut().filter(|s| which(s)) {
        *state = State::Done(Err(err.clone()));
    }
}
