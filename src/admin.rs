//! Operator tools: take, purge and requeue a queue's items as stored bytes
//! whatever wrote them ([`RawQueue`]), and list, requeue and purge dead
//! letters ([`DeadLetters`]). The `zkq` command-line tool is built on them;
//! an application's consumers do not need them.
//!
//! ```no_run
//! # fn main() -> Result<(), zk_queue::Error> {
//! use zk_queue::admin::{DeadLetters, RawQueue};
//! use zk_queue::ZkClient;
//! let client = ZkClient::connect("127.0.0.1:2181")?;
//! let raw = RawQueue::new(&client, "/jobs")?;
//! let taken = raw.try_take(10)?;
//! let dead = DeadLetters::new(&client, "/jobs-dead")?;
//! for letter in dead.list()? {
//!     println!("{letter:?}");
//! }
//! # Ok(())
//! # }
//! ```

pub use crate::queue::{
    DeadLetter, DeadLetters, Purged, RawItem, RawQueue, RawTaken, RecordedPaths, Requeued, Undecodable,
};
