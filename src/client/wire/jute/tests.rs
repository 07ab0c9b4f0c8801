//! The jute primitives, and sample records the other wire tests share.

use super::*;

/// A stat whose fields are numbered in the struct's order: czxid 1, mzxid 2,
/// pzxid 3, ctime 4, mtime 5, version 6, cversion 7, aversion 8,
/// ephemeral_owner 9, data_length 10, num_children 11.
pub(crate) fn sample_stat() -> Stat {
    Stat {
        czxid: 1,
        mzxid: 2,
        pzxid: 3,
        ctime: 4,
        mtime: 5,
        version: 6,
        cversion: 7,
        aversion: 8,
        ephemeral_owner: 9,
        data_length: 10,
        num_children: 11,
    }
}

/// [`sample_stat`] as ZooKeeper serializes it, written out by hand.
#[rustfmt::skip]
pub(crate) const STAT_BYTES: [u8; STAT_LEN] = [
    0, 0, 0, 0, 0, 0, 0, 1, // czxid
    0, 0, 0, 0, 0, 0, 0, 2, // mzxid
    0, 0, 0, 0, 0, 0, 0, 4, // ctime
    0, 0, 0, 0, 0, 0, 0, 5, // mtime
    0, 0, 0, 6, // version
    0, 0, 0, 7, // cversion
    0, 0, 0, 8, // aversion
    0, 0, 0, 0, 0, 0, 0, 9, // ephemeralOwner
    0, 0, 0, 10, // dataLength
    0, 0, 0, 11, // numChildren
    0, 0, 0, 0, 0, 0, 0, 3, // pzxid
];

fn written(f: impl FnOnce(&mut Writer<'_>)) -> Vec<u8> {
    let mut out = Vec::new();
    framed(&mut out, f);
    out.split_off(4)
}

#[test]
fn a_stat_reads_in_zookeepers_field_order() {
    let mut r = Reader::new(&STAT_BYTES);
    assert_eq!(r.stat(), Ok(sample_stat()));
    assert_eq!(r.finish(), Ok(()));
}

#[test]
fn a_short_stat_is_refused_before_any_field() {
    let e = Reader::new(&STAT_BYTES[..STAT_LEN - 1]).stat().expect_err("short");
    assert_eq!((e.what, e.offset), ("truncated stat", 0));
}

#[test]
fn integers_are_big_endian() {
    let bytes = written(|w| {
        w.i32(-2);
        w.i64(0x0102_0304_0506_0708);
        w.bool(true);
        w.bool(false);
    });
    assert_eq!(bytes, [0xFF, 0xFF, 0xFF, 0xFE, 1, 2, 3, 4, 5, 6, 7, 8, 1, 0]);
    let mut r = Reader::new(&bytes);
    assert_eq!(r.i32(), Ok(-2));
    assert_eq!(r.i64(), Ok(0x0102_0304_0506_0708));
    assert_eq!((r.bool(), r.bool()), (Ok(true), Ok(false)));
    assert_eq!(r.remaining(), 0);
    assert_eq!(r.i32().map_err(|e| e.what), Err("truncated int"));
}

#[test]
fn any_non_zero_byte_is_true() {
    assert_eq!(Reader::new(&[7]).bool(), Ok(true));
}

#[test]
fn strings_and_buffers_carry_their_length() {
    let bytes = written(|w| {
        w.string("héllo");
        w.buffer(&[]);
        w.buffer(&[1, 2]);
    });
    #[rustfmt::skip]
    let expected = [
        0, 0, 0, 6, b'h', 0xC3, 0xA9, b'l', b'l', b'o',
        0, 0, 0, 0,
        0, 0, 0, 2, 1, 2,
    ];
    assert_eq!(bytes, expected);
    let mut r = Reader::new(&bytes);
    assert_eq!(r.string().as_deref(), Ok("héllo"));
    assert_eq!(r.buffer(), Ok(vec![]));
    assert_eq!(r.buffer(), Ok(vec![1, 2]));
    assert_eq!(r.finish(), Ok(()));
}

#[test]
fn null_reads_as_empty() {
    let null = (-1i32).to_be_bytes();
    assert_eq!(Reader::new(&null).buffer(), Ok(vec![]));
    assert_eq!(Reader::new(&null).string(), Ok(String::new()));
    assert_eq!(Reader::new(&null).strings(), Ok(vec![]));
    assert_eq!(Reader::new(&null).acls(), Ok(vec![]));
}

#[test]
fn other_negative_lengths_are_refused() {
    let bytes = (-2i32).to_be_bytes();
    assert_eq!(Reader::new(&bytes).buffer().map_err(|e| e.what), Err("negative length"));
    assert_eq!(Reader::new(&bytes).strings().map_err(|e| e.what), Err("negative count"));
}

#[test]
fn lengths_past_the_end_are_refused_before_allocating() {
    for len in [i32::MAX, 1 << 30, 4] {
        let mut bytes = vec![0xEE, 0xEE];
        bytes.extend_from_slice(&len.to_be_bytes());
        bytes.extend_from_slice(b"abc");
        let mut r = Reader::new(&bytes);
        r.take(2, "skip").expect("two bytes");
        let e = r.string().expect_err("past the end");
        assert_eq!(
            e,
            DecodeError {
                what: "length past the end",
                offset: 2
            }
        );
    }
}

#[test]
fn counts_the_bytes_cannot_hold_are_refused_before_allocating() {
    // Two strings need at least eight bytes; seven are left.
    let mut bytes = 2i32.to_be_bytes().to_vec();
    bytes.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(
        Reader::new(&bytes).strings().map_err(|e| e.what),
        Err("count past the end")
    );
    for count in [i32::MAX, 1 << 28] {
        let mut bytes = count.to_be_bytes().to_vec();
        bytes.extend_from_slice(&[0; 64]);
        assert_eq!(
            Reader::new(&bytes).strings().map_err(|e| e.what),
            Err("count past the end")
        );
        assert_eq!(
            Reader::new(&bytes).acls().map_err(|e| e.what),
            Err("count past the end")
        );
    }
}

#[test]
fn strings_must_be_utf8() {
    let bytes = [0, 0, 0, 2, 0xC3, 0x28];
    let e = Reader::new(&bytes).string().expect_err("not utf-8");
    assert_eq!((e.what, e.offset), ("string is not utf-8", 0));
}

#[test]
fn acls_are_perms_scheme_and_id() {
    let acls = [
        Acl::new(Perms::READ | Perms::ADMIN, "ip", "10.0.0.0/8"),
        Acl::anyone_all(),
    ];
    let bytes = written(|w| w.acls(&acls));
    #[rustfmt::skip]
    let expected = [
        &[0, 0, 0, 2][..], // count
        &[0, 0, 0, 17], &[0, 0, 0, 2], b"ip", &[0, 0, 0, 10], b"10.0.0.0/8",
        &[0, 0, 0, 31], &[0, 0, 0, 5], b"world", &[0, 0, 0, 6], b"anyone",
    ]
    .concat();
    assert_eq!(bytes, expected);
    assert_eq!(Reader::new(&bytes).acls(), Ok(acls.to_vec()));
}

#[test]
fn paths_are_written_under_the_chroot() {
    let paths = ["/".to_owned(), "/x".to_owned()];
    let bytes = written(|w| w.paths("/ab", &paths));
    #[rustfmt::skip]
    let expected = [
        &[0, 0, 0, 2][..],
        &[0, 0, 0, 3], b"/ab",
        &[0, 0, 0, 5], b"/ab/x",
    ]
    .concat();
    assert_eq!(bytes, expected);
    let mut r = Reader::new(&bytes);
    r.i32().expect("count");
    assert_eq!(r.path("/ab").as_deref(), Ok("/"));
    assert_eq!(r.path("/ab").as_deref(), Ok("/x"));
}

#[test]
fn a_frame_is_prefixed_with_its_length_after_what_was_there() {
    let mut out = vec![9, 9];
    framed(&mut out, |w| w.i32(5));
    framed(&mut out, |_| {});
    assert_eq!(out, [9, 9, 0, 0, 0, 4, 0, 0, 0, 5, 0, 0, 0, 0]);
}

#[test]
fn trailing_bytes_are_reported_where_they_start() {
    let mut r = Reader::new(&[0, 0, 0, 1, 0xAB]);
    r.i32().expect("an int");
    assert_eq!(
        r.finish(),
        Err(DecodeError {
            what: "trailing bytes",
            offset: 4
        })
    );
    assert_eq!(r.rest(), [0xAB]);
}

#[test]
fn errors_read_as_lowercase_sentences() {
    let e = DecodeError {
        what: "truncated int",
        offset: 12,
    };
    assert_eq!(e.to_string(), "malformed reply: truncated int at byte 12");
}

#[test]
fn perms_keep_their_bits() {
    for bits in [0, 1, 17, 31] {
        assert_eq!(Perms::from_bits(bits).bits(), bits);
    }
    assert_eq!(Perms::from_bits(31), Perms::ALL);
    assert_eq!(Perms::from_bits(0x1_02).bits(), 2, "bits above the eighth are dropped");
}
