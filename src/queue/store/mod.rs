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
//!
//! The store is the bottom layer of a put: the put path above it
//! (`queue::put`) turns items into [`Put`]s, and the store writes them to the
//! queue node. Beside this file: `floor` (the lower bound above),
//! `read_back` (the resolver) and `room` (waiting for room in a bounded
//! queue).

mod floor;
mod read_back;
mod room;

use std::sync::Arc;
use std::time::Instant;

use self::floor::Floor;
use super::stats::QueueCounters;
use crate::client::{Acl, CreateMode, Created, Opts, Retry, ZkClient};
use crate::codec::trailer;
use crate::error::{Error, Result};
use crate::naming::SequenceKey;

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

/// Writes item nodes under one queue node, with its ACL, as the module doc
/// says: each put stored once, whatever the connection does.
pub(crate) struct Store {
    client: ZkClient,
    path: String,
    acl: Vec<Acl>,
    /// A lower bound for the sequence of this producer's next item.
    floor: Floor,
    /// Counts the puts sent again.
    counters: Arc<QueueCounters>,
}

/// How one put stands while [`Store::store`] runs.
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
    /// Which sending of [`Store::store`] this is.
    number: usize,
    /// Whether the queue node was created again already.
    recreated: bool,
    opts: Opts<'a>,
}

/// The multi a put was sent in: which sending of [`Store::store`] and which multi
/// of it. All the puts of one multi were stored, or none was.
type Multi = (usize, usize);

impl Store {
    /// A store writing under the queue node `path`, its nodes taking `acl`.
    pub(crate) fn new(client: ZkClient, path: String, acl: Vec<Acl>, counters: Arc<QueueCounters>) -> Store {
        Store {
            client,
            path,
            acl,
            floor: Floor::default(),
            counters,
        }
    }

    /// The queue node's path.
    pub(crate) fn path(&self) -> &str {
        &self.path
    }

    /// The client the store writes with.
    pub(crate) fn client(&self) -> &ZkClient {
        &self.client
    }

    /// Checks, before any request, that a node of `data.len()` bytes under
    /// `node_prefix` can be created.
    pub(crate) fn check_size(&self, node_prefix: &str, data: &[u8]) -> Result<()> {
        self.client.check_create_size(node_prefix, data.len(), &self.acl)
    }

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
                    if let Err(e) = self.client.ensure_path_with(&self.path, opts.acl(&self.acl)) {
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
                // Each caller reports its own failure (a foreground put
                // returns it, the put thread logs a background one).
                log::debug!("puts under {} failed: {e}", self.path);
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
        let opts = opts.mode(CreateMode::PersistentSequential).acl(&self.acl);
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
}

/// Finishes every put whose state matches with a copy of `err`.
fn fail_all(states: &mut [State], which: impl Fn(&State) -> bool, err: &Error) {
    for state in states.iter_mut().filter(|s| which(s)) {
        *state = State::Done(Err(err.clone()));
    }
}
