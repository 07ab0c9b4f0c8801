//! The other requests on the wire: reads, versioned writes, ACLs, children,
//! multi transactions, the pipelined batches and the session's close, each
//! checked through a second client.

use std::time::{Duration, Instant};

use zk_queue::{
    client::{Acl, CreateMode, Op, OpResult, Perms},
    Error, ZkClient,
};

use super::{assert_read_back, sequence_of};
use crate::support::server::{shared_connect_string, unique_path};
use crate::support::{client, client_of};

#[test]
fn delete_removes_a_node_only_at_the_version_given() {
    let (writer, reader) = (client(), client());
    let dir = unique_path("delete");
    writer.ensure_path(&dir).unwrap();
    let versioned = format!("{dir}/versioned");
    writer.create(&versioned, b"", CreateMode::Persistent).unwrap();
    writer.set_data(&versioned, b"changed", None).unwrap();

    assert!(matches!(
        writer.delete(&versioned, Some(0)),
        Err(Error::BadVersion { path }) if path == versioned
    ));
    assert_eq!(reader.exists(&versioned).unwrap().map(|s| s.version), Some(1));
    writer.delete(&versioned, Some(1)).unwrap();
    assert!(reader.exists(&versioned).unwrap().is_none());

    let any = format!("{dir}/any");
    writer.create(&any, b"", CreateMode::Persistent).unwrap();
    writer.set_data(&any, b"changed", None).unwrap();
    writer.delete(&any, None).unwrap();
    assert!(reader.exists(&any).unwrap().is_none());
    assert!(matches!(writer.delete(&any, None), Err(Error::NoNode { path }) if path == any));
}

#[test]
fn exists_and_get_data_report_a_node_as_another_client_wrote_it() {
    let (writer, reader) = (client(), client());
    let dir = unique_path("reads");
    writer.ensure_path(&dir).unwrap();
    let missing = format!("{dir}/missing");
    assert_eq!(reader.exists(&missing).unwrap(), None);
    assert!(matches!(reader.get_data(&missing), Err(Error::NoNode { path }) if path == missing));

    // Larger than any single read of the socket, every byte value.
    let large: Vec<u8> = (0..600_000u32).map(|i| (i % 251) as u8).collect();
    let (path, stat) = writer
        .create(&format!("{dir}/large"), &large, CreateMode::Persistent)
        .unwrap();
    assert_eq!(stat.data_length as usize, large.len());
    assert_read_back(&reader, &path, &large, &stat);

    let (empty, stat) = writer
        .create(&format!("{dir}/empty"), b"", CreateMode::Persistent)
        .unwrap();
    assert_read_back(&reader, &empty, b"", &stat);

    let parent = reader.exists(&dir).unwrap().expect("the parent");
    assert_eq!(parent.num_children, 2);
    assert_eq!(
        parent.pzxid, stat.czxid,
        "the parent's last child change is the last create"
    );
}

#[test]
fn set_data_replaces_the_data_only_at_the_version_given() {
    let (writer, reader) = (client(), client());
    let path = unique_path("set-data");
    let (_, created) = writer.create(&path, b"first", CreateMode::Persistent).unwrap();

    let stat = writer.set_data(&path, b"second", Some(0)).unwrap();
    assert_eq!(stat.version, 1);
    assert_eq!(stat.czxid, created.czxid);
    assert!(stat.mzxid > created.mzxid);
    assert_read_back(&reader, &path, b"second", &stat);

    assert!(matches!(
        writer.set_data(&path, b"stale", Some(0)),
        Err(Error::BadVersion { path: p }) if p == path
    ));
    assert_read_back(&reader, &path, b"second", &stat);

    let stat = writer.set_data(&path, b"", None).unwrap();
    assert_eq!(stat.version, 2);
    assert_read_back(&reader, &path, b"", &stat);
    assert!(matches!(
        writer.set_data(&format!("{path}/missing"), b"", None),
        Err(Error::NoNode { .. })
    ));
}

#[test]
fn set_acl_changes_who_may_do_what_and_get_acl_reads_it_back() {
    let connect = shared_connect_string();
    let owner = ZkClient::builder(&connect)
        .add_auth("digest", b"alice:secret")
        .connect()
        .unwrap();
    let stranger = client();
    let path = unique_path("acl");
    owner.create(&path, b"", CreateMode::Persistent).unwrap();
    let (acl, stat) = stranger.get_acl(&path).unwrap();
    assert_eq!(acl, [Acl::anyone_all()]);
    assert_eq!(stat.aversion, 0);

    let restricted = [
        Acl::digest("alice", "secret", Perms::ALL),
        Acl::new(Perms::READ, "world", "anyone"),
    ];
    assert!(matches!(
        owner.set_acl(&path, &restricted, Some(3)),
        Err(Error::BadVersion { .. })
    ));
    assert_eq!(stranger.get_acl(&path).unwrap().0, [Acl::anyone_all()]);
    let stat = owner.set_acl(&path, &restricted, Some(0)).unwrap();
    assert_eq!((stat.aversion, stat.version), (1, 0));

    let (acl, read) = owner.get_acl(&path).unwrap();
    assert_eq!(acl, restricted, "the digest entry is stored as sent, hashed");
    assert_eq!(read, stat);
    // A client without ADMIN on the node is shown no digest hash.
    let (acl, read) = stranger.get_acl(&path).unwrap();
    assert_eq!(
        acl,
        [
            Acl::new(Perms::ALL, "digest", "alice:x"),
            Acl::new(Perms::READ, "world", "anyone")
        ]
    );
    assert_eq!(read, stat);
    // The server applies it: a stranger may read, not write; alice may.
    assert_eq!(stranger.get_data(&path).unwrap().0, b"");
    assert!(matches!(
        stranger.set_data(&path, b"x", None),
        Err(Error::NotAuthorized { .. })
    ));
    assert!(matches!(
        stranger.set_acl(&path, &[Acl::anyone_all()], None),
        Err(Error::NotAuthorized { .. })
    ));
    assert_eq!(owner.set_data(&path, b"mine", None).unwrap().version, 1);
    assert_eq!(stranger.get_data(&path).unwrap().0, b"mine");
    assert!(matches!(
        owner.get_acl(&format!("{path}/missing")),
        Err(Error::NoNode { .. })
    ));
}

#[test]
fn get_children_lists_every_child_with_the_parents_stat() {
    let (writer, reader) = (client(), client());
    let dir = unique_path("children");
    writer.ensure_path(&dir).unwrap();
    let (names, stat) = reader.get_children(&dir).unwrap();
    assert!(names.is_empty());
    assert_eq!(stat.num_children, 0);

    let nodes: Vec<(String, Vec<u8>)> = (0..300).map(|i| (format!("{dir}/child-{i:03}"), Vec::new())).collect();
    let created = writer.create_many(&nodes, CreateMode::Persistent).unwrap();
    assert!(created.iter().all(Result::is_ok), "{created:?}");
    let (mut names, stat) = reader.get_children(&dir).unwrap();
    names.sort();
    let expected: Vec<String> = (0..300).map(|i| format!("child-{i:03}")).collect();
    assert_eq!(names, expected);
    assert_eq!((stat.num_children, stat.cversion), (300, 300));
    assert_eq!(Some(stat), reader.exists(&dir).unwrap());
    assert!(matches!(
        reader.get_children(&format!("{dir}/missing")),
        Err(Error::NoNode { .. })
    ));
}

#[test]
fn multi_applies_create_delete_set_data_and_check_together() {
    let (writer, reader) = (client(), client());
    let dir = unique_path("multi-ops");
    writer.ensure_path(&dir).unwrap();
    let (a, b) = (format!("{dir}/a"), format!("{dir}/b"));
    writer.create(&a, b"old", CreateMode::Persistent).unwrap();
    writer.create(&b, b"", CreateMode::Persistent).unwrap();

    let results = writer
        .multi(&[
            Op::check(&a, 0),
            Op::set_data(&a, b"new".to_vec(), Some(0)),
            Op::delete(&b, Some(0)),
            Op::create(format!("{dir}/c"), b"c".to_vec(), CreateMode::Persistent),
            Op::create(format!("{dir}/s-"), b"s".to_vec(), CreateMode::PersistentSequential),
            Op::create_with_acl(
                format!("{dir}/read-only"),
                Vec::new(),
                CreateMode::Persistent,
                vec![Acl::new(Perms::READ, "world", "anyone")],
            ),
        ])
        .unwrap();
    assert_eq!(results.len(), 6);
    assert_eq!(results[..1], [OpResult::Check]);
    let OpResult::SetData { stat } = &results[1] else {
        panic!("{results:?}")
    };
    assert_eq!(stat.version, 1);
    assert_read_back(&reader, &a, b"new", stat);
    assert_eq!(results[2], OpResult::Delete);
    assert!(reader.exists(&b).unwrap().is_none());
    assert_eq!(
        results[3],
        OpResult::Create {
            path: format!("{dir}/c")
        }
    );
    assert_eq!(reader.get_data(&format!("{dir}/c")).unwrap().0, b"c");
    let OpResult::Create { path: sequential } = &results[4] else {
        panic!("{results:?}")
    };
    sequence_of(sequential, &format!("{dir}/s-"));
    assert_eq!(reader.get_data(sequential).unwrap().0, b"s");
    assert_eq!(
        reader.get_acl(&format!("{dir}/read-only")).unwrap().0,
        [Acl::new(Perms::READ, "world", "anyone")]
    );
    // One transaction: every change has the same zxid.
    let c = reader.exists(&format!("{dir}/c")).unwrap().unwrap();
    assert_eq!(c.czxid, stat.mzxid);
}

#[test]
fn a_multi_with_a_failing_operation_applies_nothing_and_names_that_operation() {
    let (writer, reader) = (client(), client());
    let dir = unique_path("multi-fails");
    writer.ensure_path(&dir).unwrap();
    let (a, b) = (format!("{dir}/a"), format!("{dir}/b"));
    writer.create(&a, b"old", CreateMode::Persistent).unwrap();
    writer.create(&b, b"", CreateMode::Persistent).unwrap();
    let before = reader.exists(&dir).unwrap().unwrap();

    let new = format!("{dir}/new");
    match writer.multi(&[
        Op::create(&new, Vec::new(), CreateMode::Persistent),
        Op::set_data(&a, b"new".to_vec(), None),
        Op::delete(&b, None),
        Op::check(&a, 7),
    ]) {
        Err(Error::MultiFailed { index: 3, source }) => {
            assert!(
                matches!(*source, Error::BadVersion { ref path } if *path == a),
                "{source:?}"
            )
        }
        other => panic!("{other:?}"),
    }
    match writer.multi(&[
        Op::create(&new, Vec::new(), CreateMode::Persistent),
        Op::create(&new, Vec::new(), CreateMode::Persistent),
    ]) {
        Err(Error::MultiFailed { index: 1, source }) => {
            assert!(
                matches!(*source, Error::NodeExists { ref path } if *path == new),
                "{source:?}"
            )
        }
        other => panic!("{other:?}"),
    }
    match writer.multi(&[Op::delete(format!("{dir}/missing"), None), Op::delete(&b, None)]) {
        Err(Error::MultiFailed { index: 0, source }) => {
            assert!(matches!(*source, Error::NoNode { .. }), "{source:?}")
        }
        other => panic!("{other:?}"),
    }

    assert!(reader.exists(&new).unwrap().is_none());
    assert_eq!(reader.get_data(&a).unwrap().0, b"old");
    assert!(reader.exists(&b).unwrap().is_some());
    assert_eq!(reader.exists(&dir).unwrap().unwrap(), before, "the parent is unchanged");
}

#[test]
fn each_entry_of_a_batch_gets_the_result_the_server_gave_it() {
    let (writer, reader) = (client(), client());
    let dir = unique_path("batches");
    writer.ensure_path(&dir).unwrap();
    let (a, b) = (format!("{dir}/a"), format!("{dir}/b"));
    let nodes = vec![
        (a.clone(), b"a".to_vec()),
        (format!("{dir}/missing/child"), Vec::new()),
        (b.clone(), b"b".to_vec()),
        (a.clone(), b"again".to_vec()),
    ];
    let created = writer.create_many(&nodes, CreateMode::Persistent).unwrap();
    assert_eq!(created[0].as_ref().unwrap(), &a);
    assert!(matches!(created[1], Err(Error::NoNode { .. })), "{:?}", created[1]);
    assert_eq!(created[2].as_ref().unwrap(), &b);
    assert!(matches!(created[3], Err(Error::NodeExists { .. })), "{:?}", created[3]);

    let paths = vec![a.clone(), format!("{dir}/missing"), b.clone()];
    let stats = reader.exists_many(&paths).unwrap();
    assert_eq!(stats[0].as_ref().unwrap(), &reader.exists(&a).unwrap());
    assert_eq!(stats[1].as_ref().unwrap(), &None);
    assert_eq!(stats[2].as_ref().unwrap(), &reader.exists(&b).unwrap());
    let reads = reader.get_data_many(&paths).unwrap();
    assert_eq!(reads[0].as_ref().unwrap().0, b"a");
    assert!(matches!(reads[1], Err(Error::NoNode { .. })));
    assert_eq!(reads[2].as_ref().unwrap().0, b"b");

    // Transactions of one batch stand alone: the failing one leaves the
    // others applied.
    let results = writer
        .multi_many(&[
            vec![Op::check(&a, 0), Op::set_data(&a, b"a2".to_vec(), Some(0))],
            vec![Op::set_data(&b, b"b2".to_vec(), None), Op::check(&b, 5)],
            vec![Op::create(format!("{dir}/c"), Vec::new(), CreateMode::Persistent)],
        ])
        .unwrap();
    assert!(results[0].is_ok(), "{:?}", results[0]);
    assert!(
        matches!(&results[1], Err(Error::MultiFailed { index: 1, .. })),
        "{:?}",
        results[1]
    );
    assert!(results[2].is_ok(), "{:?}", results[2]);
    assert_eq!(reader.get_data(&a).unwrap().0, b"a2");
    assert_eq!(reader.get_data(&b).unwrap().0, b"b");
    assert!(reader.exists(&format!("{dir}/c")).unwrap().is_some());

    let deleted = writer
        .delete_many(&[
            (a.clone(), Some(0)),
            (b.clone(), Some(0)),
            (format!("{dir}/missing"), None),
            (a.clone(), None),
        ])
        .unwrap();
    assert!(matches!(deleted[0], Err(Error::BadVersion { .. })), "{:?}", deleted[0]);
    assert!(deleted[1].is_ok(), "{:?}", deleted[1]);
    assert!(matches!(deleted[2], Err(Error::NoNode { .. })), "{:?}", deleted[2]);
    assert!(deleted[3].is_ok(), "{:?}", deleted[3]);
    assert_eq!(reader.get_children(&dir).unwrap().0, ["c"]);
}

#[test]
fn a_batch_of_ephemeral_sequential_creates_makes_nodes_of_the_writers_session() {
    let (writer, reader) = (client(), client());
    let dir = unique_path("batch-ephemerals");
    writer.ensure_path(&dir).unwrap();
    let nodes: Vec<(String, Vec<u8>)> = (0..20u8).map(|i| (format!("{dir}/e-"), vec![i])).collect();
    let created: Vec<String> = writer
        .create_many(&nodes, CreateMode::EphemeralSequential)
        .unwrap()
        .into_iter()
        .map(Result::unwrap)
        .collect();
    let sequences: Vec<u32> = created.iter().map(|p| sequence_of(p, &format!("{dir}/e-"))).collect();
    assert_eq!(sequences, (0..20).collect::<Vec<u32>>(), "created in request order");
    let session = writer.session_id().unwrap();
    for (i, read) in reader.get_data_many(&created).unwrap().into_iter().enumerate() {
        let (data, stat) = read.unwrap();
        assert_eq!(data, [i as u8]);
        assert_eq!(stat.ephemeral_owner, session);
    }
}

#[test]
fn closing_a_client_ends_its_session_and_its_ephemerals_before_close_returns() {
    // A session that would outlive the test if the close were not sent.
    let writer = ZkClient::builder(&shared_connect_string())
        .session_timeout(Duration::from_secs(60))
        .connect()
        .unwrap();
    let reader = client_of(&shared_connect_string());
    let dir = unique_path("close");
    writer.ensure_path(&dir).unwrap();
    writer
        .create(&format!("{dir}/ephemeral"), b"", CreateMode::Ephemeral)
        .unwrap();
    writer
        .create(&format!("{dir}/sequential-"), b"", CreateMode::EphemeralSequential)
        .unwrap();
    assert_eq!(reader.get_children(&dir).unwrap().0.len(), 2);

    let closing = Instant::now();
    writer.close();
    assert!(closing.elapsed() < Duration::from_secs(5), "{:?}", closing.elapsed());
    // No waiting: the server removed them when it closed the session.
    assert_eq!(reader.get_children(&dir).unwrap().0, Vec::<String>::new());
    assert!(matches!(writer.exists(&dir), Err(Error::Closed)));
}
