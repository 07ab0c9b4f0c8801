//! Recipes on the client besides the Curator queue family: the classic
//! queue ([`SimpleQueue`], also at the crate root) and Curator's
//! coordination recipes: the [`LeaderLatch`] that sharded queues elect
//! their leader with, the distributed lock [`Mutex`] (Curator's
//! `InterProcessMutex`) and the read-write lock [`RwLock`] (Curator's
//! `InterProcessReadWriteLock`), both on the machinery Curator's locks
//! share, the counting [`Semaphore`] and its one-lease [`SemaphoreMutex`]
//! (Curator's `InterProcessSemaphoreV2` and `InterProcessSemaphoreMutex`),
//! the barriers [`Barrier`] and [`DoubleBarrier`] (Curator's
//! `DistributedBarrier` and `DistributedDoubleBarrier`), and the
//! [`LeaderSelector`] (Curator's `LeaderSelector`), an election on the
//! [`Mutex`] that runs a closure for each term of leadership. The
//! [`kazoo`] queues share queues with Python's kazoo `Queue` and
//! `LockingQueue`.
//!
//! Every recipe's timed and `try_` call ends as the queues' do when the
//! server does not answer: [`Error::Unreachable`](crate::Error::Unreachable)
//! when no server can be asked at its deadline,
//! [`Error::Timeout`](crate::Error::Timeout) when a connected server did not
//! answer in time, nothing held when it was waiting for its turn; never
//! [`Error::ConnectionLoss`](crate::Error::ConnectionLoss).
//!
//! What says something is held (a guard's `is_held`, a lease's, a latch's or
//! selector's `has_leadership`, a leader's `is_leader`) says so only while
//! the server cannot have expired the session: the client is connected and
//! the server answered a request written less than nine tenths of the
//! session timeout ago. A process paused past its session timeout (a stop
//! signal, a stalled virtual machine) therefore does not claim to hold
//! anything when it resumes, however late the client's own thread notices.
//!
//! ```no_run
//! # fn main() -> Result<(), zk_queue::Error> {
//! use zk_queue::recipes::LeaderLatch;
//! let client = zk_queue::ZkClient::connect("127.0.0.1:2181")?;
//! let latch = LeaderLatch::builder(&client, "/app/leader").build()?;
//! latch.await_leadership()?;
//! # Ok(())
//! # }
//! ```

mod barrier;
mod deadline;
pub mod kazoo;
mod leader;
mod lock;
mod mutex;
pub(crate) mod names;
mod rwlock;
mod selector;
mod semaphore;
mod simple;

pub use barrier::{Barrier, BarrierBuilder, DoubleBarrier, DoubleBarrierBuilder};
pub use kazoo::{KazooEntry, KazooLockingQueue, KazooQueue};
pub use leader::{LeaderLatch, LeaderLatchBuilder, Leadership, Participant};
pub use mutex::{Mutex, MutexBuilder, MutexGuard};
pub use rwlock::{RwLock, RwLockBuilder, RwLockReadGuard, RwLockWriteGuard};
pub use selector::{LeaderContext, LeaderSelector, LeaderSelectorBuilder, SelectorState, TermEnd};
pub use semaphore::{
    Semaphore, SemaphoreBuilder, SemaphoreLease, SemaphoreMutex, SemaphoreMutexBuilder, SemaphoreMutexGuard,
};
pub use simple::{SimpleQueue, SimpleQueueBuilder};
