//! Queues shared with Python's kazoo (`kazoo.recipe.queue`), against real
//! kazoo processes (`interop/python/kazoo_peer.py`, run by `peer`): kazoo's
//! `Queue` and [`KazooQueue`](zk_queue::recipes::KazooQueue) both ways
//! (`queue`), and kazoo's `LockingQueue` and
//! [`KazooLockingQueue`](zk_queue::recipes::KazooLockingQueue) both ways,
//! neither side taking what the other holds (`locking`); deadlines with the
//! server down or stalled (`deadlines`); both sides consuming one queue at
//! once (`competing`).

mod competing;
mod deadlines;
mod locking;
mod peer;
mod queue;

/// Items `<tag>-<i>` with the given priorities, in put order.
fn items(tag: &str, priorities: &[u16]) -> Vec<(u16, String)> {
    priorities
        .iter()
        .enumerate()
        .map(|(i, p)| (*p, format!("{tag}-{i}")))
        .collect()
}

/// The data of `items` (in put order) in the order kazoo's consumers take
/// them: lower priority numbers first, equal ones in put order.
fn kazoo_order(items: &[(u16, String)]) -> Vec<String> {
    let mut sorted = items.to_vec();
    sorted.sort_by_key(|(priority, _)| *priority); // stable: put order within a priority
    sorted.into_iter().map(|(_, data)| data).collect()
}

/// Mixed priorities, with repeats, the extremes and kazoo's default (100).
const PRIORITIES: &[u16] = &[100, 5, 999, 5, 0, 100, 42, 0, 7];

/// Locks, reads and consumes every free entry, without waiting.
fn consume_all(queue: &zk_queue::recipes::KazooLockingQueue) -> Vec<String> {
    std::iter::from_fn(|| queue.try_take().unwrap())
        .map(|entry| {
            let data = String::from_utf8(entry.data().to_vec()).unwrap();
            entry.consume().unwrap();
            data
        })
        .collect()
}
