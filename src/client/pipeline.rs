//! [`Pipeline`]: requests of different kinds written together in one
//! session, each answered in turn, for recipes whose steps depend on each
//! other only through the server's order (a create, then a listing that
//! must see it), so several steps take one round trip.
//!
//! ZooKeeper answers a session's requests in the order they were sent, so
//! a listing sent after a create is served after the create is applied. A
//! pipeline's requests are fenced to one session, sent once and never
//! retried (a lost connection leaves their outcomes unknown), and share one
//! deadline.
//!
//! [`ZkClient::create_and_list_with`] is the one pipelined pair that is
//! retried as a single request is (a lock's create, whose lost reply its
//! caller resolves by the node's protected name, and the listing behind it).

use std::time::Instant;

use super::ops::{created, unexpected};
use super::packet::create_size;
use super::request::Opts;
use super::session::{Failure, Pending, Sink};
use super::wire::{Reply, Request};
use super::{Acl, CreateMode, Session, Stat, SubtreeWatch, ZkClient};
use crate::error::{Error, Result};
use crate::path;

/// One request of a pipeline.
pub(crate) enum Step<'a> {
    /// Create a node (answered with its path and stat).
    Create {
        path: &'a str,
        data: &'a [u8],
        acl: &'a [Acl],
        mode: CreateMode,
    },
    /// List a node's children.
    Children { path: &'a str },
}

/// A request written, awaiting its answer.
pub(crate) struct Sent {
    pending: Pending,
    operation: &'static str,
    path: String,
}

/// Requests of one session written together, answered in order.
pub(crate) struct Pipeline<'c> {
    client: &'c ZkClient,
    session: Session,
    started: Instant,
    /// When the answers are given up.
    deadline: Instant,
}

impl ZkClient {
    /// A pipeline fenced to `session` whose answers are awaited until
    /// `deadline` (plus the grace of an answer in flight while connected),
    /// and never longer than the client's request timeout.
    pub(crate) fn pipeline(&self, session: Session, deadline: Option<Instant>) -> Pipeline<'_> {
        let started = Instant::now();
        let deadline = self.sent_once_deadline(super::Opts::new().until(deadline), started);
        Pipeline {
            client: self,
            session,
            started,
            deadline,
        }
    }
}

impl Pipeline<'_> {
    /// Writes `steps` together; their answers come in this order.
    pub(crate) fn send(&self, steps: Vec<Step<'_>>) -> Vec<Sent> {
        let client = self.client;
        let mut sent = Vec::with_capacity(steps.len());
        let mut requests = Vec::with_capacity(steps.len());
        for step in steps {
            let (operation, path, request) = match step {
                Step::Create { path, data, acl, mode } => ("create", path, Request::Create { path, data, acl, mode }),
                Step::Children { path } => ("get_children", path, Request::GetChildren { path, watch: false }),
            };
            client.shared.counters.count(operation);
            sent.push((operation, path.to_owned()));
            requests.push((request, None));
        }
        let kinds: Vec<_> = requests.iter().map(|(r, _)| r.reply_kind()).collect();
        let mut pending = client
            .shared
            .link()
            .send(requests, Some(self.session.0), self.deadline)
            .into_iter();
        sent.into_iter()
            .zip(kinds)
            .map(|((operation, path), kind)| Sent {
                pending: pending.next().unwrap_or_else(|| Pending::failed(kind, Failure::Closed)),
                operation,
                path,
            })
            .collect()
    }

    fn reply(&self, sent: &Sent) -> Result<Reply> {
        self.client
            .reply(sent.operation, &sent.path, &sent.pending, self.deadline, self.started)
    }

    /// The answer to a `Create`: the created path and its stat.
    pub(crate) fn created(&self, sent: &Sent) -> Result<(String, Stat)> {
        created(self.reply(sent)?, &sent.path)
    }

    /// The answer to a `Children`: the child names.
    pub(crate) fn children(&self, sent: &Sent) -> Result<Vec<String>> {
        match self.reply(sent)? {
            Reply::Children { names, .. } => Ok(names),
            other => Err(unexpected(other, &sent.path)),
        }
    }
}

/// What [`ZkClient::create_and_list_with`] got back: the created node's
/// path and stat, and the listing of the parent sent right behind it.
pub(crate) struct CreatedAndListed {
    pub(crate) path: String,
    pub(crate) stat: Stat,
    /// The children's names (the new node's among them, unless something
    /// deleted it in between), or why the listing failed.
    pub(crate) children: Result<Vec<String>>,
    /// The persistent recursive watch on the parent sent ahead of the
    /// create, if one was asked for: set, or why not.
    pub(crate) subtree: Option<Result<SubtreeWatch>>,
}

impl ZkClient {
    /// Creates `path` with the mode and ACL of `opts` and lists the children
    /// of `parent` (its parent) in one round trip: both requests are written
    /// before either answer is awaited, so the listing is taken after the
    /// create. As [`create_with`](Self::create_with), retried as `opts`
    /// say; each attempt sends both.
    ///
    /// With a `subtree` sink, a persistent recursive watch on `parent`
    /// reporting to it is written first, in the same round trip: it is set
    /// (registered as its answer is read, before the create's) before the
    /// create is applied, so it hears of everything that happens to the new
    /// node. A client that sets no persistent watches sends none, and
    /// answers it as an older server would.
    ///
    /// # Errors
    /// The create's error (a listing behind a failed create is dropped); a
    /// failed listing or watch beside an applied create is in
    /// [`CreatedAndListed::children`] or [`CreatedAndListed::subtree`].
    pub(crate) fn create_and_list_with(
        &self,
        path: &str,
        data: &[u8],
        parent: &str,
        opts: Opts<'_>,
        subtree: Option<&Sink>,
    ) -> Result<CreatedAndListed> {
        path::validate(path)?;
        path::validate(parent)?;
        let acl = opts.acl_or(self.default_acl());
        if acl.is_empty() {
            return Err(Error::InvalidArgument("ACL must not be empty".into()));
        }
        self.check_packet(create_size(path, 0, acl), data.len())?;
        let mode = opts.create_mode();
        self.run("create", opts, |deadline, fence| {
            let started = Instant::now();
            let mut requests = Vec::with_capacity(3);
            // Asked again each attempt: a server that refused one (and
            // dropped the connection) is not sent another.
            let watch = subtree.filter(|_| self.sets_subtree_watches()).map(|sink| {
                let (request, watch, id) = self.subtree_request(parent, sink);
                self.shared.counters.count("add_watch");
                requests.push((request, Some(watch)));
                id
            });
            self.shared.counters.count("get_children");
            requests.push((Request::Create { path, data, acl, mode }, None));
            requests.push((
                Request::GetChildren {
                    path: parent,
                    watch: false,
                },
                None,
            ));
            let mut pending = self.shared.link().send(requests, fence, deadline).into_iter();
            let added = watch.map(|id| (id, pending.next()));
            let (create, listing) = (pending.next(), pending.next());
            let (create, listing) = create.zip(listing).ok_or(Error::Closed)?;
            let subtree = match added {
                Some((id, added)) => {
                    let added = added.ok_or(Error::Closed)?;
                    let answer = self.reply("add_watch", parent, &added, deadline, started);
                    self.note_subtree_answer(&answer);
                    Some(answer.map(|_| self.subtree_watch(parent, id)))
                }
                None => subtree.map(|_| Err(Error::from_code(super::wire::Code::UNIMPLEMENTED, parent))),
            };
            let (path, stat) = created(self.reply("create", path, &create, deadline, started)?, path)?;
            let children = match self.reply("get_children", parent, &listing, deadline, started) {
                Ok(Reply::Children { names, .. }) => Ok(names),
                Ok(other) => Err(unexpected(other, parent)),
                Err(e) => Err(e),
            };
            Ok(CreatedAndListed {
                path,
                stat,
                children,
                subtree,
            })
        })
    }
}
