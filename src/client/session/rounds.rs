//! The rounds over the servers after a disconnection: each server once,
//! in a random order, each given a patience that grows while servers stay
//! silent, rounds starting a quarter to half a second apart, and the
//! failures of a round told by what each server said.

use std::time::{Duration, Instant};

use super::attach::{attach, left, Attached, Attempt};
use super::Link;
use crate::client::connect::with_port;
use crate::client::wire::ConnectRequest;
use crate::client::{ConnectCause, ServerFailure};

/// How long one server may take to connect and answer a handshake at
/// first, and at most.
const PATIENCE: (Duration, Duration) = (Duration::from_millis(500), Duration::from_secs(5));

/// How long one server may take to connect and answer a handshake: half a
/// second at first, doubled after each round in which a server stayed
/// silent, up to the server's share of the session timeout (at most 5 s).
/// A server that is still starting accepts connections it never answers,
/// so a short first wait lets the next round come soon after it is ready;
/// a slow server gets longer and longer waits.
pub(super) struct Patience {
    now: Duration,
    most: Duration,
}

impl Patience {
    /// The patience of a client of `servers` servers asking for
    /// `session_timeout`.
    pub(super) fn new(session_timeout: Duration, servers: usize) -> Patience {
        let share = session_timeout / servers.max(1) as u32;
        let most = share.clamp(PATIENCE.0, PATIENCE.1);
        Patience {
            now: PATIENCE.0.min(most),
            most,
        }
    }

    /// Waits longer after a round in which a server connected but did not
    /// answer, or did not connect in time.
    pub(super) fn after(&mut self, failures: &[ServerFailure]) {
        let silent = failures
            .iter()
            .any(|f| matches!(f.cause(), ConnectCause::NoSession | ConnectCause::TimedOut));
        if silent {
            self.now = (self.now * 2).min(self.most);
        }
    }
}

/// The gap between the starts of two rounds over the servers: at least this,
/// plus a jitter of up to as much again (so at most half a second).
const ROUND_GAP: Duration = Duration::from_millis(250);

/// How one round over the servers went.
pub(super) enum Round {
    /// A server took the session.
    Attached(Attached),
    /// A server said the session expired.
    Expired,
    /// No server took it; each one's failure.
    Failed(Vec<ServerFailure>),
}

/// Presents the session to each server once, in a random order, each within
/// the `patience` of the round (and `deadline`).
pub(super) fn round(link: &Link, deadline: Option<Instant>, patience: &Patience) -> Round {
    let mut order: Vec<usize> = (0..link.config.servers.len()).collect();
    fastrand::shuffle(&mut order);
    let (session_id, password) = {
        let state = link.state.lock();
        (state.session_id, state.password.clone())
    };
    let attempt = patience.now;
    let timeout_ms = i32::try_from(link.config.session_timeout.as_millis()).unwrap_or(i32::MAX);
    let mut failures = Vec::with_capacity(order.len());
    for &index in &order {
        let Some(server) = link.config.servers.get(index) else {
            continue;
        };
        if link.is_closed() {
            break;
        }
        let request = ConnectRequest {
            last_zxid: link.last_zxid.load(std::sync::atomic::Ordering::Relaxed),
            timeout_ms,
            session_id,
            password: &password,
            read_only: false,
        };
        let timeout = deadline.map_or(attempt, |d| attempt.min(left(d)));
        match attach(server, &link.config.security, &request, timeout) {
            Attempt::Attached(attached) => return Round::Attached(attached),
            Attempt::Expired => return Round::Expired,
            Attempt::Failed(cause) => failures.push((index, ServerFailure::new(with_port(server), cause))),
        }
    }
    // Reported in the connect string's order.
    failures.sort_by_key(|(index, _)| *index);
    Round::Failed(failures.into_iter().map(|(_, failure)| failure).collect())
}

/// The failures of a round, each server's told by what it said before when
/// it said nothing now: a server that answered the TLS handshake in a way
/// that tells why (it does not speak TLS) and then ran out of time in a
/// round cut short by the deadline keeps its earlier cause.
pub(super) fn telling(before: &[ServerFailure], now: Vec<ServerFailure>) -> Vec<ServerFailure> {
    now.into_iter()
        .map(|failure| {
            let silent = matches!(failure.cause(), ConnectCause::NoSession | ConnectCause::TimedOut);
            let told = before
                .iter()
                .find(|b| b.address() == failure.address() && told_why(b.cause()));
            match told {
                Some(told) if silent => told.clone(),
                _ => failure,
            }
        })
        .collect()
}

/// Whether `cause` tells more than silence would.
pub(super) fn told_why(cause: &ConnectCause) -> bool {
    match cause {
        #[cfg(feature = "tls")]
        ConnectCause::Tls(_) => true,
        _ => false,
    }
}

/// How long to wait after a round that started at `started` before the
/// next: rounds start 250 to 500 ms apart.
pub(super) fn round_pause(started: Instant) -> Duration {
    let gap = ROUND_GAP + ROUND_GAP.mul_f64(fastrand::f64());
    (started + gap).saturating_duration_since(Instant::now())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patience_doubles_after_a_silent_server_up_to_the_servers_share() {
        let mut patience = Patience::new(Duration::from_secs(4), 1);
        assert_eq!(patience.now, Duration::from_millis(500));
        patience.after(&[ServerFailure::new("a:1", ConnectCause::Refused)]);
        assert_eq!(patience.now, Duration::from_millis(500), "a refusal is an answer");
        for expected in [1_000, 2_000, 4_000, 4_000] {
            patience.after(&[ServerFailure::new("a:1", ConnectCause::NoSession)]);
            assert_eq!(patience.now, Duration::from_millis(expected));
        }
        let three = Patience::new(Duration::from_secs(30), 3);
        assert_eq!(three.most, Duration::from_secs(5));
        let short = Patience::new(Duration::from_secs(1), 3);
        assert_eq!(
            (short.now, short.most),
            (Duration::from_millis(500), Duration::from_millis(500))
        );
    }

    #[cfg(feature = "tls")]
    #[test]
    fn a_server_silent_at_the_deadline_keeps_the_tls_cause_it_told_before() {
        use crate::client::{TlsError, TlsErrorKind};
        let not_tls = ConnectCause::Tls(TlsError::new(TlsErrorKind::NotTls, ""));
        let before = [
            ServerFailure::new("a:1", not_tls.clone()),
            ServerFailure::new("b:1", ConnectCause::Refused),
        ];
        let now = vec![
            ServerFailure::new("a:1", ConnectCause::NoSession),
            ServerFailure::new("b:1", ConnectCause::NoSession),
        ];
        let told = telling(&before, now);
        assert_eq!(told[0].cause(), &not_tls);
        assert_eq!(told[1].cause(), &ConnectCause::NoSession, "only a tls cause tells more");
        let refused = vec![ServerFailure::new("a:1", ConnectCause::Refused)];
        assert_eq!(
            telling(&before, refused)[0].cause(),
            &ConnectCause::Refused,
            "a new answer wins"
        );
    }

    #[test]
    fn rounds_start_between_a_quarter_and_half_a_second_apart() {
        for _ in 0..100 {
            let pause = round_pause(Instant::now());
            assert!(pause <= Duration::from_millis(500), "{pause:?}");
            assert!(pause >= Duration::from_millis(240), "{pause:?}");
        }
    }
}
