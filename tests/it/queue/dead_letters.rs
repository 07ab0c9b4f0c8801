//! `DeadLetters`: listing, requeueing and purging a dead-letter path.

use std::time::{Duration, SystemTime};

use zk_queue::inspect::{decode_item, Kind, Layout};
use zk_queue::{admin::DeadLetters, client::CreateMode, Error};

use crate::support::java::PeerCommand;
use crate::support::queues::{consumer, producer};
use crate::support::recorder::Recorder;
use crate::support::{client, frame, server::shared_connect_string, server::unique_path};

const WAIT: Duration = Duration::from_secs(30);

#[test]
fn a_dead_letter_records_why_it_died_keeps_its_priority_and_curator_reads_it_as_the_original_item() {
    let (path, dead) = (unique_path("dl-story"), unique_path("dl-story-dead"));
    let client = client();
    let sick = Recorder::new().failing(|item, _| item == "poison");
    let queue = consumer(&client, &path, &sick)
        .lock_path(&unique_path("dl-story-locks"))
        .max_attempts(2)
        .dead_letter_path(&dead)
        .build_priority_queue(0)
        .unwrap();
    let before = SystemTime::now();
    producer(&client, &path)
        .build_priority_queue(0)
        .unwrap()
        .put("poison".into(), 5)
        .unwrap();
    let letters = DeadLetters::new(&client, &dead).unwrap();
    sick.wait_until(WAIT, |_| letters.names().map(|l| l.len()).unwrap_or(0) == 1);
    queue.close();
    let listed = letters.list().unwrap();
    assert_eq!(listed.len(), 1);
    let letter = &listed[0];
    assert_eq!(
        (letter.name.kind, letter.name.priority),
        (Kind::Priority, Some(5)),
        "the dead letter keeps the priority in its name: {}",
        letter.name.name
    );
    assert_eq!((letter.attempts, &letter.records), (2, &vec![b"poison".to_vec()]));
    let death = letter.death.as_ref().expect("the story is recorded");
    assert_eq!(death.reason, "failing delivery 1 of poison", "the last error");
    assert_eq!(death.source, path);
    assert!(
        death.original_name.starts_with("queue-100000005"),
        "the node it died in: {}",
        death.original_name
    );
    assert!(before <= death.died_at && death.died_at <= SystemTime::now());

    // Curator's consumer of the dead-letter path reads the original item.
    let taken = PeerCommand::new("curator-consume-priority", &shared_connect_string(), &dead, 1)
        .timeout(WAIT)
        .run()
        .unwrap();
    assert_eq!(taken, ["poison"]);
}

#[test]
fn requeue_puts_dead_letters_back_under_their_own_prefix_and_plain_ones_stay_plain() {
    let (dead, path) = (unique_path("dl-prefix-dead"), unique_path("dl-prefix"));
    let client = client();
    client.ensure_path(&dead).unwrap();
    let prefixes = ["queue-100000005", "queue-|00000005|", "queue-|job_1|", "queue-"];
    for prefix in prefixes {
        client
            .create(
                &format!("{dead}/{prefix}"),
                &frame(&[prefix.as_bytes()]),
                CreateMode::PersistentSequential,
            )
            .unwrap();
    }
    let moved = DeadLetters::new(&client, &dead).unwrap().requeue_to(&path).unwrap();
    assert_eq!((moved.requeued, moved.skipped), (4, 0));
    let (names, _) = client.get_children(&path).unwrap();
    for name in &names {
        let (data, _) = client.get_data(&format!("{path}/{name}")).unwrap();
        let record = decode_item(Layout::Curator, &data).unwrap().records.remove(0);
        let prefix = String::from_utf8(record).unwrap();
        let sequence = name
            .strip_prefix(&prefix)
            .unwrap_or_else(|| panic!("{name} lost {prefix}"));
        assert!(sequence.bytes().all(|b| b.is_ascii_digit()), "{name}");
    }
    assert_eq!(names.len(), 4);
}

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
        .get_data(&format!("{dead}/{}", letters.names().unwrap()[0].name))
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
