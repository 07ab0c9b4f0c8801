//! The four kinds of Curator's queue family: each is a marker type for
//! [`Queue`](crate::Queue) that adds the kind's put family, which names the items.
//!
//! Every put family has the same five verbs, each kind's naming argument
//! after the items: `put` (waits for room in a bounded queue), `try_put`
//! (never waits for room), `put_timeout` (waits up to a bound), and
//! `put_multi` / `put_multi_timeout` (many items in one node).

mod delay;
mod fifo;
mod id;
mod priority;

pub use super::markers::{Delay, Fifo, Id, Priority};
