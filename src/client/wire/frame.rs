//! Cutting a byte stream into frames: each frame is a 4-byte big-endian
//! length and that many bytes.
//!
//! [`FrameReader`] is built for a reader thread whose socket has a read
//! timeout: it reads whatever arrived into its own buffer, so a timeout in
//! the middle of a frame loses nothing, and hands out frames once they are
//! whole. It trusts no declared length with memory: the buffer grows only to
//! the bytes received and not handed out yet plus one read chunk, and shrinks
//! back when it is more than two chunks larger than those bytes.

use std::io::{self, Read};

use crate::error::DecodeError;

/// Bytes each read asks for at most.
const CHUNK: usize = 64 * 1024;

/// Reads length-prefixed frames from a stream, a read at a time.
#[derive(Debug)]
pub(crate) struct FrameReader {
    /// Received bytes live in `buf[start..end]`; the rest is room for reads.
    buf: Vec<u8>,
    /// Where the first byte not handed out yet is.
    start: usize,
    /// Where the received bytes end.
    end: usize,
    /// The longest frame accepted.
    max_frame: usize,
    /// Stream offset of `buf[start]`, for errors.
    consumed: usize,
}

impl FrameReader {
    /// A reader that refuses frames longer than `max_frame` bytes (not
    /// counting the length prefix).
    pub(crate) fn new(max_frame: usize) -> FrameReader {
        FrameReader {
            buf: Vec::new(),
            start: 0,
            end: 0,
            max_frame,
            consumed: 0,
        }
    }

    /// Bytes received and not handed out as frames yet.
    #[cfg(test)]
    pub(crate) fn buffered(&self) -> usize {
        self.end - self.start
    }

    /// One `read` call on `r` into the buffer: the bytes read, 0 at the end
    /// of the stream. Errors (a read timeout included) are `r`'s, and lose
    /// nothing received before.
    pub(crate) fn read_from(&mut self, r: &mut impl Read) -> io::Result<usize> {
        self.make_room();
        let room = self.buf.get_mut(self.end..).unwrap_or_default();
        let n = r.read(room)?;
        self.end = self.end.saturating_add(n).min(self.buf.len());
        Ok(n)
    }

    /// Moves the received bytes to the front and sizes the buffer to them
    /// plus one chunk, growing it for a long frame and shrinking it after one.
    fn make_room(&mut self) {
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        let want = self.end + CHUNK;
        if self.buf.len() < want {
            self.buf.reserve_exact(want - self.buf.len());
            self.buf.resize(want, 0);
        } else if self.buf.len() > want + CHUNK {
            self.buf.truncate(want);
            self.buf.shrink_to_fit();
        }
    }

    /// The next whole frame (its bytes without the length prefix), or `None`
    /// until more bytes are read. A negative length or one above the maximum
    /// is an error; the stream cannot be read further then (the same error
    /// comes back).
    pub(crate) fn next_frame(&mut self) -> Result<Option<Vec<u8>>, DecodeError> {
        let received = self.buf.get(self.start..self.end).unwrap_or_default();
        let Some((prefix, rest)) = received.split_first_chunk::<4>() else {
            return Ok(None);
        };
        let fail = |what| DecodeError {
            what,
            offset: self.consumed,
        };
        let len = match usize::try_from(i32::from_be_bytes(*prefix)) {
            Ok(len) if len <= self.max_frame => len,
            Ok(_) => return Err(fail("frame longer than the maximum")),
            Err(_) => return Err(fail("negative frame length")),
        };
        let Some(frame) = rest.get(..len) else {
            return Ok(None);
        };
        let frame = frame.to_vec();
        self.start += 4 + len;
        self.consumed += 4 + len;
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
        Ok(Some(frame))
    }
}

#[cfg(test)]
mod tests;
