//! Ports of Apache Curator's queue tests
//! (`curator-recipes/src/test/java/org/apache/curator/framework/recipes/queue/`),
//! one file per Curator test class.
//!
//! - `distributed_queue`: `TestDistributedQueue`
//! - `priority_queue`: `TestDistributedPriorityQueue`
//! - `delay_queue`: `TestDistributedDelayQueue`
//! - `id_queue`: `TestDistributedIdQueue`
//! - `bounded_queue`: `TestBoundedDistributedQueue`

mod bounded_queue;
mod delay_queue;
mod distributed_queue;
mod id_queue;
mod priority_queue;
