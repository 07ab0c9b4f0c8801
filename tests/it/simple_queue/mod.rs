//! `SimpleQueue`, the classic ZooKeeper recipe, against a real server.
//!
//! - `recipe`: ZooKeeper's and Curator's scenarios, and the classic recipe's
//!   bugs we do not have.
//! - `concurrency`: many producers and consumers on one queue.
//! - `interop`: queues shared with Java, the classic recipe and Curator's
//!   `SimpleDistributedQueue`.
//! - `speed`: requests in flight together (prefetching takes, concurrent
//!   offers, `put_all`), and what a prefetch costs.

mod concurrency;
mod interop;
mod recipe;
mod speed;
