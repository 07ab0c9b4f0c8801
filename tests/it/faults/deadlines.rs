//! Every blocking call returns by its deadline whatever the server does:
//! down (connections refused), stalled (connections open, nothing
//! answered), never there (a name that does not resolve).

use std::net::TcpListener;
use std::time::Duration;

use zk_queue::testing::TestingServer;
use zk_queue::{
    admin::RawQueue, client::ConnectCause, recipes::LeaderLatch, Error, QueueBuilder, ShardPolicy, SimpleQueue,
    StringSerializer, ZkClient,
};

use crate::support::server::unique_path;
use crate::support::{within, Bound};

/// The deadline the calls below are given.
const DEADLINE: Duration = Duration::from_secs(2);

/// How late a call may return past its deadline while the server is down
/// (its connections refused): no request is in flight, only the time to
/// notice.
const LATE_WHEN_DOWN: Duration = Duration::from_millis(200);

/// How late a call may return past its deadline while the server is
/// stalled (connections open, nothing answered): a request it sent just
/// before its deadline may finish a second after it, as documented.
const LATE_WHEN_STALLED: Duration = Duration::from_secs(1);

/// A client with default settings but the request timeout, which bounds
/// every call that has no deadline of its own.
fn client_with_request_timeout(connect: &str, request_timeout: Duration) -> ZkClient {
    ZkClient::builder(connect)
        .request_timeout(request_timeout)
        .connect()
        .unwrap()
}

/// Calls every blocking family with a deadline, then the calls bounded by
/// the request timeout, against a server that `fault` has just taken away.
fn every_call_returns_in_time(fault: impl FnOnce(&mut TestingServer), late: Duration) {
    let mut server = TestingServer::start().unwrap();
    let connect = server.connect_string();
    // Default settings: a 15 s request timeout that a deadline must cut short.
    let client = ZkClient::connect(&connect).unwrap();
    let short = client_with_request_timeout(&connect, DEADLINE);
    let simple = SimpleQueue::new(&client, &unique_path("deadline-simple")).unwrap();
    let raw = RawQueue::new(&client, &unique_path("deadline-raw")).unwrap();
    let bounded = QueueBuilder::new(&client, &unique_path("deadline-bounded"), StringSerializer)
        .max_items(1)
        .put_in_background(false)
        .build_queue()
        .unwrap();
    bounded.put("fills it".into()).unwrap();
    let background = QueueBuilder::new(&client, &unique_path("deadline-background"), StringSerializer)
        .put_in_background(true)
        .build_queue()
        .unwrap();
    // `close()` has no deadline of its own: it waits the final-flush time.
    let flushing = QueueBuilder::new(&client, &unique_path("deadline-final-flush"), StringSerializer)
        .put_in_background(true)
        .final_flush(DEADLINE)
        .build_queue()
        .unwrap();
    let (builder, receiver) = QueueBuilder::new(&client, &unique_path("deadline-pull"), StringSerializer)
        .lock_path(&unique_path("deadline-pull-locks"))
        .pull_consumer();
    let pulled = builder.build_queue().unwrap();
    let simple_short = SimpleQueue::new(&short, &unique_path("deadline-simple-short")).unwrap();
    let prefetching = SimpleQueue::builder(&client, &unique_path("deadline-simple-prefetch"))
        .prefetch(16)
        .build()
        .unwrap();
    // Its next take has to claim a window from its listing, not from memory.
    let loaded = prefetching.put_all(&vec![b"x".to_vec(); 40]).unwrap();
    assert!(loaded.iter().all(Result::is_ok), "{loaded:?}");
    for _ in 0..16 {
        prefetching.take().unwrap();
    }
    assert_eq!(prefetching.prefetched(), 0);
    // A coalescing queue whose foreground puts wait for their node.
    let coalescing = QueueBuilder::new(&client, &unique_path("deadline-coalesced"), StringSerializer)
        .put_in_background(false)
        .coalesce_puts(true)
        .build_queue()
        .unwrap();
    let sharded = QueueBuilder::new(&client, &unique_path("deadline-sharded"), StringSerializer)
        .put_in_background(false)
        .build_sharded_queue(&unique_path("deadline-sharded-leader"), ShardPolicy::new())
        .unwrap();
    let latch = LeaderLatch::builder(&short, &unique_path("deadline-latch"))
        .build()
        .unwrap();
    assert!(latch.await_leadership_timeout(Duration::from_secs(30)).unwrap());

    fault(&mut server);
    let bound = Bound::past(DEADLINE, late);

    // An error where the client knows the server is gone, `None` (nothing
    // in time) where it still looks connected: either way, in time.
    let _ = within("SimpleQueue::take_timeout", bound, || simple.take_timeout(DEADLINE));
    let _ = within("SimpleQueue::take_timeout with a prefetch", bound, || {
        prefetching.take_timeout(DEADLINE)
    });
    let _ = within("RawQueue::take_timeout", bound, || raw.take_timeout(10, DEADLINE));
    let put = within("put_timeout on a bounded queue", bound, || {
        bounded.put_timeout("more".into(), DEADLINE)
    });
    assert!(put.is_err(), "{put:?}");
    background.put("pending".into()).unwrap();
    assert!(!within("flush_timeout", bound, || background.flush_timeout(DEADLINE)));
    let report = within("close_timeout", bound, || background.close_timeout(DEADLINE));
    assert_eq!(report.puts_pending, 1, "{report:?}");
    flushing.put("pending".into()).unwrap();
    let report = within("close within the final flush", bound, || flushing.close());
    assert_eq!(report.puts_pending, 1, "{report:?}");
    // `None` while the stalled server still looks connected, the error of
    // an unreachable ensemble once it is gone (see the test below).
    let _ = within("ItemReceiver::take_timeout", bound, || receiver.take_timeout(DEADLINE));
    within("close_timeout of a consumer", bound, || pulled.close_timeout(DEADLINE));
    let put = within("put_timeout of a coalescing queue", bound, || {
        coalescing.put_timeout("more".into(), DEADLINE)
    });
    assert!(put.is_err(), "{put:?}");
    let put = within("ShardedQueue::put_timeout", bound, || {
        sharded.put_timeout("more".into(), DEADLINE)
    });
    assert!(put.is_err(), "{put:?}");
    // Leading, or not any more: either way, in time.
    let _ = within("LeaderLatch::await_leadership_timeout", bound, || {
        latch.await_leadership_timeout(DEADLINE)
    });
    // Without a deadline of their own: the request timeout.
    let _ = within("LeaderLatch::close", bound, || latch.close());
    within("SimpleQueue::put", bound, || simple_short.put(b"x")).unwrap_err();
    let batch = within("SimpleQueue::put_all", bound, || simple_short.put_all(&[b"x", b"y"]));
    assert!(
        batch.map_or(true, |results| results.iter().all(Result::is_err)),
        "stored while the server is away"
    );
    within("SimpleQueue::try_take", bound, || simple_short.try_take()).unwrap_err();
    within("ZkClient::exists", bound, || short.exists("/")).unwrap_err();
}

#[test]
fn every_blocking_call_returns_by_its_deadline_while_the_server_is_down() {
    every_call_returns_in_time(|server| server.kill().unwrap(), LATE_WHEN_DOWN);
}

#[test]
fn every_blocking_call_returns_by_its_deadline_while_the_server_is_stalled() {
    every_call_returns_in_time(|server| server.pause().unwrap(), LATE_WHEN_STALLED);
}

/// Connects to `connect` with a 2 s connection timeout, which must hold, and
/// returns the servers and causes the error names.
fn unreachable(connect: &str) -> Vec<(String, ConnectCause)> {
    let result = within("connect", Bound::past(DEADLINE, LATE_WHEN_DOWN), || {
        ZkClient::builder(connect).connection_timeout(DEADLINE).connect()
    });
    match result {
        Err(Error::Unreachable { servers, .. }) => servers
            .iter()
            .map(|s| (s.address().to_owned(), s.cause().clone()))
            .collect(),
        other => panic!("{connect}: {other:?}"),
    }
}

#[test]
fn connecting_to_a_port_nobody_listens_on_names_the_address_and_the_refusal() {
    let address = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .to_string();
    assert_eq!(unreachable(&address), [(address.clone(), ConnectCause::Refused)]);
    let message = ZkClient::builder(&address)
        .connection_timeout(Duration::from_millis(800))
        .connect()
        .unwrap_err()
        .to_string();
    assert!(message.contains(&format!("{address}: connection refused")), "{message}");
}

#[test]
fn connecting_to_a_name_that_does_not_resolve_says_so() {
    let address = "no-such-host.invalid:2181";
    assert_eq!(
        unreachable(address),
        [(address.to_owned(), ConnectCause::NameNotResolved)]
    );
}

#[test]
fn connecting_to_a_port_that_never_answers_says_no_session_was_established() {
    // Accepts connections (the kernel does) but never answers a handshake.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = silent.local_addr().unwrap().to_string();
    let refused = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .to_string();
    let causes = unreachable(&format!("{address},{refused}"));
    assert_eq!(
        causes,
        [(address, ConnectCause::NoSession), (refused, ConnectCause::Refused)]
    );
}

/// How long a `try_` call waits for a server at most, as documented.
const TRY_WAIT: Duration = Duration::from_secs(1);

/// How long a `try_` call may take while no server answers: its documented
/// second, and the time to notice.
const TRY_BOUND: Bound = Bound::past(TRY_WAIT, LATE_WHEN_DOWN);

/// Whether `result` failed with the one error of an unreachable ensemble.
fn is_unreachable<T: std::fmt::Debug>(what: &str, result: &Result<T, Error>) {
    assert!(
        matches!(result, Err(Error::Unreachable { .. })),
        "{what}: {result:?} instead of Error::Unreachable"
    );
}

#[test]
fn every_handle_reports_an_unreachable_server_with_one_error_and_try_calls_return_within_their_bound() {
    let mut server = TestingServer::start().unwrap();
    let client = ZkClient::connect(&server.connect_string()).unwrap();
    let simple = SimpleQueue::new(&client, &unique_path("unreachable-simple")).unwrap();
    // `len` has no deadline of its own: its client's request timeout bounds it.
    let short = client_with_request_timeout(&server.connect_string(), DEADLINE);
    let simple_short = SimpleQueue::new(&short, &unique_path("unreachable-simple-short")).unwrap();
    let raw = RawQueue::new(&client, &unique_path("unreachable-raw")).unwrap();
    let bounded = QueueBuilder::new(&client, &unique_path("unreachable-bounded"), StringSerializer)
        .max_items(10)
        .put_in_background(false)
        .build_queue()
        .unwrap();
    let (builder, receiver) = QueueBuilder::new(&client, &unique_path("unreachable-pull"), StringSerializer)
        .lock_path(&unique_path("unreachable-pull-locks"))
        .pull_consumer();
    let _pulled = builder.build_queue().unwrap();
    let states = client.state_listener();
    server.kill().unwrap();
    crate::support::wait_for_state(&states, zk_queue::ConnectionState::Suspended, Duration::from_secs(30));

    let r = within(
        "SimpleQueue::take_timeout",
        Bound::past(DEADLINE, LATE_WHEN_DOWN),
        || simple.take_timeout(DEADLINE),
    );
    is_unreachable("SimpleQueue::take_timeout", &r);
    let r = within("SimpleQueue::try_take", TRY_BOUND, || simple.try_take());
    is_unreachable("SimpleQueue::try_take", &r);
    let r = within("SimpleQueue::len", Bound::past(DEADLINE, LATE_WHEN_DOWN), || {
        simple_short.len()
    });
    is_unreachable("SimpleQueue::len", &r);
    let r = within(
        "SimpleQueue::put_timeout",
        Bound::past(DEADLINE, LATE_WHEN_DOWN),
        || simple.put_timeout(b"x", DEADLINE),
    );
    is_unreachable("SimpleQueue::put_timeout", &r);
    let r = within("SimpleQueue::try_put", TRY_BOUND, || simple.try_put(b"x"));
    is_unreachable("SimpleQueue::try_put", &r);
    let r = within("RawQueue::take_timeout", Bound::past(DEADLINE, LATE_WHEN_DOWN), || {
        raw.take_timeout(10, DEADLINE)
    });
    is_unreachable("RawQueue::take_timeout", &r);
    let r = within(
        "ItemReceiver::take_timeout",
        Bound::past(DEADLINE, LATE_WHEN_DOWN),
        || receiver.take_timeout(DEADLINE),
    );
    is_unreachable("ItemReceiver::take_timeout", &r);
    let r = within("ItemReceiver::try_take", TRY_BOUND, || receiver.try_take());
    is_unreachable("ItemReceiver::try_take", &r);
    let r = within("Queue::put_timeout", Bound::past(DEADLINE, LATE_WHEN_DOWN), || {
        bounded.put_timeout("x".into(), DEADLINE)
    })
    .map_err(Error::from);
    is_unreachable("Queue::put_timeout", &r);
    let r = within("Queue::try_put", TRY_BOUND, || bounded.try_put("x".into())).map_err(Error::from);
    is_unreachable("Queue::try_put", &r);
}
