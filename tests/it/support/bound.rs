//! The time bounds the tests assert: each a stated bound plus a load margin
//! proportional to it, never larger than it, so that a regression of the
//! bound's own size fails.
//!
//! The margin covers the scheduling delays of a loaded 2-core machine (the
//! suite passes with a second copy of it running beside it), which are no
//! delay of the code's: an eighth of the bound, at least [`MARGIN_FLOOR`]
//! (but never more than the bound). Where a call is given a deadline and
//! the stated bound is how late past it the call may return, the margin
//! guards the lateness alone ([`Bound::past`]). A bound that runs across
//! processes (a server expires a session, then another process's consumer
//! notices) waits on the scheduling of each of them, and has a quarter
//! ([`Bound::across_processes`]).

use std::fmt;
use std::time::Duration;

/// The least load margin: the scheduling delays of a timed call on this
/// 2-core machine with two busy loops beside the tests (calls past their
/// deadline with the server down or stalled returned up to 70 ms later than
/// their stated bound).
pub const MARGIN_FLOOR: Duration = Duration::from_millis(100);

/// The load margin is this fraction of the bound it guards.
const MARGIN_DIVISOR: u32 = 8;

/// The load margin of a bound across processes is this fraction of it.
const ACROSS_PROCESSES_DIVISOR: u32 = 4;

/// The stated bound of a call that returns without waiting on the server:
/// the time to be scheduled.
pub const AT_ONCE: Duration = MARGIN_FLOOR;

/// A stated time bound: `stated`, past `given` (a deadline the call was
/// given, which the load margin does not cover).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bound {
    given: Duration,
    stated: Duration,
    divisor: u32,
}

impl Bound {
    /// The stated bound `stated`, from the start of what it times.
    pub const fn of(stated: Duration) -> Bound {
        Bound {
            given: Duration::ZERO,
            stated,
            divisor: MARGIN_DIVISOR,
        }
    }

    /// The stated bound `stated` of something that runs across processes,
    /// each of which a loaded machine schedules late: its load margin is a
    /// quarter of it.
    pub const fn across_processes(stated: Duration) -> Bound {
        Bound {
            given: Duration::ZERO,
            stated,
            divisor: ACROSS_PROCESSES_DIVISOR,
        }
    }

    /// A call given `deadline` that may return at most `late` after it;
    /// the load margin guards `late`.
    pub const fn past(deadline: Duration, late: Duration) -> Bound {
        Bound {
            given: deadline,
            stated: late,
            divisor: MARGIN_DIVISOR,
        }
    }

    /// The load margin: an eighth of the stated bound (a quarter across
    /// processes), at least [`MARGIN_FLOOR`], never more than the stated
    /// bound.
    pub fn margin(self) -> Duration {
        (self.stated / self.divisor).max(MARGIN_FLOOR).min(self.stated)
    }

    /// What the test allows: the deadline given, the stated bound and its
    /// margin.
    pub fn allowed(self) -> Duration {
        self.given + self.stated + self.margin()
    }

    /// Whether `took` is within what is allowed.
    pub fn holds(self, took: Duration) -> bool {
        took <= self.allowed()
    }

    /// Asserts that `what` took at most what is allowed.
    #[track_caller]
    pub fn check(self, what: impl fmt::Display, took: Duration) {
        eprintln!("{what}: {took:?}, {self}");
        assert!(self.holds(took), "{what} took {took:?}: {self}");
    }
}

impl fmt::Display for Bound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "allowed {:?} (", self.allowed())?;
        if !self.given.is_zero() {
            write!(f, "deadline {:?} + ", self.given)?;
        }
        write!(f, "bound {:?} + load margin {:?})", self.stated, self.margin())
    }
}

impl From<Duration> for Bound {
    fn from(stated: Duration) -> Bound {
        Bound::of(stated)
    }
}

#[test]
fn the_margin_is_proportional_to_the_bound_and_never_larger() {
    let ms = Duration::from_millis;
    assert_eq!(Bound::of(ms(200)).margin(), ms(100));
    assert_eq!(Bound::of(ms(50)).margin(), ms(50));
    assert_eq!(Bound::of(ms(4000)).margin(), ms(500));
    assert_eq!(Bound::across_processes(ms(4000)).margin(), ms(1000));
    assert_eq!(Bound::past(ms(2000), ms(200)).allowed(), ms(2300));
    assert_eq!(
        Bound::past(ms(2000), ms(200)).to_string(),
        "allowed 2.3s (deadline 2s + bound 200ms + load margin 100ms)"
    );
}
