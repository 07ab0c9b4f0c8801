//! Recipes built on the client facade: the classic queue, and the leader
//! latch that sharded queues elect their leader with.

mod leader;
mod simple;

pub use leader::{LeaderLatch, LeaderLatchBuilder, Leadership, Participant};
pub use simple::{SimpleQueue, SimpleQueueBuilder};
