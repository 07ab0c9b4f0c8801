//! The queue's side of an [`ItemReceiver`](super::ItemReceiver): where the
//! dispatcher hands deliveries to the takers and hears their answers, and
//! where the queue reports errors to them.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crossbeam_channel::{Receiver, Sender};
use parking_lot::Mutex;

use super::delivery::{Answer, Delivery};
use crate::error::Error;
use crate::queue::ItemMeta;

/// The queue's side of an [`ItemReceiver`](super::ItemReceiver): the dispatcher hands deliveries
/// to takers through it and hears their answers.
pub(crate) struct PullConsumer<T> {
    pub(super) deliveries: Sender<Delivery<T>>,
    /// Every delivery's answer, numbered.
    pub(super) answers: (Sender<Answer>, Receiver<Answer>),
    pub(super) closing: Arc<AtomicBool>,
    /// The latest denial not yet returned to a taker.
    pub(super) denied: Arc<Mutex<Option<Denial>>>,
    /// Every error reported, for [`ItemReceiver::errors`](super::ItemReceiver::errors).
    pub(super) errors: Sender<Error>,
}

/// How many reported errors [`ItemReceiver::errors`](super::ItemReceiver::errors)
/// keeps unread.
pub(super) const UNREAD_ERRORS: usize = 256;

/// A denial not yet returned to a taker.
pub(super) struct Denial {
    pub(super) error: Error,
    /// Met by a transaction (an acknowledge, a requeue or a dead-letter
    /// move), rather than by listing or claiming.
    pub(super) in_transaction: bool,
}

/// A copy, for a taker, of an error that retrying cannot cure: this client
/// may not use the queue's nodes.
fn denial(error: &Error) -> Option<Error> {
    match error {
        Error::NotAuthorized { .. } | Error::AuthFailed => Some(error.clone()),
        Error::MultiFailed { source, .. } => denial(source),
        _ => None,
    }
}

impl<T> PullConsumer<T> {
    /// Where deliveries go to the takers.
    pub(crate) fn deliveries(&self) -> &Sender<Delivery<T>> {
        &self.deliveries
    }

    /// The takers' answers.
    pub(crate) fn answers(&self) -> &Receiver<Answer> {
        &self.answers.1
    }

    /// A delivery of `item`, described by `meta` and numbered `id`, whose
    /// answer comes back through [`answers`](Self::answers).
    ///
    /// The queue could list and claim the item, so an earlier denial of
    /// those is over (one of an acknowledge or a move still stands).
    pub(crate) fn delivery(&self, id: u64, item: T, meta: ItemMeta) -> Delivery<T> {
        self.denied.lock().take_if(|d| !d.in_transaction);
        Delivery::new(item, meta, id, self.answers.0.clone())
    }

    /// Withdraws a delivery no taker took: it answers nothing.
    pub(crate) fn withdraw(delivery: Delivery<T>) {
        delivery.withdraw();
    }

    /// Records an error for the takers (see
    /// [`ItemReceiver::errors`](super::ItemReceiver::errors)).
    pub(crate) fn error(&self, error: &Error) {
        if let Some(denied) = denial(error) {
            *self.denied.lock() = Some(Denial {
                error: denied,
                in_transaction: matches!(error, Error::MultiFailed { .. }),
            });
        }
        if self.errors.try_send(error.clone()).is_err() {
            log::debug!("item receiver: {UNREAD_ERRORS} errors unread; dropping: {error}");
        }
    }

    /// Another queue's side of the same receiver (a shard's, of a sharded
    /// queue): its deliveries reach the same takers, which answer it on its
    /// own channel; its errors and denials reach them too. Its closing does
    /// not close the receiver: the first consumer's does.
    pub(crate) fn sibling(&self) -> PullConsumer<T> {
        PullConsumer {
            deliveries: self.deliveries.clone(),
            answers: crossbeam_channel::unbounded(),
            closing: Arc::new(AtomicBool::new(false)),
            denied: Arc::clone(&self.denied),
            errors: self.errors.clone(),
        }
    }

    /// The queue is closing: takes fail with [`Error::QueueClosed`].
    pub(crate) fn closing(&self) {
        self.closing.store(true, Ordering::Release);
    }
}
