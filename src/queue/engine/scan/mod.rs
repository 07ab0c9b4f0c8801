//! The scanner: lists the queue (and, lock-safe, the lock directory) with a
//! watch each, and claims the items of a listing in order, a window at a
//! time, until the listing is done; then it waits for a watch, a connection
//! change, a due item or the rescan interval.
//!
//! - `run`: the scanner's loop, from one pass to the next.
//! - `listing`: what a pass starts from: a listing of the queue (with the
//!   items it expects read in the same round trip), or the arrivals since
//!   the latest pass.
//! - `pass`: one pass over what it knows, window by window, in order.
//! - `locks`: what a lock-safe pass knows of the lock directory, and the
//!   abandoned items it finds there.
//! - `merge`: arrivals put into their places among the pending items.
//! - `window`: claiming one window, in the queue's mode.
//!
//! A lock-safe consumer also picks up abandoned items during a long pass:
//! an item whose lock it saw in a listing of the lock directory, or met when
//! its own claim found the item locked, and which stayed when that lock
//! vanished (its holder crashed or its session expired), whether the pass
//! went by it, jumped over it or has it ahead; and an item its pass jumped
//! over (competing consumers spread their claims) that nobody locked within
//! [`ABANDONED_CHECK`], such as one whose holder died before the pass listed
//! the locks. When the lock directory changes, or jumped items come due,
//! the scanner looks (listing the directory again at most once per
//! [`ABANDONED_CHECK`]) before its next window, and claims such items first.

mod listing;
mod locks;
mod merge;
mod pass;
mod run;
mod window;

use std::time::Duration;

pub(super) use run::scan_loop;

/// The most items of one listing a pass keeps; it lists again for the rest.
pub(super) const MAX_PENDING: usize = 2_048;

/// How often, at most, a pass lists the lock directory again for abandoned
/// items: half a second, so that a busy consumer takes them within a second
/// of their locks vanishing, the items it has in hand included.
pub(super) const ABANDONED_CHECK: Duration = Duration::from_millis(500);
