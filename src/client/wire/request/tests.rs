//! Requests against byte strings written out by hand from `zookeeper.jute`.

use std::time::Duration;

use super::*;
use crate::client::Perms;

fn encoded(request: Request<'_>, xid: i32, chroot: &str) -> Vec<u8> {
    let mut out = Vec::new();
    request.encode(xid, chroot, &mut out);
    out
}

fn open() -> [Acl; 1] {
    [Acl::anyone_all()]
}

#[test]
fn a_create_is_sent_as_create2_with_its_acl() {
    let acl = open();
    let request = Request::Create {
        path: "/a",
        data: b"xy",
        acl: &acl,
        mode: CreateMode::PersistentSequential,
    };
    #[rustfmt::skip]
    let expected = [
        &[0, 0, 0, 51][..], // frame length
        &[0, 0, 0, 7], // xid
        &[0, 0, 0, 15], // type: create2
        &[0, 0, 0, 2], b"/a", // path
        &[0, 0, 0, 2], b"xy", // data
        &[0, 0, 0, 1], // acl: one entry
        &[0, 0, 0, 31], &[0, 0, 0, 5], b"world", &[0, 0, 0, 6], b"anyone",
        &[0, 0, 0, 2], // flags: persistent sequential
    ]
    .concat();
    assert_eq!(encoded(request, 7, ""), expected);
    assert_eq!(request.reply_kind(), ReplyKind::Created);
}

#[test]
fn each_create_mode_has_its_flags_and_op_code() {
    let acl = open();
    let ttl = Duration::from_millis(1500);
    for (mode, op, flags) in [
        (CreateMode::Persistent, 15, 0),
        (CreateMode::Ephemeral, 15, 1),
        (CreateMode::PersistentSequential, 15, 2),
        (CreateMode::EphemeralSequential, 15, 3),
        (CreateMode::Container, 19, 4),
        (CreateMode::PersistentWithTtl { ttl }, 21, 5),
        (CreateMode::PersistentSequentialWithTtl { ttl }, 21, 6),
    ] {
        let request = Request::Create {
            path: "/a",
            data: b"",
            acl: &acl,
            mode,
        };
        assert_eq!(request.op_code(), op, "{mode:?}");
        let bytes = encoded(request, 1, "");
        assert_eq!(bytes[8..12], [0, 0, 0, op as u8], "{mode:?}");
        // length, header, path, data, acl
        let flags_at = 4 + 8 + 6 + 4 + 27;
        assert_eq!(bytes[flags_at..flags_at + 4], [0, 0, 0, flags], "{mode:?}");
        let ttl_bytes = &bytes[flags_at + 4..];
        if op == 21 {
            assert_eq!(ttl_bytes, [0, 0, 0, 0, 0, 0, 0x05, 0xDC], "{mode:?}");
        } else {
            assert!(ttl_bytes.is_empty(), "{mode:?}");
        }
    }
}

#[test]
fn a_get_children_with_a_watch_is_sent_as_get_children2() {
    let request = Request::GetChildren {
        path: "/q",
        watch: true,
    };
    #[rustfmt::skip]
    let expected = [
        0, 0, 0, 15,
        0, 0, 0, 3, // xid
        0, 0, 0, 12, // type: getChildren2
        0, 0, 0, 2, b'/', b'q',
        1, // watch
    ];
    assert_eq!(encoded(request, 3, ""), expected);
    assert_eq!(request.reply_kind(), ReplyKind::Children);
}

#[test]
fn a_delete_carries_its_version() {
    #[rustfmt::skip]
    let expected = [
        0, 0, 0, 18,
        0, 0, 0, 9,
        0, 0, 0, 2, // type: delete
        0, 0, 0, 2, b'/', b'd',
        0, 0, 0, 5, // version
    ];
    let request = Request::Delete { path: "/d", version: 5 };
    assert_eq!(encoded(request, 9, ""), expected);
    assert_eq!(request.reply_kind(), ReplyKind::Empty);
}

#[test]
fn a_ping_is_a_bare_header_with_its_own_xid() {
    let expected = [0, 0, 0, 8, 0xFF, 0xFF, 0xFF, 0xFE, 0, 0, 0, 11];
    assert_eq!(encoded(Request::Ping, 42, "/app"), expected);
}

#[test]
fn a_close_is_a_bare_header() {
    let expected = [0, 0, 0, 8, 0, 0, 0, 5, 0xFF, 0xFF, 0xFF, 0xF5];
    assert_eq!(encoded(Request::CloseSession, 5, ""), expected);
}

#[test]
fn an_auth_packet_has_its_own_xid() {
    let request = Request::SetAuth {
        scheme: "digest",
        auth: b"u:p",
    };
    #[rustfmt::skip]
    let expected = [
        &[0, 0, 0, 29][..],
        &[0xFF, 0xFF, 0xFF, 0xFC], // xid: -4
        &[0, 0, 0, 100], // type: auth
        &[0, 0, 0, 0], // AuthPacket.type
        &[0, 0, 0, 6], b"digest",
        &[0, 0, 0, 3], b"u:p",
    ]
    .concat();
    assert_eq!(encoded(request, 1, "/app"), expected);
}

#[test]
fn a_multi_frames_each_op_and_ends_with_a_done_header() {
    let ops = [
        Op::create("/m/a", b"d".to_vec(), CreateMode::PersistentSequential),
        Op::delete("/m/b", None),
        Op::check("/m", 3),
    ];
    let acl = open();
    let request = Request::Multi {
        ops: &ops,
        default_acl: &acl,
    };
    #[rustfmt::skip]
    let expected = [
        &[0, 0, 0, 110][..],
        &[0, 0, 0, 1], // xid
        &[0, 0, 0, 14], // type: multi
        &[0, 0, 0, 15], &[0], &[0xFF, 0xFF, 0xFF, 0xFF], // header: create2
        &[0, 0, 0, 4], b"/m/a",
        &[0, 0, 0, 1], b"d",
        &[0, 0, 0, 1], &[0, 0, 0, 31], &[0, 0, 0, 5], b"world", &[0, 0, 0, 6], b"anyone",
        &[0, 0, 0, 2],
        &[0, 0, 0, 2], &[0], &[0xFF, 0xFF, 0xFF, 0xFF], // header: delete
        &[0, 0, 0, 4], b"/m/b",
        &[0xFF, 0xFF, 0xFF, 0xFF], // any version
        &[0, 0, 0, 13], &[0], &[0xFF, 0xFF, 0xFF, 0xFF], // header: check
        &[0, 0, 0, 2], b"/m",
        &[0, 0, 0, 3],
        &[0xFF, 0xFF, 0xFF, 0xFF], &[1], &[0xFF, 0xFF, 0xFF, 0xFF], // done
    ]
    .concat();
    assert_eq!(encoded(request, 1, ""), expected);
    assert_eq!(request.reply_kind(), ReplyKind::Multi);
}

#[test]
fn a_multi_create_uses_its_own_acl_and_set_data_its_version() {
    let mine = [Acl::new(Perms::READ, "ip", "1.2.3.4")];
    let ops = [
        Op::create_with_acl("/a", vec![], CreateMode::Persistent, mine.to_vec()),
        Op::set_data("/a", b"v".to_vec(), Some(4)),
    ];
    let default = open();
    #[rustfmt::skip]
    let expected = [
        &[0, 0, 0, 89][..],
        &[0, 0, 0, 2], &[0, 0, 0, 14],
        &[0, 0, 0, 15], &[0], &[0xFF, 0xFF, 0xFF, 0xFF],
        &[0, 0, 0, 2], b"/a",
        &[0, 0, 0, 0],
        &[0, 0, 0, 1], &[0, 0, 0, 1], &[0, 0, 0, 2], b"ip", &[0, 0, 0, 7], b"1.2.3.4",
        &[0, 0, 0, 0],
        &[0, 0, 0, 5], &[0], &[0xFF, 0xFF, 0xFF, 0xFF], // header: setData
        &[0, 0, 0, 2], b"/a",
        &[0, 0, 0, 1], b"v",
        &[0, 0, 0, 4],
        &[0xFF, 0xFF, 0xFF, 0xFF], &[1], &[0xFF, 0xFF, 0xFF, 0xFF],
    ]
    .concat();
    let request = Request::Multi {
        ops: &ops,
        default_acl: &default,
    };
    assert_eq!(encoded(request, 2, ""), expected);
}

#[test]
fn a_multi_read_is_get_data_ops_without_watches() {
    let paths = ["/a".to_owned()];
    let request = Request::MultiRead { paths: &paths };
    #[rustfmt::skip]
    let expected = [
        &[0, 0, 0, 33][..],
        &[0, 0, 0, 6], &[0, 0, 0, 22], // type: multiRead
        &[0, 0, 0, 4], &[0], &[0xFF, 0xFF, 0xFF, 0xFF], // header: getData
        &[0, 0, 0, 2], b"/a", &[0], // no watch
        &[0xFF, 0xFF, 0xFF, 0xFF], &[1], &[0xFF, 0xFF, 0xFF, 0xFF],
    ]
    .concat();
    assert_eq!(encoded(request, 6, ""), expected);
    assert_eq!(request.reply_kind(), ReplyKind::MultiRead);
}

#[test]
fn set_watches_sends_five_lists_with_its_own_xid() {
    let (d, c, r) = (["/d".to_owned()], ["/c".to_owned()], ["/r".to_owned()]);
    let request = Request::SetWatches {
        relative_zxid: 0x10,
        data: &d,
        exist: &[],
        child: &c,
        persistent: &[],
        recursive: &r,
    };
    #[rustfmt::skip]
    let expected = [
        &[0, 0, 0, 54][..],
        &[0xFF, 0xFF, 0xFF, 0xF8], // xid: -8
        &[0, 0, 0, 105], // type: setWatches2
        &[0, 0, 0, 0, 0, 0, 0, 0x10], // relativeZxid
        &[0, 0, 0, 1], &[0, 0, 0, 2], b"/d", // dataWatches
        &[0, 0, 0, 0], // existWatches
        &[0, 0, 0, 1], &[0, 0, 0, 2], b"/c", // childWatches
        &[0, 0, 0, 0], // persistentWatches
        &[0, 0, 0, 1], &[0, 0, 0, 2], b"/r", // persistentRecursiveWatches
    ]
    .concat();
    assert_eq!(encoded(request, 77, ""), expected);
}

#[test]
fn simple_requests_have_their_op_codes_and_bodies() {
    let acl = open();
    let cases: [(Request<'_>, i32, &[u8], ReplyKind); 8] = [
        (
            Request::Exists {
                path: "/e",
                watch: false,
            },
            3,
            &[0],
            ReplyKind::Stat,
        ),
        (
            Request::GetData {
                path: "/e",
                watch: true,
            },
            4,
            &[1],
            ReplyKind::Data,
        ),
        (
            Request::SetData {
                path: "/e",
                data: b"z",
                version: -1,
            },
            5,
            &[0, 0, 0, 1, b'z', 0xFF, 0xFF, 0xFF, 0xFF],
            ReplyKind::Stat,
        ),
        (Request::GetAcl { path: "/e" }, 6, &[], ReplyKind::Acl),
        (
            Request::SetAcl {
                path: "/e",
                acl: &acl,
                version: 2,
            },
            7,
            &[
                0, 0, 0, 1, 0, 0, 0, 31, 0, 0, 0, 5, b'w', b'o', b'r', b'l', b'd', 0, 0, 0, 6, b'a', b'n', b'y', b'o',
                b'n', b'e', 0, 0, 0, 2,
            ],
            ReplyKind::Stat,
        ),
        (Request::Sync { path: "/e" }, 9, &[], ReplyKind::Path),
        (
            Request::AddWatch {
                path: "/e",
                recursive: true,
            },
            106,
            &[0, 0, 0, 1],
            ReplyKind::Empty,
        ),
        (
            Request::RemoveWatches { path: "/e", kind: 3 },
            18,
            &[0, 0, 0, 3],
            ReplyKind::Empty,
        ),
    ];
    for (request, op, rest, kind) in cases {
        let expected = [
            &((14 + rest.len()) as i32).to_be_bytes()[..],
            &[0, 0, 0, 1],
            &op.to_be_bytes(),
            &[0, 0, 0, 2],
            b"/e",
            rest,
        ]
        .concat();
        assert_eq!(encoded(request, 1, ""), expected, "{request:?}");
        assert_eq!((request.op_code(), request.reply_kind()), (op, kind), "{request:?}");
    }
    let persistent = Request::AddWatch {
        path: "/e",
        recursive: false,
    };
    assert_eq!(encoded(persistent, 1, "")[18..], [0, 0, 0, 0]);
}

#[test]
fn frames_are_appended_after_what_the_buffer_holds() {
    let mut out = vec![1, 2, 3];
    Request::Ping.encode(0, "", &mut out);
    Request::Sync { path: "/" }.encode(4, "", &mut out);
    #[rustfmt::skip]
    let expected = [
        1, 2, 3,
        0, 0, 0, 8, 0xFF, 0xFF, 0xFF, 0xFE, 0, 0, 0, 11,
        0, 0, 0, 13, 0, 0, 0, 4, 0, 0, 0, 9, 0, 0, 0, 1, b'/',
    ];
    assert_eq!(out, expected);
}
