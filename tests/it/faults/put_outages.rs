//! Puts while no server can be reached, the server down for longer than the
//! client's request timeout: `Ok` from a foreground put means stored, and a
//! background put that cannot be stored is refused, or reported to the put
//! listeners and to the next put or flush, or counted by the close.

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use zk_queue::testing::TestingServer;
use zk_queue::{ConnectionState, Error, PutError, PutListener, QueueBuilder, StringSerializer, ZkClient};

use crate::support::server::unique_path;
use crate::support::{logs, wait_for_state, within, Bound};

use super::WAIT;

/// The request timeout of the clients below: how long a put may try to
/// reach a server.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(2);

/// How late past its deadline a put may return while the server is down
/// (its connections refused): no request is in flight, only the time to
/// notice.
const LATE_WHEN_DOWN: Duration = Duration::from_millis(200);

/// A client of `server` whose requests give up after [`REQUEST_TIMEOUT`].
fn client_of(server: &TestingServer) -> ZkClient {
    ZkClient::builder(&server.connect_string())
        .session_timeout(Duration::from_secs(30))
        .connection_timeout(Duration::from_secs(10))
        .request_timeout(REQUEST_TIMEOUT)
        .connect()
        .unwrap()
}

/// Stops `server` and waits until `client` knows it is gone; returns when
/// it knew.
fn stop(server: &mut TestingServer, client: &ZkClient) -> Instant {
    let states = client.state_listener();
    server.stop().unwrap();
    wait_for_state(&states, ConnectionState::Suspended, WAIT);
    Instant::now()
}

/// Restarts `server` and waits until `client` is connected again.
fn restart(server: &mut TestingServer, client: &ZkClient) {
    let states = client.state_listener();
    server.restart().unwrap();
    wait_for_state(&states, ConnectionState::Reconnected, WAIT);
}

#[test]
fn a_put_by_default_fails_unreachable_by_the_request_timeout_and_stores_nothing_later() {
    let mut server = TestingServer::start().unwrap();
    let client = client_of(&server);
    let path = unique_path("put-outage-foreground");
    // The README's first work queue's settings: `QueueBuilder` defaults.
    let queue = QueueBuilder::new(&client, &path, StringSerializer)
        .build_queue()
        .unwrap();

    stop(&mut server, &client);
    let bound = Bound::past(REQUEST_TIMEOUT, LATE_WHEN_DOWN);
    let put = within("put with the server down", bound, || queue.put("lost?".into()));
    assert!(matches!(put, Err(Error::Unreachable { .. })), "{put:?}");
    // It says why: the server refused every connection.
    let message = put.unwrap_err().to_string();
    assert!(message.ends_with(": connection refused"), "{message}");
    // The server has been down longer than the request timeout by now.
    let bound = Bound::past(Duration::from_secs(1), LATE_WHEN_DOWN);
    let put = within("try_put with the server down", bound, || queue.try_put("lost?".into()));
    assert!(
        matches!(put, Err(PutError::Failed(Error::Unreachable { .. }))),
        "{put:?}"
    );
    assert!(queue.flush_timeout(Duration::ZERO), "nothing is pending");

    restart(&mut server, &client);
    // A close waits for whatever a put thread still holds: nothing.
    let report = queue.close();
    assert_eq!(report.puts_pending, 0, "{report:?}");
    let (names, _) = client.get_children(&path).unwrap();
    assert!(names.is_empty(), "puts that failed were stored later: {names:?}");
}

#[test]
fn a_background_put_is_refused_at_once_while_no_server_has_answered_for_a_request_timeout() {
    let mut server = TestingServer::start().unwrap();
    let client = client_of(&server);
    let path = unique_path("put-outage-refused");
    let queue = QueueBuilder::new(&client, &path, StringSerializer)
        .put_in_background(true)
        .build_queue()
        .unwrap();

    let down = stop(&mut server, &client);
    // What is waited for is the outage itself growing longer than the
    // request timeout.
    std::thread::sleep((down + REQUEST_TIMEOUT + LATE_WHEN_DOWN).saturating_duration_since(Instant::now()));
    let put = within("a background put after a request timeout down", LATE_WHEN_DOWN, || {
        queue.put("refused".into())
    });
    assert!(matches!(put, Err(Error::Unreachable { .. })), "{put:?}");
    let put = within(
        "a background try_put after a request timeout down",
        LATE_WHEN_DOWN,
        || queue.try_put("refused".into()),
    );
    assert!(
        matches!(put, Err(PutError::Failed(Error::Unreachable { .. }))),
        "{put:?}"
    );

    restart(&mut server, &client);
    queue.put("accepted".into()).unwrap();
    assert!(queue.flush_timeout(WAIT), "stored once a server answers");
    let (names, _) = client.get_children(&path).unwrap();
    assert_eq!(names.len(), 1, "only the accepted put is stored: {names:?}");
}

/// When the put listener heard of each failure, and the items.
#[derive(Default)]
struct Failures(Mutex<Vec<(Instant, Vec<String>, Error)>>);

struct Heard(Arc<Failures>);

impl PutListener<String> for Heard {
    fn put_failed(&self, items: &[String], error: &Error) {
        self.0 .0.lock().push((Instant::now(), items.to_vec(), error.clone()));
    }
}

impl Failures {
    /// Waits until the listener heard of `n` failures; the latest.
    fn wait_for(&self, n: usize) -> (Instant, Vec<String>, Error) {
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(latest) = self.0.lock().get(n - 1) {
                return latest.clone();
            }
            assert!(Instant::now() < deadline, "no failure {n} within {WAIT:?}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

#[test]
fn a_background_put_not_stored_by_its_deadline_reaches_the_listener_and_the_next_flush_or_put_once() {
    let mut server = TestingServer::start().unwrap();
    let client = client_of(&server);
    let path = unique_path("put-outage-reported");
    let queue = QueueBuilder::new(&client, &path, StringSerializer)
        .put_in_background(true)
        .build_queue()
        .unwrap();
    let failures = Arc::new(Failures::default());
    queue.add_put_listener(Heard(Arc::clone(&failures)));

    // Accepted just after the server went away, it cannot be stored by its
    // deadline: a request timeout after it was accepted.
    stop(&mut server, &client);
    let accepted = Instant::now();
    queue.put("flushed".into()).unwrap();
    let (heard, items, error) = failures.wait_for(1);
    Bound::past(REQUEST_TIMEOUT, LATE_WHEN_DOWN).check("the listener heard of the failure", heard - accepted);
    assert_eq!(items, ["flushed"]);
    assert!(matches!(error, Error::Unreachable { .. }), "{error:?}");
    assert!(!queue.flush_timeout(WAIT), "the flush reports the failure");
    assert!(queue.flush_timeout(WAIT), "once");

    restart(&mut server, &client);
    queue.put("stored 1".into()).unwrap();
    assert!(queue.flush_timeout(WAIT), "nothing failed since");

    stop(&mut server, &client);
    let accepted = Instant::now();
    queue.put("reported by a put".into()).unwrap();
    let (heard, items, _) = failures.wait_for(2);
    Bound::past(REQUEST_TIMEOUT, LATE_WHEN_DOWN).check("the listener heard of the failure", heard - accepted);
    assert_eq!(items, ["reported by a put"]);
    // The server answers again: this put is refused only to report the
    // failure, and puts nothing.
    restart(&mut server, &client);
    let put = queue.put("not put".into());
    assert!(matches!(put, Err(Error::Unreachable { .. })), "{put:?}");
    queue.put("stored 2".into()).unwrap();
    assert!(queue.flush_timeout(WAIT), "once");

    let (names, _) = client.get_children(&path).unwrap();
    assert_eq!(
        names.len(),
        2,
        "only the puts that returned Ok and were not reported failed: {names:?}"
    );
    assert_eq!(queue.stats().put_failures, 2);
}

#[test]
fn background_puts_pending_at_close_or_drop_are_logged_at_warn_and_reported() {
    logs::start();
    let mut server = TestingServer::start().unwrap();
    let client = client_of(&server);
    let (closed, dropped) = (unique_path("put-outage-close"), unique_path("put-outage-drop"));
    let background = |path: &str| {
        QueueBuilder::new(&client, path, StringSerializer)
            .put_in_background(true)
            .final_flush(Duration::ZERO)
            .build_queue()
            .unwrap()
    };
    let (closing, dropping) = (background(&closed), background(&dropped));

    stop(&mut server, &client);
    closing.put("pending".into()).unwrap();
    dropping.put("pending".into()).unwrap();
    let report = closing.close();
    assert_eq!(report.puts_pending, 1, "{report:?}");
    drop(dropping);
    for path in [&closed, &dropped] {
        let lines = logs::lines_with(&format!("queue {path}: 1 background puts still pending"));
        assert!(
            lines.iter().any(|line| line.level == log::Level::Warn),
            "{path}: no WARN line: {lines:?}"
        );
    }
}
