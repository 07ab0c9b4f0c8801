//! What an uncontended lease waits for: one round trip (its create, with
//! the listings of the leases and of the lock's line written behind it),
//! its loss watch not awaited, and its return one write. The participant
//! that is timed runs behind a proxy that delays every forwarded chunk by
//! [`DELAY`], so each round trip it waits for costs at least twice that:
//! one round trip more than the bound is more than the bound plus its load
//! margin.

use std::time::{Duration, Instant};

use zk_queue::testing::FaultProxy;

use super::{semaphore, WAIT};
use crate::support::server::{shared_connect_string, unique_path};
use crate::support::{client, proxied_client, Bound};

/// The proxy's delay per forwarded chunk, each way: a round trip is more
/// than the load margin of one.
const DELAY: Duration = Duration::from_millis(500);

#[test]
fn an_uncontended_lease_waits_for_one_round_trip_and_its_loss_watch_is_not_awaited() {
    let path = unique_path("semaphore-one-round-trip");
    let admin = client();
    // The path and its count record exist, and the proxied handle has
    // checked the count.
    drop(semaphore(&admin, &path, 2).acquire().unwrap());
    let proxy = FaultProxy::start(&shared_connect_string()).unwrap();
    let slow = proxied_client(&proxy);
    let leases = semaphore(&slow, &path, 2);
    drop(leases.acquire().unwrap());
    proxy.set_delay(DELAY);

    let before = slow.stats();
    let started = Instant::now();
    let lease = leases.acquire().unwrap();
    let took = started.elapsed();
    let acquired = slow.stats();
    eprintln!("an uncontended lease took {took:?} behind a {DELAY:?} link");
    // A look before the create, or awaiting the watch, is a round trip more.
    // The link's delay of one round trip is given; the rest (the server's
    // work and the scheduling) is bounded by half a round trip, so a round
    // trip more fails.
    Bound::past(2 * DELAY, DELAY).check("an uncontended lease (a round trip more is too many)", took);
    assert_eq!(
        (
            acquired.create - before.create,
            acquired.get_children - before.get_children,
            acquired.get_data - before.get_data,
            acquired.total() - before.total(),
        ),
        (1, 2, 1, 4),
        "the create, the listings of the leases and the line, the watch: {before:?} {acquired:?}"
    );
    // The token is the lease's creation zxid, as the create's answer told it.
    let (_, stat) = admin.get_data(lease.node()).unwrap();
    assert_eq!(lease.token(), u64::try_from(stat.czxid).unwrap());
    drop(lease);
    let returned = slow.stats();
    assert_eq!(
        (returned.delete - acquired.delete, returned.total() - acquired.total()),
        (1, 1),
        "the return: one delete"
    );

    // A lease deleted before its watch's answer came is told all the same.
    let lease = leases.acquire().unwrap();
    let lost = lease.lost();
    admin.delete(lease.node(), None).unwrap();
    assert_eq!(
        lost.recv_timeout(WAIT),
        Err(crossbeam_channel::RecvTimeoutError::Disconnected),
        "the holder is told its lease is gone"
    );
    assert!(!lease.is_held());
}
