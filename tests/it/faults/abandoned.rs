//! Items a crashed lock-safe consumer abandons (its locks vanish, the items
//! stay) go to a busy consumer at once, not after its backlog.

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use zk_queue::{ConsumeError, QueueBuilder, StringSerializer};

use super::WAIT;
use crate::support::server::unique_path;
use crate::support::{client, eventually};

/// Items in the backlog behind the abandoned ones.
const BACKLOG: usize = 300;
/// Items the crashed consumer holds.
const HELD: usize = 4;

#[test]
fn a_busy_consumer_takes_the_items_a_crashed_consumer_abandoned_within_a_second_of_their_locks_vanishing() {
    let (path, locks) = (unique_path("abandoned"), unique_path("abandoned-locks"));
    let direct = client();
    let producer = QueueBuilder::new(&direct, &path, StringSerializer)
        .build_queue()
        .unwrap();
    for i in 0..HELD + BACKLOG {
        producer.put(format!("job-{i}")).unwrap();
    }
    assert!(producer.flush_timeout(WAIT));

    // A locks the first items and holds them until it crashes.
    let doomed = client();
    let (release, held) = crossbeam_channel::unbounded::<()>();
    let a = QueueBuilder::new(&doomed, &path, StringSerializer)
        .lock_path(&locks)
        .claim_window(HELD)
        .consumer(move |_: String| -> Result<(), ConsumeError> {
            let _ = held.recv();
            Err("crashed".into())
        })
        .build_queue()
        .unwrap();
    eventually(WAIT, "A holds its items", || {
        direct.get_children(&locks).map(|(l, _)| l.len()).unwrap_or(0) == HELD
    });

    // B works through the backlog, 15 ms an item: about 5 s of work.
    let seen: Arc<Mutex<Vec<(String, Instant)>>> = Arc::default();
    let b = {
        let seen = Arc::clone(&seen);
        QueueBuilder::new(&direct, &path, StringSerializer)
            .lock_path(&locks)
            .claim_window(4)
            .consumer(move |item: String| -> Result<(), ConsumeError> {
                std::thread::sleep(Duration::from_millis(15));
                seen.lock().push((item, Instant::now()));
                Ok(())
            })
            .build_queue()
            .unwrap()
    };
    eventually(WAIT, "B is busy with the backlog", || seen.lock().len() >= 20);

    // A crashes: its session ends, and the server deletes its locks.
    doomed.close();
    let vanished = Instant::now();
    eventually(WAIT, "B takes what A held", || {
        let seen = seen.lock();
        (0..HELD).all(|i| seen.iter().any(|(item, _)| *item == format!("job-{i}")))
    });
    let seen_now = seen.lock().clone();
    let last = (0..HELD)
        .map(|i| {
            seen_now
                .iter()
                .position(|(item, _)| *item == format!("job-{i}"))
                .unwrap()
        })
        .max()
        .unwrap();
    let picked_up = seen_now[last].1 - vanished;
    eprintln!(
        "abandoned items taken {picked_up:?} after their holder's session closed, with {} of {BACKLOG} backlog items left",
        HELD + BACKLOG - seen_now.len()
    );
    // Not after the backlog: B had most of it still to do.
    assert!(
        last < BACKLOG * 3 / 4,
        "taken as the {last}th delivery, after the backlog (picked up after {picked_up:?})"
    );
    // Within a second of the lock listing that shows them gone, plus the
    // item B was on and its window of four: generous on a loaded machine.
    assert!(picked_up < Duration::from_secs(3), "picked up after {picked_up:?}");
    eventually(WAIT, "B finishes the backlog", || seen.lock().len() >= HELD + BACKLOG);
    drop(release);
    b.close();
    drop(a);
}
