//! What the lock promises without faults: readers together, writers alone,
//! in the order of arrival, reentrant within a thread, and a downgrade that
//! lets no waiting writer in.

use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Duration;

use zk_queue::recipes::RwLock;
use zk_queue::Error;

use super::{nodes, rwlock, take_turns, Ledger, Role, WAIT};
use crate::support::server::unique_path;
use crate::support::{client, eventually};

/// How long a participant that must not get in is given to get in anyway.
const KEPT_OUT: Duration = Duration::from_millis(500);

#[test]
fn readers_hold_together_and_writers_never_beside_anyone_by_a_shared_ledger() {
    let path = unique_path("rwlock-ledger");
    let ledger = Ledger::new();
    thread::scope(|s| {
        for n in 0..8 {
            let (path, ledger) = (&path, &ledger);
            let (role, id, hold) = match n % 4 {
                0 => (Role::Write, format!("w{n}"), Duration::from_millis(5)),
                _ => (Role::Read, format!("r{n}"), Duration::from_millis(40)),
            };
            s.spawn(move || take_turns(&rwlock(&client(), path), role, &id, 5, hold, ledger));
        }
    });
    let (entries, most) = ledger.check_readers_writers();
    eprintln!("{entries} holds (8 clients), at most {most} inside at once");
    assert_eq!(entries, 40);
    assert!(most >= 2, "readers held together: at most {most} at once");
    assert!(nodes(&client(), &path).is_empty(), "every node is gone");
}

#[test]
fn a_reader_holds_beside_a_reader_and_a_writer_beside_no_one() {
    let path = unique_path("rwlock-share");
    let clients = [client(), client(), client()];
    let [a, b, c] = clients.each_ref().map(|client| rwlock(client, &path));
    let read_a = a.read().unwrap();
    let read_b = b.try_read().unwrap().expect("readers share");
    assert!(c.try_write().unwrap().is_none(), "no writer beside readers");
    drop(read_b);
    assert!(c.try_write().unwrap().is_none(), "nor beside one reader");
    drop(read_a);
    let write_c = c.try_write().unwrap().expect("alone, it writes");
    assert!(a.try_read().unwrap().is_none(), "no reader beside a writer");
    assert!(b.try_write().unwrap().is_none(), "no writer beside a writer");
    drop(write_c);
    assert!(nodes(&clients[0], &path).is_empty(), "every node is gone");
}

#[test]
fn a_writer_waiting_behind_readers_keeps_later_readers_out() {
    let path = unique_path("rwlock-fair");
    let admin = client();
    let first = rwlock(&admin, &path);
    let reading = first.read().unwrap();
    let (writer_client, reader_client) = (client(), client());
    let writer = rwlock(&writer_client, &path);
    let reader = rwlock(&reader_client, &path);
    let order = std::sync::Mutex::new(Vec::new());
    thread::scope(|s| {
        s.spawn(|| {
            let _guard = writer.write().unwrap();
            order.lock().unwrap().push("writer");
            thread::sleep(Duration::from_millis(100));
        });
        eventually(WAIT, "the writer waits", || nodes(&admin, &path).len() == 2);
        assert!(
            reader.try_read().unwrap().is_none(),
            "a later reader waits behind the writer"
        );
        s.spawn(|| {
            let _guard = reader.read().unwrap();
            order.lock().unwrap().push("reader");
        });
        eventually(WAIT, "the later reader waits", || nodes(&admin, &path).len() == 3);
        thread::sleep(KEPT_OUT);
        assert!(
            order.lock().unwrap().is_empty(),
            "no one got past the first reader's hold"
        );
        drop(reading);
    });
    assert_eq!(*order.lock().unwrap(), ["writer", "reader"]);
}

#[test]
fn a_writer_takes_the_read_lock_at_once_and_both_halves_are_reentrant() {
    let path = unique_path("rwlock-reentrant");
    let (client, other_client) = (client(), client());
    let lock = rwlock(&client, &path);
    let other = rwlock(&other_client, &path);
    let write = lock.write().unwrap();
    let write_again = lock.try_write().unwrap().expect("reentrant write");
    assert_eq!(write_again.node(), write.node());
    let read = lock
        .read_timeout(Duration::from_millis(1))
        .unwrap()
        .expect("a writer reads at once");
    let read_again = lock.try_read().unwrap().expect("reentrant read");
    assert_eq!((read_again.node(), read_again.token()), (read.node(), read.token()));
    assert_eq!(read.token(), write.token(), "in the write node's place, with its token");
    assert_eq!(nodes(&client, &path).len(), 2, "one node a half");
    assert!(lock.is_read_by_current_thread() && lock.is_written_by_current_thread());
    drop(write);
    assert!(other.try_read().unwrap().is_none(), "still written with one guard left");
    drop(write_again);
    assert!(!lock.is_written_by_current_thread());
    // Only reading now: asking for the write lock would wait for itself.
    assert!(matches!(lock.try_write(), Err(Error::InvalidState(_))));
    assert!(matches!(lock.write_timeout(WAIT), Err(Error::InvalidState(_))));
    assert!(
        other.try_read().unwrap().is_some(),
        "readers share with the downgraded writer"
    );
    drop(read);
    drop(read_again);
    assert!(nodes(&client, &path).is_empty(), "every node is gone");
    // Another thread is another holder: it waits.
    let held = lock.write().unwrap();
    thread::scope(|s| {
        let blocked = s.spawn(|| lock.read_timeout(Duration::from_millis(300)).unwrap().is_none());
        assert!(blocked.join().unwrap(), "another thread does not share the write hold");
    });
    drop(held);
}

#[test]
fn a_downgrade_lets_no_waiting_writer_in_until_the_read_lock_is_released() {
    let path = unique_path("rwlock-downgrade");
    let admin = client();
    let downgrading = rwlock(&admin, &path);
    let write = downgrading.write().unwrap();
    let (reader_client, writer_client) = (client(), client());
    let (reader, writer) = (rwlock(&reader_client, &path), rwlock(&writer_client, &path));
    let (reader_held, writer_held) = (AtomicBool::new(false), AtomicBool::new(false));
    thread::scope(|s| {
        // A reader, then a writer, wait behind the write lock.
        s.spawn(|| {
            let _guard = reader.read().unwrap();
            reader_held.store(true, Ordering::Release);
        });
        eventually(WAIT, "the reader waits", || nodes(&admin, &path).len() == 2);
        let waiting_writer = s.spawn(|| {
            let guard = writer.write().unwrap();
            writer_held.store(true, Ordering::Release);
            guard.token()
        });
        eventually(WAIT, "the writer waits", || nodes(&admin, &path).len() == 3);
        let read = downgrading.read().unwrap();
        let sequence = |node: &str| node.rsplit("__").next().unwrap().to_owned();
        let (write_sequence, write_token) = (sequence(write.node()), write.token());
        drop(write);
        eventually(WAIT, "the waiting reader reads beside the downgraded one", || {
            reader_held.load(Ordering::Acquire)
        });
        thread::sleep(KEPT_OUT);
        assert!(!writer_held.load(Ordering::Acquire), "the waiting writer still waits");
        assert!(read.is_held());
        assert_eq!(sequence(read.node()), write_sequence, "in the write node's place");
        assert_eq!(read.token(), write_token, "the read node's token is the write node's");
        drop(read);
        let token = waiting_writer.join().unwrap();
        assert!(token > write_token, "the writer held after, with a larger token");
    });
    assert!(nodes(&admin, &path).is_empty(), "every node is gone");
}

#[test]
fn nodes_have_curator_s_protected_read_and_write_names_and_the_participant_s_data() {
    let path = unique_path("rwlock-names");
    let client = client();
    let lock = RwLock::builder(&client, &path).data("worker-7").build().unwrap();
    let write = lock.write().unwrap();
    let read = lock.read().unwrap();
    for (guard_node, lock_name) in [(write.node(), "-__WRIT__"), (read.node(), "-__READ__")] {
        let name = guard_node.rsplit('/').next().unwrap().to_owned();
        let (prefix, sequence) = name.split_once(lock_name).expect("Curator's lock name");
        let uuid = prefix.strip_prefix("_c_").expect("Curator's protected mark");
        assert_eq!((uuid.len(), sequence.len()), (36, 10), "{name}");
        assert_eq!(client.get_data(guard_node).unwrap().0, b"worker-7");
    }
    assert_eq!(lock.participant_nodes().unwrap().len(), 2);
}

#[test]
fn tokens_grow_across_the_lock_s_container_reaped_and_created_again() {
    let server = zk_queue::testing::TestingServer::builder()
        .container_check_interval(Duration::from_millis(100))
        .start()
        .unwrap();
    let client = crate::support::client_of(&server.connect_string());
    let lock = rwlock(&client, "/rwlock");
    let mut tokens = Vec::new();
    for round in 0..3 {
        // A writer, then a reader, each alone on the lock created again.
        let token = if round % 2 == 0 {
            let write = lock.write().unwrap();
            assert!(write.node().ends_with("__WRIT__0000000000"), "{}", write.node());
            write.token()
        } else {
            let read = lock.read().unwrap();
            assert!(read.node().ends_with("__READ__0000000000"), "{}", read.node());
            read.token()
        };
        tokens.push(token);
        eventually(WAIT, "the lock's container is reaped", || {
            client.exists("/rwlock").unwrap().is_none()
        });
    }
    assert!(tokens.windows(2).all(|w| w[0] < w[1]), "tokens only grow: {tokens:?}");
}
