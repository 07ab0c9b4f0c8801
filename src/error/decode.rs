//! A reply the client could not read.

use std::fmt;

/// Bytes that cannot be what the protocol says they are: `what` went wrong at
/// byte `offset` of the input given to the decoder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct DecodeError {
    /// What is wrong, in a few lowercase words.
    pub(crate) what: &'static str,
    /// Where in the decoded bytes it went wrong.
    pub(crate) offset: usize,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "malformed reply: {} at byte {}", self.what, self.offset)
    }
}

impl std::error::Error for DecodeError {}
