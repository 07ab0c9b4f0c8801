//! The item frame of Curator's queues (`ItemSerializer`), byte for byte.
//!
//! Every Curator queue node holds one frame, written with Java's
//! `DataOutputStream`, so all integers are big-endian:
//!
//! ```text
//! i32  version 0x00010001
//! per item:  u8 0x01, i32 length n (>= 0), n bytes of the serialized item
//! u8   0x02  (end marker)
//! ```
//!
//! A `put` writes a frame with one record, a `put_multi` one record per item
//! (at least one: a put of no items is refused).
//! The reader follows Curator's: bytes after the end marker are ignored, and
//! every other deviation is an error (Curator logs such a node as corrupted
//! and deletes it).

use std::fmt;

/// The version every frame starts with.
pub(crate) const FRAME_VERSION: i32 = 0x0001_0001;

/// Opcode of an item record.
const ITEM_OPCODE: u8 = 0x01;

/// Opcode of the end marker.
const EOF_OPCODE: u8 = 0x02;

/// Bytes of the version, the end marker and per-record overhead.
const VERSION_LEN: usize = 4;
const RECORD_OVERHEAD: usize = 1 + 4;

/// Why bytes are not a valid Curator item frame, or items cannot be framed.
///
/// Offsets count bytes from the start of the node's data.
///
/// # Examples
/// ```
/// use zk_queue::inspect::FrameError;
///
/// let err = FrameError::UnknownOpcode { opcode: 0x07, offset: 4 };
/// assert_eq!(err.to_string(), "unknown opcode 0x07 at byte 4 of the item frame");
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameError {
    /// The frame does not start with version `0x00010001`.
    WrongVersion {
        /// The version this crate and Curator write.
        expected: i32,
        /// The version found.
        found: i32,
    },
    /// A byte where a record or the end marker should start is neither
    /// `0x01` nor `0x02`.
    UnknownOpcode {
        /// The byte found.
        opcode: u8,
        /// Its offset.
        offset: usize,
    },
    /// A record's length is negative.
    NegativeLength {
        /// The length found.
        length: i32,
        /// Offset of the length field.
        offset: usize,
    },
    /// A record's length runs past the end of the data.
    LengthPastEnd {
        /// The length found.
        length: i32,
        /// Offset of the length field.
        offset: usize,
        /// How many bytes follow the length field.
        available: usize,
    },
    /// The data ends before the end marker (inside the version, an opcode or
    /// a length field).
    Truncated {
        /// Length of the data.
        len: usize,
    },
    /// An item is too large for a record's 32-bit signed length; nothing was
    /// encoded.
    ItemTooLarge {
        /// Size of the item in bytes.
        size: usize,
    },
    /// There is no item to encode: a put stores at least one (a frame
    /// without records would be a node that delivers nothing).
    NoItems,
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::WrongVersion { expected, found } => {
                write!(
                    f,
                    "wrong item frame version: expected {expected:#010x}, found {found:#010x}"
                )
            }
            FrameError::UnknownOpcode { opcode, offset } => {
                write!(f, "unknown opcode {opcode:#04x} at byte {offset} of the item frame")
            }
            FrameError::NegativeLength { length, offset } => {
                write!(f, "negative item length {length} at byte {offset} of the item frame")
            }
            FrameError::LengthPastEnd {
                length,
                offset,
                available,
            } => write!(
                f,
                "item length {length} at byte {offset} runs past the end of the frame ({available} bytes left)"
            ),
            FrameError::Truncated { len } => {
                write!(f, "item frame of {len} bytes ends before its end marker")
            }
            FrameError::ItemTooLarge { size } => {
                write!(f, "item of {size} bytes is too large for an item frame")
            }
            FrameError::NoItems => f.write_str("a put needs at least one item"),
        }
    }
}

impl std::error::Error for FrameError {}

/// Encodes items as one frame, in order.
///
/// # Errors
/// [`FrameError::NoItems`] for no item at all (the decoder accepts such a
/// frame, as Curator's does, but nothing here writes one);
/// [`FrameError::ItemTooLarge`] if an item is longer than `i32::MAX` bytes.
pub(crate) fn encode_frame<'a>(items: impl IntoIterator<Item = &'a [u8]>) -> Result<Vec<u8>, FrameError> {
    let mut items = items.into_iter().peekable();
    if items.peek().is_none() {
        return Err(FrameError::NoItems);
    }
    let mut out = Vec::with_capacity(VERSION_LEN + 1);
    out.extend_from_slice(&FRAME_VERSION.to_be_bytes());
    for item in items {
        let length = i32::try_from(item.len()).map_err(|_| FrameError::ItemTooLarge { size: item.len() })?;
        out.reserve(RECORD_OVERHEAD + item.len() + 1);
        out.push(ITEM_OPCODE);
        out.extend_from_slice(&length.to_be_bytes());
        out.extend_from_slice(item);
    }
    out.push(EOF_OPCODE);
    Ok(out)
}

/// Decodes a frame into its items, borrowed from `bytes`, in order.
///
/// Accepts exactly what Curator's reader accepts: bytes after the end marker
/// are ignored; a frame with no record yields no item. Lengths are checked
/// against the remaining data before anything is allocated, so arbitrary
/// input costs at most one slice per five bytes.
///
/// # Errors
/// The [`FrameError`] variant naming the first deviation found.
pub(crate) fn decode_frame(bytes: &[u8]) -> Result<Vec<&[u8]>, FrameError> {
    let truncated = FrameError::Truncated { len: bytes.len() };
    let mut reader = Reader { bytes, pos: 0 };
    let version = reader.i32().ok_or_else(|| truncated.clone())?;
    if version != FRAME_VERSION {
        return Err(FrameError::WrongVersion {
            expected: FRAME_VERSION,
            found: version,
        });
    }
    let mut items = Vec::new();
    loop {
        let opcode_offset = reader.pos;
        match reader.u8() {
            Some(ITEM_OPCODE) => {
                let offset = reader.pos;
                let length = reader.i32().ok_or_else(|| truncated.clone())?;
                let size = usize::try_from(length).map_err(|_| FrameError::NegativeLength { length, offset })?;
                let item = reader.take(size).ok_or(FrameError::LengthPastEnd {
                    length,
                    offset,
                    available: reader.remaining(),
                })?;
                items.push(item);
            }
            Some(EOF_OPCODE) => return Ok(items),
            Some(opcode) => {
                return Err(FrameError::UnknownOpcode {
                    opcode,
                    offset: opcode_offset,
                })
            }
            None => return Err(truncated),
        }
    }
}

/// A cursor over big-endian data that never reads past the end.
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn remaining(&self) -> usize {
        self.bytes.len().saturating_sub(self.pos)
    }

    /// The next `n` bytes, or `None` (consuming nothing) if fewer remain.
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let slice = self.bytes.get(self.pos..end)?;
        self.pos = end;
        Some(slice)
    }

    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }

    fn i32(&mut self) -> Option<i32> {
        let b = self.take(4)?;
        Some(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    fn encode(items: &[&[u8]]) -> Vec<u8> {
        encode_frame(items.iter().copied()).unwrap()
    }

    #[test]
    fn encodes_curators_verified_vectors() {
        assert_eq!(encode(&[b"hello"]), hex("00010001 01 00000005 68656c6c6f 02"));
        assert_eq!(
            encode(&[b"a", b"", b"bc"]),
            hex("00010001 01 00000001 61 01 00000000 01 00000002 6263 02")
        );
        assert_eq!(encode(&[b"x"]), hex("0001000101000000017802"));
        // Curator writes `[]` as `00010001 02`; a put here refuses it.
        assert_eq!(encode_frame([]).unwrap_err(), FrameError::NoItems);
    }

    #[test]
    fn decodes_curators_verified_vectors() {
        let frame = hex("00010001 01 00000005 68656c6c6f 02");
        assert_eq!(decode_frame(&frame).unwrap(), [b"hello".as_slice()]);
        let frame = hex("00010001 01 00000001 61 01 00000000 01 00000002 6263 02");
        assert_eq!(decode_frame(&frame).unwrap(), [b"a".as_slice(), b"", b"bc"]);
        assert!(decode_frame(&hex("00010001 02")).unwrap().is_empty());
        assert_eq!(decode_frame(&hex("0001000101000000017802")).unwrap(), [b"x".as_slice()]);
    }

    #[test]
    fn round_trips_many_items_in_order() {
        let owned: Vec<Vec<u8>> = (0..100).map(|i: u32| i.to_string().into_bytes()).collect();
        let frame = encode_frame(owned.iter().map(Vec::as_slice)).unwrap();
        let decoded = decode_frame(&frame).unwrap();
        assert_eq!(decoded, owned.iter().map(Vec::as_slice).collect::<Vec<_>>());
    }

    #[test]
    fn ignores_bytes_after_the_end_marker() {
        let mut frame = encode(&[b"x"]);
        frame.extend_from_slice(b"\x07trailing garbage\x01\xff");
        assert_eq!(decode_frame(&frame).unwrap(), [b"x".as_slice()]);
    }

    #[test]
    fn rejects_a_wrong_version_naming_both() {
        let err = decode_frame(&hex("00010002 02")).unwrap_err();
        assert_eq!(
            err,
            FrameError::WrongVersion {
                expected: 0x0001_0001,
                found: 0x0001_0002
            }
        );
        assert_eq!(
            err.to_string(),
            "wrong item frame version: expected 0x00010001, found 0x00010002"
        );
        // Raw bytes written by a non-Curator producer.
        assert!(matches!(
            decode_frame(b"hello world"),
            Err(FrameError::WrongVersion { .. })
        ));
    }

    #[test]
    fn rejects_an_unknown_opcode_with_its_offset() {
        let err = decode_frame(&hex("00010001 01 00000001 61 03")).unwrap_err();
        assert_eq!(err, FrameError::UnknownOpcode { opcode: 3, offset: 10 });
        assert_eq!(err.to_string(), "unknown opcode 0x03 at byte 10 of the item frame");
        let err = decode_frame(&hex("00010001 00")).unwrap_err();
        assert_eq!(err, FrameError::UnknownOpcode { opcode: 0, offset: 4 });
    }

    #[test]
    fn rejects_a_negative_length() {
        let err = decode_frame(&hex("00010001 01 ffffffff 02")).unwrap_err();
        assert_eq!(err, FrameError::NegativeLength { length: -1, offset: 5 });
        assert_eq!(err.to_string(), "negative item length -1 at byte 5 of the item frame");
    }

    #[test]
    fn rejects_a_length_past_the_end_without_allocating_it() {
        let err = decode_frame(&hex("00010001 01 00000004 6162 02")).unwrap_err();
        assert_eq!(
            err,
            FrameError::LengthPastEnd {
                length: 4,
                offset: 5,
                available: 3
            }
        );
        // An absurd length: an error, not a 2 GiB allocation.
        let err = decode_frame(&hex("00010001 01 7fffffff")).unwrap_err();
        assert_eq!(
            err,
            FrameError::LengthPastEnd {
                length: i32::MAX,
                offset: 5,
                available: 0
            }
        );
        assert_eq!(
            err.to_string(),
            "item length 2147483647 at byte 5 runs past the end of the frame (0 bytes left)"
        );
    }

    #[test]
    fn rejects_a_missing_end_marker_and_every_truncation() {
        let frame = encode(&[b"a", b"", b"bc"]);
        for cut in 0..frame.len() {
            let err = decode_frame(&frame[..cut]).unwrap_err();
            assert!(
                matches!(err, FrameError::Truncated { len } if len == cut)
                    || matches!(err, FrameError::LengthPastEnd { .. }),
                "cut at {cut}: {err:?}"
            );
        }
        assert_eq!(
            decode_frame(&hex("00010001 01 00000001 61")).unwrap_err(),
            FrameError::Truncated { len: 10 }
        );
        assert_eq!(decode_frame(&[]).unwrap_err(), FrameError::Truncated { len: 0 });
        assert_eq!(
            FrameError::Truncated { len: 10 }.to_string(),
            "item frame of 10 bytes ends before its end marker"
        );
    }

    #[test]
    fn messages_are_lowercase_without_trailing_punctuation() {
        let errors = [
            FrameError::WrongVersion { expected: 1, found: -1 },
            FrameError::UnknownOpcode { opcode: 9, offset: 4 },
            FrameError::NegativeLength { length: -5, offset: 5 },
            FrameError::LengthPastEnd {
                length: 9,
                offset: 5,
                available: 1,
            },
            FrameError::Truncated { len: 3 },
            FrameError::ItemTooLarge { size: 1 << 31 },
            FrameError::NoItems,
        ];
        for e in errors {
            let msg = e.to_string();
            assert!(msg.chars().next().is_some_and(|c| c.is_lowercase()), "{msg}");
            assert!(!msg.ends_with('.'), "{msg}");
        }
    }

    #[test]
    fn decoder_never_panics_and_round_trips_random_input() {
        let mut rng = fastrand::Rng::with_seed(0x5eed_f4a3);
        let version = FRAME_VERSION.to_be_bytes();
        for _ in 0..20_000 {
            // Arbitrary bytes, half of them behind a valid version so the
            // record parser gets exercised too.
            let mut junk: Vec<u8> = if rng.bool() { version.to_vec() } else { Vec::new() };
            let len = rng.usize(0..48);
            junk.extend((0..len).map(|_| match rng.u8(0..4) {
                0 => ITEM_OPCODE,
                1 => EOF_OPCODE,
                2 => 0,
                _ => rng.u8(..),
            }));
            if let Ok(items) = decode_frame(&junk) {
                // Whatever decodes re-encodes to the bytes read.
                match encode_frame(items.iter().copied()) {
                    Ok(again) => assert_eq!(again, junk[..again.len()], "{junk:?}"),
                    Err(e) => assert!(items.is_empty() && e == FrameError::NoItems, "{junk:?}"),
                }
            }

            // Valid frames of random items round-trip, and any damage is
            // reported, not panicked on.
            let owned: Vec<Vec<u8>> = (0..rng.usize(1..6))
                .map(|_| (0..rng.usize(0..20)).map(|_| rng.u8(..)).collect())
                .collect();
            let frame = encode_frame(owned.iter().map(Vec::as_slice)).unwrap();
            let decoded = decode_frame(&frame).unwrap();
            assert_eq!(decoded, owned.iter().map(Vec::as_slice).collect::<Vec<_>>());
            assert!(decode_frame(&frame[..rng.usize(0..frame.len())]).is_err());
            let mut damaged = frame.clone();
            let at = rng.usize(0..damaged.len());
            damaged[at] = rng.u8(..);
            let _ = decode_frame(&damaged);
        }
    }
}
