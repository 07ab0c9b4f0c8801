//! Delivery metadata that rides after an item frame's end marker.
//!
//! Curator's reader stops at the frame's end marker and ignores what follows,
//! and Curator copies a node's bytes unchanged when it requeues it. So this
//! crate keeps its per-item metadata there, invisible to Curator peers. Two
//! versions exist; readers accept both:
//!
//! ```text
//! b"ZKQ" 0x01   magic and trailer version
//! u32           failed deliveries so far (big-endian)
//!
//! b"ZKQ" 0x02   magic and trailer version
//! u32           failed deliveries so far (big-endian)
//! u128          the put's token (big-endian), unique per put
//! ```
//!
//! The token lets a producer whose create reply was lost find out whether the
//! create was applied, by reading back the newest items. A frame without a
//! trailer (written by Curator) has had no failed delivery and has no token.

/// Magic and version of the trailer without a token.
const MAGIC_V1: [u8; 4] = *b"ZKQ\x01";

/// Magic and version of the trailer with a token.
const MAGIC_V2: [u8; 4] = *b"ZKQ\x02";

/// Bytes of a trailer without, and with, a token.
const LEN_V1: usize = 4 + 4;
const LEN_V2: usize = LEN_V1 + 16;

/// What a trailer records.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Trailer {
    /// Failed deliveries so far.
    pub(crate) attempts: u32,
    /// The put's token, if the producer wrote one.
    pub(crate) token: Option<u128>,
}

/// The number of bytes an encoded frame of these records occupies.
pub(crate) fn frame_len(records: &[&[u8]]) -> usize {
    // version, then opcode + length + bytes per record, then the end marker
    4 + records.iter().map(|r| 5 + r.len()).sum::<usize>() + 1
}

/// The trailer in the bytes after a frame of `frame_len` bytes; the default
/// (no attempts, no token) if there is no recognisable trailer.
pub(crate) fn read(data: &[u8], frame_len: usize) -> Trailer {
    let rest = data.get(frame_len..).unwrap_or_default();
    let attempts = |rest: &[u8]| {
        let mut count = [0u8; 4];
        count.copy_from_slice(&rest[4..LEN_V1]);
        u32::from_be_bytes(count)
    };
    if rest.len() >= LEN_V2 && rest[..4] == MAGIC_V2 {
        let mut token = [0u8; 16];
        token.copy_from_slice(&rest[LEN_V1..LEN_V2]);
        Trailer {
            attempts: attempts(rest),
            token: Some(u128::from_be_bytes(token)),
        }
    } else if rest.len() >= LEN_V1 && rest[..4] == MAGIC_V1 {
        Trailer {
            attempts: attempts(rest),
            token: None,
        }
    } else {
        Trailer::default()
    }
}

/// The failed-delivery count in the bytes after a frame of `frame_len` bytes;
/// 0 if there is no (recognisable) trailer.
pub(crate) fn attempts(data: &[u8], frame_len: usize) -> u32 {
    read(data, frame_len).attempts
}

/// Appends a trailer recording `attempts` failed deliveries to a frame.
pub(crate) fn append(frame: &mut Vec<u8>, attempts: u32) {
    frame.extend_from_slice(&MAGIC_V1);
    frame.extend_from_slice(&attempts.to_be_bytes());
}

/// Appends a trailer with no failed delivery and the put's `token`.
pub(crate) fn append_token(frame: &mut Vec<u8>, token: u128) {
    frame.extend_from_slice(&MAGIC_V2);
    frame.extend_from_slice(&0u32.to_be_bytes());
    frame.extend_from_slice(&token.to_be_bytes());
}

/// The token of a node's data holding a frame, if it has one.
pub(crate) fn token_of(data: &[u8]) -> Option<u128> {
    let records = crate::codec::decode_frame(data).ok()?;
    read(data, frame_len(&records)).token
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
        assert_eq!(attempts(&frame, len), 0, "a version-2 trailer cut short");
        assert_eq!(read(&frame, len).token, None);
    }

    #[test]
    fn a_token_trailer_round_trips_and_leaves_the_records_alone() {
        let mut frame = encode_frame([&b"a"[..], &b"bc"[..]]).unwrap();
        let len = frame.len();
        let token = 0x0123_4567_89ab_cdef_fedc_ba98_7654_3210;
        append_token(&mut frame, token);
        assert_eq!(frame.len(), len + LEN_V2);
        assert_eq!(decode_frame(&frame).unwrap(), [&b"a"[..], &b"bc"[..]]);
        assert_eq!(
            read(&frame, len),
            Trailer {
                attempts: 0,
                token: Some(token)
            }
        );
        assert_eq!(token_of(&frame), Some(token));
    }

    #[test]
    fn frames_without_a_token_or_undecodable_data_have_none() {
        let mut frame = encode_frame([&b"x"[..]]).unwrap();
        assert_eq!(token_of(&frame), None, "no trailer");
        append(&mut frame, 2);
        assert_eq!(token_of(&frame), None, "a version-1 trailer");
        assert_eq!(token_of(b"not a frame"), None);
    }
}
