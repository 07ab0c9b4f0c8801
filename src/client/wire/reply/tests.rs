//! Replies built by hand from `zookeeper.jute`, whole, cut and padded.

use super::*;
use crate::client::wire::jute::tests::{sample_stat, STAT_BYTES};
use crate::client::Perms;

/// The parts, concatenated.
fn cat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

fn decoded(kind: ReplyKind, body: &[u8], chroot: &str) -> Result<Reply, ReplyError> {
    decode_reply(kind, Code::OK, body, chroot)
}

fn created_body() -> Vec<u8> {
    cat(&[&[0, 0, 0, 17], b"/app/q-0000000001", &STAT_BYTES])
}

fn children_body() -> Vec<u8> {
    cat(&[&[0, 0, 0, 2], &[0, 0, 0, 1], b"a", &[0, 0, 0, 2], b"bc", &STAT_BYTES])
}

fn acl_body() -> Vec<u8> {
    #[rustfmt::skip]
    let body = cat(&[
        &[0, 0, 0, 1],
        &[0, 0, 0, 3], &[0, 0, 0, 6], b"digest", &[0, 0, 0, 3], b"u:h",
        &STAT_BYTES,
    ]);
    body
}

/// A successful multi: a create2, a plain create, a delete, a set-data and
/// a check.
fn multi_body() -> Vec<u8> {
    #[rustfmt::skip]
    let body = cat(&[
        &[0, 0, 0, 15], &[0], &[0, 0, 0, 0], &[0, 0, 0, 6], b"/app/x", &STAT_BYTES,
        &[0, 0, 0, 1], &[0], &[0, 0, 0, 0], &[0, 0, 0, 6], b"/app/y",
        &[0, 0, 0, 2], &[0], &[0, 0, 0, 0],
        &[0, 0, 0, 5], &[0], &[0, 0, 0, 0], &STAT_BYTES,
        &[0, 0, 0, 13], &[0], &[0, 0, 0, 0],
        &[0xFF, 0xFF, 0xFF, 0xFF], &[1], &[0xFF, 0xFF, 0xFF, 0xFF],
    ]);
    body
}

/// A failed multi: the first op would have passed, the second found its node
/// (node exists), the third was not tried.
fn failed_multi_body() -> Vec<u8> {
    #[rustfmt::skip]
    let body = cat(&[
        &[0xFF, 0xFF, 0xFF, 0xFF], &[0], &[0, 0, 0, 0], &[0, 0, 0, 0],
        &[0xFF, 0xFF, 0xFF, 0xFF], &[0], &[0xFF, 0xFF, 0xFF, 0x92], &[0xFF, 0xFF, 0xFF, 0x92],
        &[0xFF, 0xFF, 0xFF, 0xFF], &[0], &[0xFF, 0xFF, 0xFF, 0xFE], &[0xFF, 0xFF, 0xFF, 0xFE],
        &[0xFF, 0xFF, 0xFF, 0xFF], &[1], &[0xFF, 0xFF, 0xFF, 0xFF],
    ]);
    body
}

fn multi_read_body() -> Vec<u8> {
    #[rustfmt::skip]
    let body = cat(&[
        &[0, 0, 0, 4], &[0], &[0, 0, 0, 0], &[0, 0, 0, 2], b"hi", &STAT_BYTES,
        &[0xFF, 0xFF, 0xFF, 0xFF], &[0], &[0xFF, 0xFF, 0xFF, 0x9B], &[0xFF, 0xFF, 0xFF, 0x9B],
        &[0xFF, 0xFF, 0xFF, 0xFF], &[1], &[0xFF, 0xFF, 0xFF, 0xFF],
    ]);
    body
}

/// Every sample body with its kind.
fn samples() -> Vec<(ReplyKind, Vec<u8>)> {
    vec![
        (ReplyKind::Created, created_body()),
        (ReplyKind::Stat, STAT_BYTES.to_vec()),
        (ReplyKind::Data, cat(&[&[0, 0, 0, 3], b"abc", &STAT_BYTES])),
        (ReplyKind::Data, cat(&[&[0xFF, 0xFF, 0xFF, 0xFF], &STAT_BYTES])),
        (ReplyKind::Children, children_body()),
        (ReplyKind::Acl, acl_body()),
        (ReplyKind::Path, cat(&[&[0, 0, 0, 6], b"/app/s"])),
        (ReplyKind::Multi, multi_body()),
        (ReplyKind::Multi, failed_multi_body()),
        (ReplyKind::MultiRead, multi_read_body()),
        (ReplyKind::Empty, vec![0, 0, 0, 0]),
    ]
}

#[test]
fn a_header_is_xid_zxid_and_err_before_the_body() {
    #[rustfmt::skip]
    let frame = [
        0, 0, 0, 7, // xid
        0, 0, 0, 0, 0, 0, 0, 0x2A, // zxid
        0xFF, 0xFF, 0xFF, 0x9B, // err: no node
        0xAB, 0xCD, // body
    ];
    let (header, body) = ReplyHeader::decode(&frame).expect("decodes");
    assert_eq!(
        header,
        ReplyHeader {
            xid: 7,
            zxid: 42,
            err: Code::NO_NODE
        }
    );
    assert_eq!(body, [0xAB, 0xCD]);
    for cut in 0..ReplyHeader::LEN {
        let e = ReplyHeader::decode(&frame[..cut]).expect_err("short");
        assert_eq!((e.what, e.offset), ("truncated reply header", 0));
    }
}

#[test]
fn a_create_reply_has_the_path_without_the_chroot_and_the_stat() {
    let expected = Reply::Created {
        path: "/q-0000000001".to_owned(),
        stat: sample_stat(),
    };
    assert_eq!(decoded(ReplyKind::Created, &created_body(), "/app"), Ok(expected));
    let Ok(Reply::Created { path, .. }) = decoded(ReplyKind::Created, &created_body(), "") else {
        panic!("no create reply");
    };
    assert_eq!(path, "/app/q-0000000001");
}

#[test]
fn a_stat_reply_is_the_stat() {
    assert_eq!(
        decoded(ReplyKind::Stat, &STAT_BYTES, ""),
        Ok(Reply::Stat(sample_stat()))
    );
}

#[test]
fn a_data_reply_has_data_and_stat() {
    let body = cat(&[&[0, 0, 0, 3], b"abc", &STAT_BYTES]);
    let expected = Reply::Data {
        data: b"abc".to_vec(),
        stat: sample_stat(),
    };
    assert_eq!(decoded(ReplyKind::Data, &body, ""), Ok(expected));
}

#[test]
fn null_data_reads_as_empty() {
    let body = cat(&[&[0xFF, 0xFF, 0xFF, 0xFF], &STAT_BYTES]);
    let expected = Reply::Data {
        data: vec![],
        stat: sample_stat(),
    };
    assert_eq!(decoded(ReplyKind::Data, &body, ""), Ok(expected));
}

#[test]
fn a_children_reply_has_names_and_stat() {
    let expected = Reply::Children {
        names: vec!["a".to_owned(), "bc".to_owned()],
        stat: sample_stat(),
    };
    assert_eq!(decoded(ReplyKind::Children, &children_body(), "/app"), Ok(expected));
}

#[test]
fn an_acl_reply_has_the_entries_and_stat() {
    let expected = Reply::Acl {
        acl: vec![Acl::new(Perms::READ | Perms::WRITE, "digest", "u:h")],
        stat: sample_stat(),
    };
    assert_eq!(decoded(ReplyKind::Acl, &acl_body(), ""), Ok(expected));
}

#[test]
fn a_sync_reply_has_the_path_without_the_chroot() {
    let body = cat(&[&[0, 0, 0, 6], b"/app/s"]);
    assert_eq!(
        decoded(ReplyKind::Path, &body, "/app"),
        Ok(Reply::Path("/s".to_owned()))
    );
    let root = cat(&[&[0, 0, 0, 4], b"/app"]);
    assert_eq!(decoded(ReplyKind::Path, &root, "/app"), Ok(Reply::Path("/".to_owned())));
}

#[test]
fn a_successful_multi_has_a_result_per_op() {
    let expected = Reply::Multi(vec![
        MultiResult::Created {
            path: "/x".to_owned(),
            stat: Some(sample_stat()),
        },
        MultiResult::Created {
            path: "/y".to_owned(),
            stat: None,
        },
        MultiResult::Deleted,
        MultiResult::SetData(sample_stat()),
        MultiResult::Checked,
    ]);
    assert_eq!(decoded(ReplyKind::Multi, &multi_body(), "/app"), Ok(expected));
}

#[test]
fn a_failed_multi_has_an_error_per_op_whatever_the_header_says() {
    let expected = Reply::Multi(vec![
        MultiResult::Error(Code::OK),
        MultiResult::Error(Code::NODE_EXISTS),
        MultiResult::Error(Code::RUNTIME_INCONSISTENCY),
    ]);
    let body = failed_multi_body();
    for err in [Code::OK, Code::NODE_EXISTS] {
        assert_eq!(decode_reply(ReplyKind::Multi, err, &body, ""), Ok(expected.clone()));
    }
}

#[test]
fn a_failed_multi_without_a_body_is_its_code() {
    for kind in [ReplyKind::Multi, ReplyKind::MultiRead] {
        let reply = decode_reply(kind, Code::MARSHALLING_ERROR, &[], "");
        assert_eq!(reply, Err(ReplyError::Code(Code::MARSHALLING_ERROR)));
    }
}

#[test]
fn a_multi_read_has_data_or_an_error_per_path() {
    let expected = Reply::MultiRead(vec![Ok((b"hi".to_vec(), sample_stat())), Err(Code::NO_NODE)]);
    assert_eq!(decoded(ReplyKind::MultiRead, &multi_read_body(), ""), Ok(expected));
}

#[test]
fn results_of_the_wrong_kind_are_malformed() {
    // A get-data result in a multi, a delete result in a multi-read.
    let data = cat(&[&[0, 0, 0, 4], &[0], &[0, 0, 0, 0]]);
    let reply = decoded(ReplyKind::Multi, &data, "");
    assert!(
        matches!(reply, Err(ReplyError::Malformed(DecodeError { offset: 0, .. }))),
        "{reply:?}"
    );
    let delete = cat(&[&[0, 0, 0, 2], &[0], &[0, 0, 0, 0]]);
    let reply = decoded(ReplyKind::MultiRead, &delete, "");
    assert!(
        matches!(reply, Err(ReplyError::Malformed(DecodeError { offset: 0, .. }))),
        "{reply:?}"
    );
}

#[test]
fn a_non_ok_header_is_the_answer_for_other_kinds() {
    for (kind, body) in samples() {
        if matches!(kind, ReplyKind::Multi | ReplyKind::MultiRead) {
            continue;
        }
        assert_eq!(
            decode_reply(kind, Code::NO_NODE, &body, ""),
            Err(ReplyError::Code(Code::NO_NODE)),
            "{kind:?}"
        );
    }
}

#[test]
fn an_empty_reply_may_carry_an_error_response() {
    assert_eq!(decoded(ReplyKind::Empty, &[], ""), Ok(Reply::Empty));
    assert_eq!(decoded(ReplyKind::Empty, &[0, 0, 0, 0], ""), Ok(Reply::Empty));
    let no_watcher = (-121i32).to_be_bytes();
    assert_eq!(
        decoded(ReplyKind::Empty, &no_watcher, ""),
        Err(ReplyError::Code(Code::NO_WATCHER))
    );
    assert!(matches!(
        decoded(ReplyKind::Empty, &[0, 0, 0], ""),
        Err(ReplyError::Malformed(_))
    ));
}

#[test]
fn every_cut_of_every_reply_is_refused() {
    for (kind, body) in samples() {
        assert!(decoded(kind, &body, "/app").is_ok(), "{kind:?}");
        for cut in 0..body.len() {
            if kind == ReplyKind::Empty && cut == 0 {
                continue;
            }
            let reply = decoded(kind, &body[..cut], "/app");
            assert!(
                matches!(reply, Err(ReplyError::Malformed(_))),
                "{kind:?} cut at {cut}: {reply:?}"
            );
        }
    }
}

#[test]
fn trailing_bytes_after_any_reply_are_refused() {
    for (kind, body) in samples() {
        let padded = cat(&[&body, &[0]]);
        let e = DecodeError {
            what: "trailing bytes",
            offset: body.len(),
        };
        assert_eq!(decoded(kind, &padded, ""), Err(ReplyError::Malformed(e)), "{kind:?}");
    }
}

#[test]
fn huge_declared_lengths_are_refused() {
    let huge = i32::MAX.to_be_bytes();
    let cases = [
        (ReplyKind::Created, "length past the end"),
        (ReplyKind::Path, "length past the end"),
        (ReplyKind::Data, "length past the end"),
        (ReplyKind::Children, "count past the end"),
        (ReplyKind::Acl, "count past the end"),
    ];
    for (kind, what) in cases {
        let body = cat(&[&huge, &STAT_BYTES]);
        let e = DecodeError { what, offset: 0 };
        assert_eq!(decoded(kind, &body, ""), Err(ReplyError::Malformed(e)), "{kind:?}");
    }
    // A child name claiming more than the body holds.
    let body = cat(&[&[0, 0, 0, 1], &huge, &STAT_BYTES]);
    let e = DecodeError {
        what: "length past the end",
        offset: 4,
    };
    assert_eq!(decoded(ReplyKind::Children, &body, ""), Err(ReplyError::Malformed(e)));
}

#[test]
fn a_path_that_is_not_utf8_is_malformed() {
    let body = cat(&[&[0, 0, 0, 2], &[b'/', 0xFF]]);
    let e = DecodeError {
        what: "string is not utf-8",
        offset: 0,
    };
    assert_eq!(decoded(ReplyKind::Path, &body, ""), Err(ReplyError::Malformed(e)));
}

#[test]
fn reply_errors_read_as_lowercase_sentences() {
    assert_eq!(
        ReplyError::Code(Code::NO_NODE).to_string(),
        "server answered no node (-101)"
    );
    let malformed = ReplyError::Malformed(DecodeError {
        what: "trailing bytes",
        offset: 3,
    });
    assert_eq!(malformed.to_string(), "malformed reply: trailing bytes at byte 3");
}
