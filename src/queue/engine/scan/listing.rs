//! What a pass starts from: a listing of the queue with a child watch (and
//! the items the consumer expects next, read in the same round trip), or,
//! when the latest pass left nothing behind, the items that arrived since.

use std::time::Instant;

use crate::client::{ChildWatch, Opts};
use crate::error::{Error, Result};
use crate::path;
use crate::queue::core::Core;
use crate::queue::engine::claim::ReadAhead;
use crate::queue::engine::kept::Kept;
use crate::sync::{Gate, GatePass, Latch};

/// The names a pass starts from, and what came with them.
pub(super) struct Start<'a> {
    /// The children listed, or the names that arrived (not all items).
    pub(super) names: Vec<String>,
    /// The listing's child watch; none for arrivals.
    pub(super) watches: Vec<ChildWatch>,
    /// Whether the queue was listed: `names` are all its children.
    pub(super) listed: bool,
    /// The expected items read with the listing.
    pub(super) read_ahead: ReadAhead,
    /// A sharded queue's turn to list (its shards take turns to hold a
    /// whole listing), held until the pass has kept what it needs of it.
    pub(super) turn: Option<GatePass<'a>>,
}

/// Takes the arrivals since the latest pass if they may stand for a
/// listing, or lists the queue; `None` if the queue node is gone.
pub(super) fn start<'a, T: Send + 'static>(
    core: &'a Core<T>,
    latch: &Latch,
    kept: &mut Kept,
) -> Result<Option<Start<'a>>> {
    // Items a plain consumer expects to list next are read with the listing.
    let expected = kept.expected(core);
    if let Some(arrived) = kept.arrived_instead_of_listing(core) {
        return Ok(Some(Start {
            names: arrived,
            watches: Vec::new(),
            listed: false,
            read_ahead: ReadAhead::new(),
            turn: None,
        }));
    }
    // Items created from now on arrive by name.
    kept.restart_arrivals(core);
    list(core, latch, kept, expected)
}

/// Lists the queue with a child watch on `latch`, reading the `expected`
/// items in the same round trip; `None` if the queue node is gone.
fn list<'a, T: Send + 'static>(
    core: &'a Core<T>,
    latch: &Latch,
    kept: &mut Kept,
    expected: Vec<String>,
) -> Result<Option<Start<'a>>> {
    let paths: Vec<String> = expected.iter().map(|name| path::join(&core.path, name)).collect();
    let turn = core.options.listing_gate.as_deref().map(Gate::enter);
    let started = Instant::now();
    let listing = match core
        .client
        .watch_children_reading(&core.path, latch, Opts::new(), &paths)
    {
        Err(Error::NoNode { .. }) => return Ok(None),
        other => other?,
    };
    kept.listed(&listing.children);
    log::trace!(
        "queue {}: listed {} children in {:?}, {} expected read with them",
        core.path,
        listing.children.len(),
        started.elapsed(),
        listing.read.iter().filter(|read| read.is_ok()).count()
    );
    let read_ahead = expected
        .into_iter()
        .zip(listing.read)
        .filter_map(|(name, read)| Some((name, read.ok()?)))
        .collect();
    Ok(Some(Start {
        names: listing.children,
        watches: vec![listing.watch],
        listed: true,
        read_ahead,
        turn,
    }))
}
