//! How every recipe's call ends when the server did not answer in time:
//! the crate's one vocabulary for an unreachable ensemble and a stalled
//! server, as the queues speak it.
//!
//! - No server can be asked when the call ends (the client is
//!   disconnected): [`Error::Unreachable`], however the requests on the way
//!   failed (a request in flight when the client gives a stalled
//!   connection up fails with `ConnectionLoss`, say).
//! - A connected server did not answer in time: [`Error::Timeout`], also
//!   when the connection of a request was lost and a new one is up by now.
//! - Waiting for its turn when the deadline came, the client connected:
//!   nothing held (`Ok(None)`, `Ok(false)`), and no error.
//!
//! Either error tells how long the call waited, not how long its last
//! request did.

use std::time::Instant;

use crate::client::ZkClient;
use crate::error::Error;

/// The error a recipe call that started at `started` reports for `err`,
/// the error its last request met: [`Error::Unreachable`] if no server can
/// be asked now, [`Error::Timeout`] (named `operation` unless a request's
/// timeout names its own) if the server did not answer a connected
/// client; any other error as it is.
pub(crate) fn call_error(client: &ZkClient, err: Error, started: Instant, operation: &'static str) -> Error {
    let unanswered = matches!(
        err,
        Error::ConnectionLoss { .. } | Error::Timeout { .. } | Error::Unreachable { .. }
    );
    if !unanswered {
        return err;
    }
    if !client.is_closed() && !client.state().is_connected() {
        return client.unreachable(started.elapsed());
    }
    match err {
        Error::ConnectionLoss { .. } => Error::Timeout {
            operation,
            after: started.elapsed(),
        },
        e => e.of_call_since(started),
    }
}

/// What a timed call that waited for its turn returns once its deadline
/// passed: `value`, or [`Error::Unreachable`] if no server can be asked
/// now (as every timed call).
pub(crate) fn unreachable_or<T>(client: &ZkClient, started: Instant, value: T) -> Result<T, Error> {
    if !client.is_closed() && !client.state().is_connected() {
        return Err(client.unreachable(started.elapsed()));
    }
    Ok(value)
}
