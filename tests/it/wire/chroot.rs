//! A connect string with a chroot (`host:port/app/x`): the client's paths
//! are under the chroot on the server, and every path the server sends back
//! (created names, children, watch events) is relative to it again.

use zk_queue::testing::{FaultProxy, TestingServer};
use zk_queue::{
    client::{CreateMode, Op, OpResult},
    ZkClient,
};

use super::{sequence_of, state_changes, wait_for_reattach, WAIT};
use crate::support::server::{shared_connect_string, unique_path};
use crate::support::{client, client_of};

/// A chroot `<unique>/app/x`, made by `direct`.
fn make_chroot(direct: &ZkClient, name: &str) -> String {
    let chroot = format!("{}/app/x", unique_path(name));
    direct.ensure_path(&chroot).unwrap();
    chroot
}

#[test]
fn a_chrooted_client_sends_and_reads_back_paths_relative_to_its_chroot() {
    let direct = client();
    let chroot = make_chroot(&direct, "chroot");
    let rooted = client_of(&format!("{}{chroot}", shared_connect_string()));

    let (path, stat) = rooted.create("/a", b"a", CreateMode::Persistent).unwrap();
    assert_eq!(path, "/a");
    let (data, read) = direct.get_data(&format!("{chroot}/a")).unwrap();
    assert_eq!((data.as_slice(), read), (&b"a"[..], stat));
    assert!(direct.exists("/a").unwrap().is_none(), "created outside the chroot");

    let (sequential, _) = rooted.create("/a/s-", b"", CreateMode::PersistentSequential).unwrap();
    sequence_of(&sequential, "/a/s-");
    assert!(direct.exists(&format!("{chroot}{sequential}")).unwrap().is_some());

    let results = rooted
        .multi(&[
            Op::create("/a/m-", Vec::new(), CreateMode::PersistentSequential),
            Op::set_data("/a", b"b".to_vec(), Some(0)),
        ])
        .unwrap();
    let OpResult::Create { path: from_multi } = &results[0] else {
        panic!("{results:?}")
    };
    sequence_of(from_multi, "/a/m-");
    assert!(direct.exists(&format!("{chroot}{from_multi}")).unwrap().is_some());
    assert_eq!(direct.get_data(&format!("{chroot}/a")).unwrap().0, b"b");

    let batch = rooted
        .create_many(&[("/a/n-".to_string(), Vec::new())], CreateMode::PersistentSequential)
        .unwrap();
    let from_batch = batch[0].as_ref().unwrap();
    sequence_of(from_batch, "/a/n-");
    assert!(direct.exists(&format!("{chroot}{from_batch}")).unwrap().is_some());

    // What another client writes under the chroot, the rooted one reads
    // relative to it; the chroot is its root.
    direct
        .create(&format!("{chroot}/b"), b"from outside", CreateMode::Persistent)
        .unwrap();
    assert_eq!(rooted.get_data("/b").unwrap().0, b"from outside");
    let (mut root, root_stat) = rooted.get_children("/").unwrap();
    root.sort();
    assert_eq!(root, ["a", "b"]);
    assert_eq!(Some(root_stat), direct.exists(&chroot).unwrap());
    let (mut children, _) = rooted.get_children("/a").unwrap();
    children.sort();
    let mut expected: Vec<String> = [&sequential, from_multi, from_batch]
        .iter()
        .map(|p| p.strip_prefix("/a/").unwrap().to_owned())
        .collect();
    expected.sort();
    assert_eq!(children, expected);

    rooted.delete("/b", None).unwrap();
    assert!(direct.exists(&format!("{chroot}/b")).unwrap().is_none());
}

#[test]
fn a_child_watch_on_a_chrooted_path_fires() {
    let direct = client();
    let chroot = make_chroot(&direct, "chroot-watch");
    let rooted = client_of(&format!("{}{chroot}", shared_connect_string()));
    rooted.create("/a", b"", CreateMode::Persistent).unwrap();
    let (names, _, watch) = rooted.get_children_watch("/a").unwrap();
    assert!(names.is_empty());
    direct
        .create(&format!("{chroot}/a/child"), b"", CreateMode::Persistent)
        .unwrap();
    assert!(watch.wait_timeout(WAIT), "the watch did not fire");
    assert_eq!(rooted.get_children("/a").unwrap().0, ["child"]);
}

#[test]
fn a_chrooted_child_watch_set_again_after_a_reattach_fires_for_a_child_created_while_away() {
    let server = TestingServer::start().unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).unwrap();
    let direct = client_of(&server.connect_string());
    let chroot = make_chroot(&direct, "chroot-reattach");
    let rooted = client_of(&format!("{}{chroot}", proxy.connect_string()));
    rooted.create("/a", b"", CreateMode::Persistent).unwrap();
    let session = rooted.session_id().unwrap();
    let states = state_changes(&rooted);
    let (_, _, watch) = rooted.get_children_watch("/a").unwrap();

    // The event of this create is lost with the connection.
    proxy.blackhole();
    direct
        .create(&format!("{chroot}/a/child"), b"", CreateMode::Persistent)
        .unwrap();
    proxy.heal();
    wait_for_reattach(&states);
    assert_eq!(rooted.session_id().unwrap(), session);
    assert!(
        watch.wait_timeout(WAIT),
        "the watch, set again under the chroot, did not fire"
    );
}
