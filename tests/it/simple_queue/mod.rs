//! `SimpleQueue`, the classic ZooKeeper recipe, against a real server.
//!
//! - `recipe`: ZooKeeper's and Curator's scenarios, and the classic recipe's
//!   bugs we do not have.
//! - `concurrency`: many producers and consumers on one queue.
//! - `interop`: queues shared with Java, the classic recipe and Curator's
//!   `SimpleDistributedQueue`.

mod concurrency;
mod interop;
mod recipe;
