//! Requests written together so the server answers them in one round trip:
//! it processes a session's requests in order, so a later request of the
//! group sees what an earlier one did.

use std::time::Instant;

use super::ops::{created, unexpected};
use super::packet::create_size;
use super::request::Opts;
use super::wire::{Reply, Request};
use super::{Stat, ZkClient};
use crate::error::{Error, Result};
use crate::path;

/// What [`ZkClient::create_and_list_with`] got back: the created node's
/// path and stat, and the listing of the parent sent right behind it.
pub(crate) struct CreatedAndListed {
    pub(crate) path: String,
    pub(crate) stat: Stat,
    /// The children's names (the new node's among them, unless something
    /// deleted it in between), or why the listing failed.
    pub(crate) children: Result<Vec<String>>,
}

impl ZkClient {
    /// Creates `path` with the mode and ACL of `opts` and lists the children
    /// of `parent` (its parent) in one round trip: both requests are written
    /// before either answer is awaited, so the listing is taken after the
    /// create. As [`create_with`](Self::create_with), retried as `opts`
    /// say; each attempt sends both.
    ///
    /// # Errors
    /// The create's error (a listing behind a failed create is dropped); a
    /// failed listing behind an applied create is in
    /// [`CreatedAndListed::children`].
    pub(crate) fn create_and_list_with(
        &self,
        path: &str,
        data: &[u8],
        parent: &str,
        opts: Opts<'_>,
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
            self.shared.counters.count("get_children");
            let requests = vec![
                (Request::Create { path, data, acl, mode }, None),
                (
                    Request::GetChildren {
                        path: parent,
                        watch: false,
                    },
                    None,
                ),
            ];
            let mut pending = self.shared.link().send(requests, fence, deadline).into_iter();
            let (create, listing) = (pending.next(), pending.next());
            let (create, listing) = create.zip(listing).ok_or(Error::Closed)?;
            let (path, stat) = created(self.reply("create", path, &create, deadline, started)?, path)?;
            let children = match self.reply("get_children", parent, &listing, deadline, started) {
                Ok(Reply::Children { names, .. }) => Ok(names),
                Ok(other) => Err(unexpected(other, parent)),
                Err(e) => Err(e),
            };
            Ok(CreatedAndListed { path, stat, children })
        })
    }
}
