//! How one request is sent: its options ([`Opts`]), and the one loop that
//! sends it within its deadline and retries by the client's policy.

use std::time::{Duration, Instant};

use super::retry::Retry;
use super::session::{Failure, Pending, WatchReg};
use super::wire::{decode_reply, Reply, ReplyError, Request};

/// How long after a call's deadline a request it has sent may still finish
/// while the client is connected: a call that found an item at its deadline
/// hands it over rather than fail a read that a busy server answers a little
/// late. So a call with a deadline returns by the deadline plus this at the
/// latest, and by the deadline itself while the client is disconnected.
pub(crate) const DEADLINE_GRACE: Duration = Duration::from_secs(1);

/// How long a call that never waits for an item or for room (`try_take`,
/// `try_put`, `poll`, `peek`) may wait for a server: while none answers, it
/// returns [`Error::Unreachable`] after this; while one is connected, an
/// answer in flight may take [`DEADLINE_GRACE`] more.
pub(crate) const TRY_WAIT: Duration = Duration::from_secs(1);
use super::{Acl, CreateMode, Session, ZkClient};
use crate::error::{ClientError, Error, Result};

/// The options of one request, set builder-style, as in
/// `client.delete_with(path, version, Opts::new().fenced(session))`.
///
/// The defaults are those of the public methods: the request is retried by
/// the client's policy within the client's request timeout, in whatever
/// session is current, and nodes it creates are persistent with the client's
/// default ACL. An option an operation has no use for is ignored (a batch,
/// say, is never retried).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Opts<'a> {
    /// The only session the request may be sent in.
    fence: Option<Session>,
    /// One attempt, without retries.
    once: bool,
    /// The mode of created nodes.
    mode: CreateMode,
    /// The ACL of created nodes; `None`: the client's default ACL.
    acl: Option<&'a [Acl]>,
    /// When the request gives up, retries included; `None`: the client's
    /// request timeout after it starts.
    until: Option<Instant>,
}

impl Default for Opts<'_> {
    fn default() -> Self {
        Opts::new()
    }
}

impl<'a> Opts<'a> {
    /// The defaults: retried, any session, persistent nodes with the default ACL.
    pub(crate) const fn new() -> Opts<'a> {
        Opts {
            fence: None,
            once: false,
            mode: CreateMode::Persistent,
            acl: None,
            until: None,
        }
    }

    /// Gives up at `deadline` (while connected, [`DEADLINE_GRACE`] after
    /// it), retries included, instead of the client's request timeout after
    /// the request starts (`None` keeps that). A blocking call with a deadline of its own passes
    /// it to each request.
    pub(crate) const fn until(mut self, deadline: Option<Instant>) -> Self {
        self.until = deadline;
        self
    }

    /// Sends the request only in `session` ([`ZkClient::session`]): it is
    /// never retried in a newer session, and fails with
    /// [`Error::SessionExpired`] once that session is gone. Writes that depend
    /// on an ephemeral node of that session (a lock's) use it.
    pub(crate) const fn fenced(mut self, session: Session) -> Self {
        self.fence = Some(session);
        self
    }

    /// One attempt, without retries, for callers that run their own retry
    /// loop (and deadline).
    pub(crate) const fn once(mut self) -> Self {
        self.once = true;
        self
    }

    /// The mode of the nodes the request creates ([`ZkClient::ensure_path_with`]:
    /// of the last node; its ancestors are persistent). Defaults to
    /// [`CreateMode::Persistent`].
    pub(crate) const fn mode(mut self, mode: CreateMode) -> Self {
        self.mode = mode;
        self
    }

    /// The ACL of the nodes the request creates. Defaults to the client's
    /// default ACL.
    pub(crate) const fn acl(mut self, acl: &'a [Acl]) -> Self {
        self.acl = Some(acl);
        self
    }

    /// The session the request is fenced to, if any.
    pub(super) fn fence(self) -> Option<Session> {
        self.fence
    }

    /// The mode of created nodes.
    pub(super) fn create_mode(self) -> CreateMode {
        self.mode
    }

    /// The ACL of created nodes: the one set, or `default`.
    pub(super) fn acl_or(self, default: &'a [Acl]) -> &'a [Acl] {
        self.acl.unwrap_or(default)
    }

    /// When a request that started at `started` gives up, for a client
    /// whose request timeout is `request_timeout` and which is `connected`
    /// or not: the grace after a call's deadline is for an answer in flight,
    /// and none is while the client is disconnected.
    pub(super) fn deadline(self, started: Instant, request_timeout: Duration, connected: bool) -> Instant {
        match self.until {
            Some(deadline) if connected => deadline + DEADLINE_GRACE,
            Some(deadline) => deadline,
            None => started + request_timeout,
        }
    }
}

impl ZkClient {
    /// When requests written once at `started` (a batch's slice, a
    /// pipeline, reads ahead: never retried) give up, as `opts` say, and
    /// never later than a request timeout after `started`.
    pub(super) fn sent_once_deadline(&self, opts: Opts<'_>, started: Instant) -> Instant {
        let request_timeout = self.shared.config.request_timeout;
        opts.deadline(started, request_timeout, self.shared.link().is_connected())
            .min(started + request_timeout)
    }

    /// Sends one request as `opts` say: `make` makes each attempt's request
    /// (and the watch it sets), `read` takes its reply; errors are mapped for
    /// `path`.
    pub(super) fn call<'r, T>(
        &self,
        operation: &'static str,
        path: &str,
        opts: Opts<'_>,
        mut make: impl FnMut() -> (Request<'r>, Option<WatchReg>),
        mut read: impl FnMut(Reply) -> Result<T>,
    ) -> Result<T> {
        self.run(operation, opts, |deadline, fence| {
            let started = Instant::now();
            let (request, watch) = make();
            let pending = self.send_one(request, watch, fence, deadline);
            read(self.reply(operation, path, &pending, deadline, started)?)
        })
    }

    /// Writes one request (see [`Link::send`](super::session::Link::send)).
    pub(super) fn send_one(
        &self,
        request: Request<'_>,
        watch: Option<WatchReg>,
        fence: Option<u64>,
        deadline: Instant,
    ) -> Pending {
        let kind = request.reply_kind();
        let mut sent = self.shared.link().send(vec![(request, watch)], fence, deadline);
        sent.pop().unwrap_or_else(|| Pending::failed(kind, Failure::Closed))
    }

    /// The loop behind every request: runs `attempt` with the attempt's
    /// deadline and the session it is fenced to (only the fenced one, if
    /// `opts` fence it), each attempt given the time left before the
    /// request's deadline but at most the request timeout, until it
    /// succeeds, fails with an answer rather than a retryable error, is sent
    /// only once, the retry policy gives up or the deadline passes.
    pub(super) fn run<T>(
        &self,
        operation: &'static str,
        opts: Opts<'_>,
        mut attempt: impl FnMut(Instant, Option<u64>) -> Result<T>,
    ) -> Result<T> {
        let request_timeout = self.shared.config.request_timeout;
        let started = Instant::now();
        let mut retry = Retry::new(self, operation, Some(opts.deadline(started, request_timeout, true)));
        let mut last = None;
        loop {
            if self.is_closed() {
                return Err(Error::Closed);
            }
            let connected = self.shared.link().is_connected();
            let deadline = opts.deadline(started, request_timeout, connected);
            let now = Instant::now();
            if now >= deadline {
                // No server to ask: the one error of an unreachable ensemble,
                // whatever the attempts met on the way.
                if !connected {
                    return Err(self.unreachable(retry.elapsed()));
                }
                return Err(last.unwrap_or(Error::Timeout {
                    operation,
                    after: retry.elapsed(),
                }));
            }
            let session = self.session();
            if opts.fence.is_some_and(|fence| fence != session) {
                return Err(Error::SessionExpired);
            }
            self.shared.counters.count(operation);
            let err = match attempt(deadline.min(now + request_timeout), opts.fence.map(|s| s.0)) {
                Ok(value) => return Ok(value),
                Err(err) => err,
            };
            if opts.once || !err.is_retryable() {
                return Err(err);
            }
            let connected = self.shared.link().is_connected();
            let deadline = opts.deadline(started, request_timeout, connected);
            if Instant::now() >= deadline {
                // Nothing left to pause for: the error the deadline calls for, now.
                return Err(if connected {
                    err
                } else {
                    self.unreachable(retry.elapsed())
                });
            }
            retry.pause(err.clone(), session, Some(deadline))?;
            last = Some(err);
        }
    }

    /// Waits for `pending`'s reply until `deadline` and decodes it; errors
    /// are mapped for `path`.
    pub(super) fn reply(
        &self,
        operation: &'static str,
        path: &str,
        pending: &Pending,
        deadline: Instant,
        started: Instant,
    ) -> Result<Reply> {
        let raw = pending.wait(deadline);
        self.shared.hub.metrics.answered(operation, started);
        let raw = raw.map_err(|failure| self.failed(operation, path, failure, started.elapsed()))?;
        decode_reply(pending.kind(), raw.err, raw.body(), self.shared.link().chroot()).map_err(|e| match e {
            ReplyError::Code(code) => Error::from_code(code, path),
            ReplyError::Malformed(malformed) => Error::ZooKeeper {
                path: Some(path.to_owned()),
                source: ClientError::malformed(malformed),
            },
        })
    }

    /// The error for a request on `path` that got no answer, `after` so long.
    pub(super) fn failed(&self, operation: &'static str, path: &str, failure: Failure, after: Duration) -> Error {
        match failure {
            Failure::ConnectionLoss => Error::ConnectionLoss {
                source: ClientError::connection_lost(path),
            },
            Failure::Timeout => Error::Timeout { operation, after },
            Failure::Unreachable => self.unreachable(after),
            Failure::SessionExpired => Error::SessionExpired,
            Failure::Closed => Error::Closed,
            Failure::AuthFailed => Error::AuthFailed,
        }
    }

    /// The error of a call that found no server to answer it within `after`:
    /// each server of the connect string and why it could not be used.
    pub(crate) fn unreachable(&self, after: Duration) -> Error {
        Error::Unreachable {
            after,
            servers: self.shared.link().failures(),
        }
    }

    /// Whether `err`, met by a call after its deadline, means that a server
    /// the client is connected to answered too late (nothing came in time)
    /// rather than that the ensemble is out of reach (an error to report).
    pub(crate) fn answered_too_late(&self, err: &Error) -> bool {
        matches!(err, Error::Timeout { .. }) && self.state().is_connected()
    }
}
