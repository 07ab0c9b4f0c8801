//! Without the `metrics` feature: the same calls as `record`, doing nothing.
//! Every method is an empty inline function, so the call sites compile to
//! nothing.

use std::time::SystemTime;

use super::Sample;

/// A queue's metrics: none.
#[derive(Debug, Default)]
pub(crate) struct QueueMetrics;

impl QueueMetrics {
    #[inline(always)]
    pub(crate) fn put(&self, _items: usize) {}
    #[inline(always)]
    pub(crate) fn put_failed(&self, _items: usize) {}
    #[inline(always)]
    pub(crate) fn puts_pending(&self, _pending: usize) {}
    #[inline(always)]
    pub(crate) fn taken(&self, _acknowledged: bool, _put_at: SystemTime) {}
    #[inline(always)]
    pub(crate) fn requeued(&self, _attempt: u32) {}
    #[inline(always)]
    pub(crate) fn dead_lettered(&self) {}
    #[inline(always)]
    pub(crate) fn lease_lost(&self) {}
}

/// A queue's sampler: none.
#[derive(Debug, Default)]
pub(crate) struct Sampler;

impl Sampler {
    #[inline(always)]
    pub(crate) fn start(
        _metrics: &QueueMetrics,
        _path: &str,
        _sample: impl Fn() -> Sample + Send + 'static,
    ) -> Sampler {
        Sampler
    }
    #[inline(always)]
    pub(crate) fn stop(&mut self) {}
}

/// A client's metrics: none.
#[derive(Debug, Default)]
pub(crate) struct ClientMetrics;

impl ClientMetrics {
    #[inline(always)]
    pub(crate) fn new(_connect_string: &str) -> ClientMetrics {
        ClientMetrics
    }
    #[inline(always)]
    pub(crate) fn connected(&self, _connected: bool) {}
    #[inline(always)]
    pub(crate) fn reconnected(&self) {}
    #[inline(always)]
    pub(crate) fn session_lost(&self) {}
    #[inline(always)]
    pub(crate) fn closed(&self) {}
    #[inline(always)]
    pub(crate) fn answered(&self, _operation: &'static str, _started: std::time::Instant) {}
}
