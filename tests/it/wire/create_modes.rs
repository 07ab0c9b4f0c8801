//! Each create mode on the wire: the node the server made (name, data,
//! owner), the stat the create returned, and what the server does with the
//! node afterwards.

use std::error::Error as _;
use std::time::Duration;

use zk_queue::testing::TestingServer;
use zk_queue::{client::CreateMode, Error};

use super::{assert_read_back, sequence_of, WAIT};
use crate::support::server::unique_path;
use crate::support::{client, client_of, eventually};

#[test]
fn each_create_mode_makes_the_node_it_names_and_returns_the_stat_the_server_keeps() {
    let (writer, reader) = (client(), client());
    let dir = unique_path("create-modes");
    writer.ensure_path(&dir).unwrap();
    let session = writer.session_id().unwrap();
    let mut sequences = Vec::new();
    for (mode, name, owner) in [
        (CreateMode::Persistent, "persistent", 0),
        (CreateMode::PersistentSequential, "persistent-seq-", 0),
        (CreateMode::Ephemeral, "ephemeral", session),
        (CreateMode::EphemeralSequential, "ephemeral-seq-", session),
        // A server keeps the node's kind in its owner field, and shows
        // clients 0 for a container: only its reaping tells (below).
        (CreateMode::Container, "container", 0),
    ] {
        let asked = format!("{dir}/{name}");
        let data = format!("data of {name}").into_bytes();
        let (path, stat) = writer.create(&asked, &data, mode).unwrap();
        if mode.is_sequential() {
            sequences.push(sequence_of(&path, &asked));
        } else {
            assert_eq!(path, asked, "{mode:?}");
        }
        assert_eq!(stat.ephemeral_owner, owner, "the owner of a {mode:?} node");
        assert_eq!((stat.version, stat.num_children), (0, 0), "{mode:?}");
        assert_read_back(&reader, &path, &data, &stat);
    }
    // A sequence is the parent's `cversion` at the create: the children
    // created under it before, one, then three.
    assert_eq!(sequences, [1, 3]);
    let (mut names, stat) = reader.get_children(&dir).unwrap();
    names.sort();
    assert_eq!(stat.num_children, 5);
    assert_eq!(
        names,
        [
            "container",
            "ephemeral",
            "ephemeral-seq-0000000003",
            "persistent",
            "persistent-seq-0000000001"
        ]
    );
}

#[test]
fn ephemeral_nodes_go_with_their_session_and_others_stay() {
    let (writer, reader) = (client(), client());
    let dir = unique_path("ephemerals");
    writer.ensure_path(&dir).unwrap();
    let (ephemeral, _) = writer
        .create(&format!("{dir}/ephemeral"), b"", CreateMode::Ephemeral)
        .unwrap();
    let (sequential, _) = writer
        .create(&format!("{dir}/ephemeral-"), b"", CreateMode::EphemeralSequential)
        .unwrap();
    let (persistent, _) = writer
        .create(&format!("{dir}/persistent"), b"", CreateMode::Persistent)
        .unwrap();
    assert!(reader.exists(&ephemeral).unwrap().is_some());
    assert!(reader.exists(&sequential).unwrap().is_some());
    // An ephemeral node cannot have children.
    assert!(
        matches!(
            writer.create(&format!("{ephemeral}/child"), b"", CreateMode::Persistent),
            Err(Error::ZooKeeper { .. })
        ),
        "a child of an ephemeral node was created"
    );
    writer.close();
    assert_eq!(reader.get_children(&dir).unwrap().0, ["persistent"]);
    assert!(reader.exists(&persistent).unwrap().is_some());
}

#[test]
fn a_container_is_reaped_once_its_last_child_goes_and_not_while_it_has_one() {
    let server = TestingServer::builder()
        .container_check_interval(Duration::from_millis(100))
        .start()
        .unwrap();
    let (writer, reader) = (client_of(&server.connect_string()), client_of(&server.connect_string()));
    let dir = unique_path("containers");
    writer.ensure_path(&dir).unwrap();
    let container = |name: &str| {
        let (path, stat) = writer
            .create(&format!("{dir}/{name}"), b"", CreateMode::Container)
            .unwrap();
        assert_eq!(stat.ephemeral_owner, 0);
        path
    };
    // Never had a child: the server leaves it alone.
    let never = container("never");
    let kept = container("kept");
    writer
        .create(&format!("{kept}/child"), b"", CreateMode::Persistent)
        .unwrap();
    let emptied = container("emptied");
    writer
        .create(&format!("{emptied}/child"), b"", CreateMode::Persistent)
        .unwrap();
    writer.delete(&format!("{emptied}/child"), None).unwrap();

    eventually(WAIT, "the emptied container is reaped", || {
        reader.exists(&emptied).unwrap().is_none()
    });
    // The pass that reaped it saw the other two.
    assert!(
        reader.exists(&kept).unwrap().is_some(),
        "a container with a child was reaped"
    );
    assert!(
        reader.exists(&never).unwrap().is_some(),
        "a container that never had a child was reaped"
    );
    writer.delete(&format!("{kept}/child"), None).unwrap();
    eventually(WAIT, "the container is reaped after its last child goes", || {
        reader.exists(&kept).unwrap().is_none()
    });
}

#[test]
fn ttl_nodes_carry_their_ttl_and_are_reaped_once_it_passed_unless_they_have_children() {
    let server = TestingServer::builder()
        .extended_types(true)
        .container_check_interval(Duration::from_millis(100))
        .start()
        .unwrap();
    let (writer, reader) = (client_of(&server.connect_string()), client_of(&server.connect_string()));
    let dir = unique_path("ttl");
    writer.ensure_path(&dir).unwrap();
    let ttl = Duration::from_millis(500);

    // Childless, with a TTL no test outlives.
    let (long, _) = writer
        .create(
            &format!("{dir}/long"),
            b"",
            CreateMode::PersistentWithTtl {
                ttl: Duration::from_secs(3600),
            },
        )
        .unwrap();
    let (kept, stat) = writer
        .create(&format!("{dir}/kept"), b"kept", CreateMode::PersistentWithTtl { ttl })
        .unwrap();
    assert_eq!(kept, format!("{dir}/kept"));
    // As for a container, the server shows clients no owner.
    assert_eq!(stat.ephemeral_owner, 0);
    assert_read_back(&reader, &kept, b"kept", &stat);
    writer
        .create(&format!("{kept}/child"), b"", CreateMode::Persistent)
        .unwrap();

    // Created after `kept`: whenever its TTL has passed, `kept`'s has too.
    let prefix = format!("{dir}/bare-");
    let (bare, stat) = writer
        .create(&prefix, b"bare", CreateMode::PersistentSequentialWithTtl { ttl })
        .unwrap();
    sequence_of(&bare, &prefix);
    assert_read_back(&reader, &bare, b"bare", &stat);

    eventually(WAIT, "the childless TTL node is reaped", || {
        reader.exists(&bare).unwrap().is_none()
    });
    // The pass that reaped it saw the other two: the server has each
    // node's own TTL.
    assert!(
        reader.exists(&kept).unwrap().is_some(),
        "a TTL node with a child was reaped"
    );
    assert!(
        reader.exists(&long).unwrap().is_some(),
        "a TTL node was reaped before its TTL passed"
    );
    writer.delete(&format!("{kept}/child"), None).unwrap();
    eventually(WAIT, "the TTL node is reaped after its last child goes", || {
        reader.exists(&kept).unwrap().is_none()
    });
}

#[test]
fn a_ttl_create_on_a_server_without_extended_types_is_refused_and_the_session_goes_on() {
    let (writer, reader) = (client(), client());
    let dir = unique_path("ttl-refused");
    writer.ensure_path(&dir).unwrap();
    let session = writer.session_id().unwrap();
    let ttl = Duration::from_secs(60);
    for mode in [
        CreateMode::PersistentWithTtl { ttl },
        CreateMode::PersistentSequentialWithTtl { ttl },
    ] {
        match writer.create(&format!("{dir}/ttl-"), b"", mode) {
            Err(e @ Error::ZooKeeper { .. }) => {
                let cause = e.source().map(ToString::to_string).unwrap_or_default();
                assert!(cause.contains("unimplemented"), "{mode:?}: {e}: {cause}")
            }
            other => panic!("{mode:?}: {other:?}"),
        }
    }
    assert!(reader.get_children(&dir).unwrap().0.is_empty());
    let (path, _) = writer
        .create(&format!("{dir}/after"), b"", CreateMode::Persistent)
        .unwrap();
    assert!(reader.exists(&path).unwrap().is_some());
    assert_eq!(writer.session_id().unwrap(), session);
}
