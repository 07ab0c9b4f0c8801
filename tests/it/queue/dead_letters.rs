//! `DeadLetters`: listing, requeueing and purging a dead-letter path.

use std::time::Duration;

use zk_queue::inspect::{decode_item, Layout};
use zk_queue::{CreateMode, DeadLetters, Error};

use crate::support::queues::{consumer, producer};
use crate::support::recorder::Recorder;
use crate::support::{client, frame, server::unique_path};

const WAIT: Duration = Duration::from_secs(30);

#[test]
fn requeue_moves_dead_letters_back_with_their_attempts_reset_and_skips_undecodable_ones() {
    let (path, dead) = (unique_path("dl-requeue"), unique_path("dl-requeue-dead"));
    let client = client();
    let sick = Recorder::new().failing(|item, _| item == "poison");
    let queue = consumer(&client, &path, &sick)
        .lock_path(&unique_path("dl-requeue-locks"))
        .max_attempts(2)
        .dead_letter_path(&dead)
        .build_queue()
        .unwrap();
    producer(&client, &path)
        .build_queue()
        .unwrap()
        .put("poison".into())
        .unwrap();
    let letters = DeadLetters::new(&client, &dead).unwrap();
    sick.wait_until(WAIT, |_| letters.list().map(|l| l.len()).unwrap_or(0) == 1);
    queue.close();
    let (data, _) = client
        .get_data(&format!("{dead}/{}", letters.list().unwrap()[0].name))
        .unwrap();
    assert_eq!(
        decode_item(Layout::Curator, &data).unwrap().attempts,
        2,
        "died on attempt 2"
    );
    // An undecodable dead letter stays where it is.
    client
        .create(
            &format!("{dead}/queue-"),
            b"not a frame",
            CreateMode::PersistentSequential,
        )
        .unwrap();

    let moved = letters.requeue_to(&path).unwrap();
    assert_eq!((moved.requeued, moved.skipped), (1, 1));
    let (names, _) = client.get_children(&path).unwrap();
    assert_eq!(names.len(), 1, "{names:?}");
    let (data, _) = client.get_data(&format!("{path}/{}", names[0])).unwrap();
    assert_eq!(data, frame(&[b"poison"]), "the frame alone: no attempts recorded");
    assert_eq!(letters.list().unwrap().len(), 1, "only the undecodable one is left");

    let healthy = Recorder::new();
    let _again = consumer(&client, &path, &healthy).build_queue().unwrap();
    assert_eq!(healthy.wait_for(1, WAIT), ["poison"]);
}

#[test]
fn purge_deletes_dead_letters_and_leaves_other_children() {
    let dead = unique_path("dl-purge");
    let client = client();
    client.ensure_path(&dead).unwrap();
    for _ in 0..3 {
        client
            .create(
                &format!("{dead}/queue-"),
                &frame(&[b"x"]),
                CreateMode::PersistentSequential,
            )
            .unwrap();
    }
    client
        .create(&format!("{dead}/keep"), b"", CreateMode::Persistent)
        .unwrap();
    let letters = DeadLetters::new(&client, &dead).unwrap();
    assert_eq!(letters.list().unwrap().len(), 3);
    assert_eq!(letters.purge().unwrap(), 3);
    assert_eq!(client.get_children(&dead).unwrap().0, ["keep"]);
    assert_eq!(letters.purge().unwrap(), 0);
}

#[test]
fn a_missing_dead_letter_path_lists_empty_and_bad_paths_are_refused() {
    let client = client();
    let letters = DeadLetters::new(&client, &unique_path("dl-missing")).unwrap();
    assert!(letters.list().unwrap().is_empty());
    assert_eq!(letters.purge().unwrap(), 0);
    assert!(matches!(
        DeadLetters::new(&client, "/a//b"),
        Err(Error::InvalidPath { .. })
    ));
    assert!(matches!(letters.requeue_to("/"), Err(Error::InvalidPath { .. })));
}
