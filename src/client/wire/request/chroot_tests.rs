//! Every path a request carries, under a chroot.

use std::time::Duration;

use super::*;
use crate::client::wire::chroot;

fn encoded(request: Request<'_>, xid: i32, chroot: &str) -> Vec<u8> {
    let mut out = Vec::new();
    request.encode(xid, chroot, &mut out);
    out
}

#[test]
fn a_chroot_prefixes_a_path_byte_for_byte() {
    #[rustfmt::skip]
    let expected = [
        &[0, 0, 0, 18][..],
        &[0, 0, 0, 1], &[0, 0, 0, 9],
        &[0, 0, 0, 6], b"/app/x",
    ]
    .concat();
    assert_eq!(encoded(Request::Sync { path: "/x" }, 1, "/app"), expected);
    let root = encoded(Request::Sync { path: "/" }, 1, "/app");
    assert_eq!(root[12..], [0, 0, 0, 4, b'/', b'a', b'p', b'p']);
}

/// Every path of `make(p)` is `p`: encoding it under `/app` gives the bytes
/// of encoding it with the chroot written into each path.
fn chroot_applies(name: &str, make: impl Fn(&str) -> Vec<u8>, under: impl Fn(&str) -> Vec<u8>) {
    for path in ["/", "/x", "/x/y"] {
        let joined = chroot::join("/app", path);
        assert_eq!(make(path), under(&joined), "{name} {path}");
    }
}

/// A request about one path.
type MakeRequest = fn(&str) -> Request<'_>;

#[test]
fn a_chroot_prefixes_every_path_kind() {
    let acl = [Acl::anyone_all()];
    let mode = CreateMode::PersistentWithTtl {
        ttl: Duration::from_secs(1),
    };
    let simple: [(&str, MakeRequest); 9] = [
        ("exists", |path| Request::Exists { path, watch: true }),
        ("get data", |path| Request::GetData { path, watch: false }),
        ("children", |path| Request::GetChildren { path, watch: true }),
        ("delete", |path| Request::Delete { path, version: 1 }),
        ("set data", |path| Request::SetData {
            path,
            data: b"d",
            version: 1,
        }),
        ("get acl", |path| Request::GetAcl { path }),
        ("sync", |path| Request::Sync { path }),
        ("add watch", |path| Request::AddWatch { path, recursive: true }),
        ("remove watches", |path| Request::RemoveWatches { path, kind: 1 }),
    ];
    for (name, request) in simple {
        chroot_applies(name, |p| encoded(request(p), 3, "/app"), |p| encoded(request(p), 3, ""));
    }
    let create = |path: &str, chroot: &str| {
        let request = Request::Create {
            path,
            data: b"d",
            acl: &acl,
            mode,
        };
        encoded(request, 3, chroot)
    };
    chroot_applies("create", |p| create(p, "/app"), |p| create(p, ""));
    let set_acl = |path: &str, chroot: &str| {
        encoded(
            Request::SetAcl {
                path,
                acl: &acl,
                version: 0,
            },
            3,
            chroot,
        )
    };
    chroot_applies("set acl", |p| set_acl(p, "/app"), |p| set_acl(p, ""));
    let ops = |p: &str| {
        vec![
            Op::create(p, vec![], mode),
            Op::delete(p, Some(1)),
            Op::set_data(p, vec![1], None),
            Op::check(p, 2),
        ]
    };
    let multi = |p: &str, chroot: &str| {
        let ops = ops(p);
        let request = Request::Multi {
            ops: &ops,
            default_acl: &acl,
        };
        encoded(request, 3, chroot)
    };
    chroot_applies("multi", |p| multi(p, "/app"), |p| multi(p, ""));
    let paths = |p: &str| vec![p.to_owned(), p.to_owned()];
    let read = |p: &str, chroot: &str| encoded(Request::MultiRead { paths: &paths(p) }, 3, chroot);
    chroot_applies("multi read", |p| read(p, "/app"), |p| read(p, ""));
    let watches = |p: &str, chroot: &str| {
        let list = paths(p);
        let request = Request::SetWatches {
            relative_zxid: 1,
            data: &list,
            exist: &list,
            child: &list,
            persistent: &list,
            recursive: &list,
        };
        encoded(request, 3, chroot)
    };
    chroot_applies("set watches", |p| watches(p, "/app"), |p| watches(p, ""));
}
