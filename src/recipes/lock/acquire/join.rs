//! Joining the line: the create of an attempt's node, with the listing
//! that rides in the same round trip, and the search for it when the
//! create's reply was lost.
//!
//! A create whose reply was lost is resolved as Curator resolves it: after a
//! `sync`, the attempt lists the lock path and looks for its protected
//! prefix; found, that node is its own; not found, the create was not
//! applied and is sent again, in the same session. A node of the attempt's
//! besides its own (a create that was applied after all) is deleted when a
//! listing shows it. A node lost with its session is replaced by a new one
//! at the end of the line. Whatever the attempt leaves when it gives up
//! (its deadline, or an error) is deleted, in the background if the server
//! cannot be asked now (see `release`).

use super::{Attempt, Node};
use crate::client::{CreateMode, Opts, Session};
use crate::error::{Error, Result};
use crate::path;
use crate::recipes::lock::own::Mark;

impl Attempt<'_> {
    /// Creates this attempt's node in `session`, with the listing of the
    /// lock path taken right after it when the server gave one, or finds the
    /// node a create whose reply was lost made.
    pub(super) fn join(&mut self, session: Session) -> Result<(Node, Option<Vec<String>>)> {
        let lock = self.lock;
        let client = &lock.client;
        let (name, mode) = self.driver.node_name(&self.prefix);
        let wanted = path::join(&lock.path, &name);
        // Marked before the create is sent (the old mark, of the same
        // prefix, dropped first).
        self.mark = None;
        let (mark, sink) = lock.own.mark(&self.prefix, session);
        let mut mark = Some(mark);
        loop {
            let unknown = self.sent.is_some_and(|(s, unknown)| s == session && unknown);
            self.sent = Some((session, unknown));
            let opts = self.opts(session).once().mode(mode).acl(&lock.acl);
            match client.create_and_list_with(&wanted, &lock.data, &lock.path, opts, sink.as_ref()) {
                Ok(made) => {
                    let covered = match made.subtree {
                        Some(Ok(watch)) => {
                            lock.own.set(session, watch);
                            true
                        }
                        Some(Err(e)) => {
                            log::debug!(
                                "{} {}: no watch on the lock path ({e})",
                                self.driver.recipe(),
                                lock.path
                            );
                            false
                        }
                        None => lock.own.covers(session),
                    };
                    let node = self.node_at(made.path, session, Some(made.stat.czxid));
                    self.keep_mark(covered.then(|| mark.take()).flatten(), &node);
                    return Ok((node, made.children.ok()));
                }
                Err(Error::NoNode { .. }) => {
                    // Curator's `creatingParentContainersIfNeeded`.
                    let parent = Opts::new()
                        .until(self.deadline)
                        .mode(CreateMode::Container)
                        .acl(&lock.acl);
                    client.ensure_path_with(&lock.path, parent)?;
                }
                // A name of our own that exists (a node not sequential) is
                // a create of ours whose reply was lost: found below.
                Err(e @ Error::NodeExists { .. }) if mode == CreateMode::Ephemeral => {
                    self.sent = Some((session, true));
                    return match self.find(session)? {
                        Some(found) => {
                            let node = self.node_at(path::join(&lock.path, &found), session, None);
                            self.keep_mark(mark.take().filter(|_| lock.own.covers(session)), &node);
                            Ok((node, None))
                        }
                        None => Err(e),
                    };
                }
                Err(e) if e.is_retryable() && !matches!(e, Error::SessionExpired) => {
                    self.sent = Some((session, true));
                    if let Some(found) = self.find(session)? {
                        log::info!(
                            "{} {}: a create's reply was lost; its node is {found}",
                            self.driver.recipe(),
                            lock.path
                        );
                        let node = self.node_at(path::join(&lock.path, &found), session, None);
                        self.keep_mark(mark.take().filter(|_| lock.own.covers(session)), &node);
                        return Ok((node, None));
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Keeps `mark` (if the watch on the lock path keeps it) as the mark of
    /// `node`.
    fn keep_mark(&mut self, mark: Option<Mark>, node: &Node) {
        if let Some(mark) = &mark {
            mark.named(&node.name);
        }
        self.mark = mark;
    }

    fn node_at(&self, path: String, session: Session, czxid: Option<i64>) -> Node {
        let name = path::name(&path).to_owned();
        Node {
            path,
            name,
            session,
            czxid,
        }
    }

    /// The name of a node of this attempt's, if the lock path has one: after
    /// a `sync`, so the server has applied every create sent before.
    fn find(&self, session: Session) -> Result<Option<String>> {
        let client = &self.lock.client;
        client.sync(&self.lock.path, self.opts(session))?;
        match client.get_children_with(&self.lock.path, self.opts(session)) {
            Ok((children, _)) => Ok(children.into_iter().find(|name| name.starts_with(&self.prefix))),
            Err(Error::NoNode { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }
}
