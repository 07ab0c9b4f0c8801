//! kazoo consumers and this crate's on one queue at once: every entry is
//! taken exactly once, whichever side gets it.

use std::collections::BTreeMap;
use std::thread;
use std::time::{Duration, Instant};

use zk_queue::recipes::{KazooLockingQueue, KazooQueue};

use super::peer::{KazooPeer, LINE_WAIT};
use super::{consume_all, items};
use crate::support::server::{shared_connect_string, unique_path};
use crate::support::{client, nodes};

/// Entries put before the consumers start.
const ENTRIES: usize = 200;

/// How long a kazoo `LockingQueue` consumer's last `get` waits for more.
const KAZOO_LAST_GET: Duration = Duration::from_secs(2);

/// Priorities of the entries: a few levels, repeated.
fn priorities() -> Vec<u16> {
    (0..ENTRIES).map(|i| [100, 3, 999, 50][i % 4]).collect()
}

/// How often each datum was taken, over every consumer's list.
fn tally(takes: &[Vec<String>]) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for data in takes.iter().flatten() {
        *counts.entry(data.clone()).or_insert(0) += 1;
    }
    counts
}

/// Checks that every put datum was taken exactly once, and that both sides
/// took some (they competed).
fn assert_each_taken_once(put: &[(u16, String)], ours: &[Vec<String>], theirs: &[Vec<String>]) {
    let all: Vec<Vec<String>> = ours.iter().chain(theirs).cloned().collect();
    let counts = tally(&all);
    let twice: Vec<_> = counts.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "taken more than once: {twice:?}");
    let expected: BTreeMap<String, usize> = put.iter().map(|(_, d)| (d.clone(), 1)).collect();
    assert_eq!(counts, expected, "every entry taken");
    let (ours, theirs) = (ours.iter().flatten().count(), theirs.iter().flatten().count());
    eprintln!("taken here {ours}, by kazoo {theirs}");
    assert!(
        ours > 0 && theirs > 0,
        "both sides took some: here {ours}, kazoo {theirs}"
    );
}

/// Takes an entry here with `first`, starts two kazoo peers `args`
/// together, then, once one of them has taken an entry (the other may back
/// off and find the queue drained: kazoo's `Queue` retries a lost race after
/// 0.1 s, doubling), `local` on two threads, and returns what each side
/// took. Both sides take part by arrangement, not by the speed of either.
fn compete(
    args: &[&str],
    first: impl FnOnce() -> String,
    local: impl Fn() -> Vec<String> + Sync,
) -> (Vec<Vec<String>>, Vec<Vec<String>>) {
    let mut peers: Vec<KazooPeer> = (0..2).map(|_| KazooPeer::spawn_with(args, true)).collect();
    let ours_first = first();
    for peer in &mut peers {
        peer.send("go");
    }
    let (first_of, first) = first_line(&mut peers);
    thread::scope(|s| {
        let locals: Vec<_> = (0..2).map(|_| s.spawn(&local)).collect();
        let mut theirs: Vec<Vec<String>> = peers
            .into_iter()
            .map(|peer| {
                let rest = peer.finish();
                rest.iter()
                    .filter_map(|line| line["data"].as_str().map(str::to_owned))
                    .collect()
            })
            .collect();
        theirs[first_of].insert(0, first);
        let mut ours: Vec<Vec<String>> = locals.into_iter().map(|t| t.join().unwrap()).collect();
        ours[0].insert(0, ours_first);
        (ours, theirs)
    })
}

/// The first datum any of `peers` takes, and which took it.
fn first_line(peers: &mut [KazooPeer]) -> (usize, String) {
    let deadline = Instant::now() + LINE_WAIT;
    while Instant::now() < deadline {
        for (i, peer) in peers.iter_mut().enumerate() {
            if let Some(line) = peer.try_next_line(Duration::from_millis(20)) {
                return (i, line["data"].as_str().expect("an entry taken").to_owned());
            }
        }
    }
    panic!("no kazoo peer took an entry within {LINE_WAIT:?}");
}

#[test]
fn kazoo_and_local_queue_consumers_take_each_entry_exactly_once() {
    let path = unique_path("kazoo-compete-queue");
    let client = client();
    let queue = KazooQueue::new(&client, &path).unwrap();
    let put = items("c", &priorities());
    for (priority, data) in &put {
        queue.put(data.as_bytes(), *priority).unwrap();
    }
    let connect = shared_connect_string();
    let take_all = || {
        let queue = KazooQueue::new(&client, &path).unwrap();
        std::iter::from_fn(|| queue.try_take().unwrap())
            .map(|d| String::from_utf8(d).unwrap())
            .collect()
    };
    let first = || String::from_utf8(queue.try_take().unwrap().expect("an entry")).unwrap();
    let (ours, theirs) = compete(&["get", &connect, &path], first, take_all);
    assert_each_taken_once(&put, &ours, &theirs);
    assert!(nodes(&client, &path).is_empty());
}

#[test]
fn kazoo_and_local_locking_consumers_take_each_entry_exactly_once() {
    let path = unique_path("kazoo-compete-locking");
    let client = client();
    let queue = KazooLockingQueue::new(&client, &path).unwrap();
    let put = items("c", &priorities());
    for (priority, data) in &put {
        queue.put(data.as_bytes(), *priority).unwrap();
    }
    let connect = shared_connect_string();
    let count = ENTRIES.to_string();
    let last_get = KAZOO_LAST_GET.as_secs_f64().to_string();
    let first = || {
        let entry = queue.try_take().unwrap().expect("an entry");
        let data = String::from_utf8(entry.data().to_vec()).unwrap();
        entry.consume().unwrap();
        data
    };
    let (ours, theirs) = compete(&["consume", &connect, &path, &count, &last_get], first, || {
        consume_all(&KazooLockingQueue::new(&client, &path).unwrap())
    });
    assert_each_taken_once(&put, &ours, &theirs);
    assert!(nodes(&client, &format!("{path}/entries")).is_empty());
    assert!(nodes(&client, &format!("{path}/taken")).is_empty());
}
