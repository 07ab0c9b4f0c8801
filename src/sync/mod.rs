//! Thread synchronisation used by the blocking calls.

mod latch;

pub(crate) use latch::Latch;
