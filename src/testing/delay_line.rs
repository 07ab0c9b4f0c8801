//! A delay line for the fault proxy: chunks put into it are written to the
//! stream `delay` after they went in, in order, like a link with latency
//! but no bandwidth limit. Chunks sent together arrive together; a chunk
//! does not wait for the one before it to have waited.

use std::io::Write;
use std::net::TcpStream;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::Sender;

pub(super) struct DelayLine {
    tx: Option<Sender<(Instant, Vec<u8>)>>,
    writer: Option<JoinHandle<()>>,
}

impl DelayLine {
    /// A line writing to `to` on a thread of its own.
    pub(super) fn new(mut to: TcpStream) -> std::io::Result<DelayLine> {
        let (tx, rx) = crossbeam_channel::unbounded::<(Instant, Vec<u8>)>();
        let writer = std::thread::Builder::new()
            .name("zk-fault-proxy-delay".into())
            .spawn(move || {
                for (due, bytes) in rx {
                    if let Some(wait) = due.checked_duration_since(Instant::now()) {
                        std::thread::sleep(wait);
                    }
                    if to.write_all(&bytes).is_err() {
                        break;
                    }
                }
            })?;
        Ok(DelayLine {
            tx: Some(tx),
            writer: Some(writer),
        })
    }

    /// Writes `bytes` `delay` from now, after every chunk put in before.
    pub(super) fn send(&self, bytes: Vec<u8>, delay: Duration) {
        if let Some(tx) = &self.tx {
            let _ = tx.send((Instant::now() + delay, bytes));
        }
    }

    /// Waits until every chunk put in was written (or the stream failed).
    pub(super) fn drain(mut self) {
        drop(self.tx.take());
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
    }
}
