use super::*;
use crate::codec::{decode_frame, encode_frame};

/// The failed-delivery count recorded; 0 if none or damaged.
fn attempts(data: &[u8], frame_len: usize) -> u32 {
    read(data, frame_len).map_or(0, |t| t.attempts)
}

fn story() -> Trailer {
    Trailer {
        attempts: 3,
        token: Some(0x0123_4567_89ab_cdef_fedc_ba98_7654_3210),
        put_at: Some(1_700_000_000_123),
        not_before: Some(1_700_000_009_000),
        death: Some(Death {
            reason: "the printer is out of paper: ä".into(),
            died_at: from_epoch_millis(1_700_000_010_000),
            source: "/jobs".into(),
            original_name: "queue-|job_1|0000000007".into(),
        }),
    }
}

#[test]
fn a_frame_without_trailer_has_no_attempts() {
    let frame = encode_frame([&b"x"[..]]).unwrap();
    let records = decode_frame(&frame).unwrap();
    assert_eq!(frame_len(&records), frame.len());
    assert_eq!(attempts(&frame, frame.len()), 0);
    assert_eq!(read(&frame, frame.len()), Ok(Trailer::default()));
}

#[test]
fn crc32_matches_the_standard_check_value() {
    assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    assert_eq!(crc32(b""), 0);
}

#[test]
fn version_1_trailers_are_still_read() {
    let mut frame = encode_frame([&b"a"[..], &b""[..], &b"bc"[..]]).unwrap();
    let len = frame.len();
    frame.extend_from_slice(b"ZKQ\x01\0\0\0\x07");
    let records = decode_frame(&frame).unwrap();
    assert_eq!(records, [&b"a"[..], &b""[..], &b"bc"[..]], "records unchanged");
    assert_eq!(frame_len(&records), len);
    assert_eq!(attempts(&frame, len), 7);
}

#[test]
fn every_version_3_field_round_trips_and_leaves_the_records_alone() {
    for trailer in [
        Trailer::default(),
        Trailer {
            attempts: 1,
            put_at: Some(-5),
            ..Trailer::default()
        },
        Trailer {
            not_before: Some(i64::MAX),
            ..Trailer::default()
        },
        story(),
    ] {
        let mut frame = encode_frame([&b"a"[..], &b"bc"[..]]).unwrap();
        let len = frame.len();
        append(&mut frame, &trailer);
        assert_eq!(decode_frame(&frame).unwrap(), [&b"a"[..], &b"bc"[..]]);
        assert_eq!(read(&frame, len), Ok(trailer.clone()));
        assert_eq!(token_of(&frame), trailer.token);
    }
}

#[test]
fn long_texts_are_cut_at_a_character_boundary() {
    let mut trailer = story();
    let death = trailer.death.as_mut().unwrap();
    death.reason = "é".repeat(MAX_TEXT);
    let mut frame = encode_frame([&b"x"[..]]).unwrap();
    let len = frame.len();
    append(&mut frame, &trailer);
    let read_back = read(&frame, len).unwrap().death.unwrap().reason;
    assert_eq!(read_back, "é".repeat(MAX_TEXT / 2));
    assert_eq!(cut("aé", 2), "a");
}

#[test]
fn foreign_trailing_bytes_are_no_trailer() {
    let mut frame = encode_frame([&b"x"[..]]).unwrap();
    let len = frame.len();
    frame.extend_from_slice(b"ZK");
    assert_eq!(read(&frame, len), Ok(Trailer::default()));
    frame.extend_from_slice(b"Q");
    assert_eq!(read(&frame, len), Ok(Trailer::default()), "the magic alone");
}

#[test]
fn damaged_trailers_are_reported_never_misread() {
    let frame = encode_frame([&b"x"[..]]).unwrap();
    let len = frame.len();
    let with = |tail: &[u8]| [&frame[..], tail].concat();
    assert_eq!(
        read(&with(b"ZKQ\x02\0\0\0\x05"), len),
        Err(TrailerError::Truncated { offset: len }),
        "a version-2 trailer cut short"
    );
    assert_eq!(
        read(&with(b"ZKQ\x09\0\0\0\x05"), len),
        Err(TrailerError::UnknownVersion {
            version: 9,
            offset: len
        })
    );
    let mut good = frame.clone();
    append(&mut good, &story());
    // Every single flipped bit and every cut is caught.
    for at in len..good.len() {
        for bit in 0..8 {
            let mut bad = good.clone();
            bad[at] ^= 1 << bit;
            let read_bad = read(&bad, len);
            assert!(
                read_bad.is_err() || bad[len..len + 3] != *b"ZKQ",
                "byte {at} bit {bit}: {read_bad:?}"
            );
            assert_eq!(decode_frame(&bad).unwrap(), [&b"x"[..]], "the records stay readable");
            assert!(attempts(&bad, len) == 0 || read_bad.is_ok());
        }
    }
    for cut_at in len + 4..good.len() {
        assert!(read(&good[..cut_at], len).is_err(), "cut at {cut_at}");
    }
    let mut longer = good.clone();
    longer.push(0);
    assert_eq!(read(&longer, len), Err(TrailerError::Checksum { offset: len }));
}

/// A version 3 trailer with `body` after the version byte and a valid
/// checksum.
fn sealed(frame: &[u8], body: &[u8]) -> Vec<u8> {
    let mut trailer = b"ZKQ\x03".to_vec();
    trailer.extend_from_slice(body);
    let crc = crc32(&trailer);
    trailer.extend_from_slice(&crc.to_be_bytes());
    [frame, &trailer].concat()
}

#[test]
fn a_sealed_trailer_that_breaks_the_layout_is_refused() {
    let frame = encode_frame([&b"x"[..]]).unwrap();
    let len = frame.len();
    let fields_at = len + 8;
    assert_eq!(
        read(&sealed(&frame, b"\0\0\0\x01\x10"), len),
        Err(TrailerError::UnknownFields {
            fields: 0x10,
            offset: fields_at
        })
    );
    assert_eq!(
        read(&sealed(&frame, b"\0\0\0\x01\x02\0\0"), len),
        Err(TrailerError::Truncated { offset: fields_at + 1 })
    );
    assert_eq!(
        read(&sealed(&frame, b"\0\0\0\x01\x00\x07"), len),
        Err(TrailerError::TrailingBytes { offset: fields_at + 1 })
    );
    let mut death = vec![0, 0, 0, 1, HAS_DEATH];
    death.extend_from_slice(&[0; 8]);
    death.extend_from_slice(&[0, 1, 0xFF, 0, 0, 0, 0]);
    assert_eq!(
        read(&sealed(&frame, &death), len),
        Err(TrailerError::NotUtf8 { offset: fields_at + 9 })
    );
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
        Ok(Trailer {
            attempts: 0,
            token: Some(token),
            ..Trailer::default()
        })
    );
    assert_eq!(token_of(&frame), Some(token));
}

#[test]
fn frames_without_a_token_or_undecodable_data_have_none() {
    let mut frame = encode_frame([&b"x"[..]]).unwrap();
    assert_eq!(token_of(&frame), None, "no trailer");
    frame.extend_from_slice(b"ZKQ\x01\0\0\0\x02");
    assert_eq!(token_of(&frame), None, "a version-1 trailer");
    assert_eq!(token_of(b"not a frame"), None);
}

#[test]
fn epoch_millis_round_trip_on_both_sides_of_the_epoch() {
    for ms in [0, 1, -1, 1_700_000_000_123, -86_400_000] {
        assert_eq!(epoch_millis(from_epoch_millis(ms)), ms);
    }
}
