//! Curator-compatible distributed queues: [`QueueBuilder`] and the four
//! kinds it builds, [`DistributedQueue`], [`PriorityQueue`], [`DelayQueue`]
//! and [`IdQueue`].
//!
//! Nodes, data and locks are byte-compatible with Apache Curator 5.x:
//! items are `PERSISTENT_SEQUENTIAL` children named `queue-…` holding
//! Curator's item frame, and lock-safe consumers lock `<lock_path>/<item>`.

mod builder;
mod consumer;
mod core;
mod engine;
mod kinds;
mod pull;
mod put;
mod stats;
mod store;

pub use builder::QueueBuilder;
pub use consumer::{ConsumeError, ErrorMode, PutListener, QueueConsumer};
pub use kinds::{DelayQueue, DeliverAt, DistributedQueue, IdQueue, PriorityQueue};
pub use pull::{Delivery, ItemReceiver};
pub use stats::QueueStats;
