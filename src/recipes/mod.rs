//! Queue recipes built on the client facade.

mod simple;

pub use simple::{SimpleQueue, SimpleQueueBuilder};
