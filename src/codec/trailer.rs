//! Delivery metadata that rides after an item frame's end marker.
//!
//! Curator's reader stops at the frame's end marker and ignores what follows,
//! and Curator copies a node's bytes unchanged when it requeues it. So this
//! crate keeps its per-item metadata there, invisible to Curator peers:
//!
//! ```text
//! b"ZKQ" 0x01   magic and trailer version
//! u32           failed deliveries so far (big-endian)
//! ```
//!
//! A frame without a trailer (written by Curator, or by a first `put`) has
//! had no failed delivery.

/// Magic and version of the trailer.
const MAGIC: [u8; 4] = *b"ZKQ\x01";

/// Bytes of a trailer.
const LEN: usize = MAGIC.len() + 4;

/// The number of bytes an encoded frame of these records occupies.
pub(crate) fn frame_len(records: &[&[u8]]) -> usize {
    // version, then opcode + length + bytes per record, then the end marker
    4 + records.iter().map(|r| 5 + r.len()).sum::<usize>() + 1
}

/// The failed-delivery count in the bytes after a frame of `frame_len` bytes;
/// 0 if there is no (recognisable) trailer.
pub(crate) fn attempts(data: &[u8], frame_len: usize) -> u32 {
    match data.get(frame_len..) {
        Some(rest) if rest.len() >= LEN && rest[..MAGIC.len()] == MAGIC => {
            let mut count = [0u8; 4];
            count.copy_from_slice(&rest[MAGIC.len()..LEN]);
            u32::from_be_bytes(count)
        }
        _ => 0,
    }
}

/// Appends a trailer recording `attempts` failed deliveries to a frame.
pub(crate) fn append(frame: &mut Vec<u8>, attempts: u32) {
    frame.extend_from_slice(&MAGIC);
    frame.extend_from_slice(&attempts.to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{decode_frame, encode_frame};

    #[test]
    fn a_frame_without_trailer_has_no_attempts() {
        let frame = encode_frame([&b"x"[..]]).unwrap();
        let records = decode_frame(&frame).unwrap();
        assert_eq!(frame_len(&records), frame.len());
        assert_eq!(attempts(&frame, frame.len()), 0);
    }

    #[test]
    fn the_trailer_round_trips_and_curators_reader_ignores_it() {
        let mut frame = encode_frame([&b"a"[..], &b""[..], &b"bc"[..]]).unwrap();
        let len = frame.len();
        append(&mut frame, 7);
        let records = decode_frame(&frame).unwrap();
        assert_eq!(records, [&b"a"[..], &b""[..], &b"bc"[..]], "records unchanged");
        assert_eq!(frame_len(&records), len);
        assert_eq!(attempts(&frame, len), 7);
    }

    #[test]
    fn foreign_or_short_trailing_bytes_count_as_no_attempts() {
        let mut frame = encode_frame([&b"x"[..]]).unwrap();
        let len = frame.len();
        frame.extend_from_slice(b"ZKQ");
        assert_eq!(attempts(&frame, len), 0);
        frame.extend_from_slice(b"\x02\0\0\0\x05");
        assert_eq!(attempts(&frame, len), 0);
    }
}
