//! A logger that prints as `env_logger` does (`RUST_LOG`) and counts the client's records at
//! WARN and above, so the scenario can hold the client to its logging promise: one line per
//! connection-state change, nothing above INFO for a clean close.

use std::sync::{Mutex, OnceLock};

use log::{Level, LevelFilter, Log, Metadata, Record};

/// The targets counted: the client's own modules.
const CLIENT_TARGET: &str = "zk_queue::client";

/// The installed logger.
static LOGGER: OnceLock<Loudness> = OnceLock::new();

/// The logger: `env_logger` for printing, and the client's loud lines.
pub struct Loudness {
    printer: env_logger::Logger,
    lines: Mutex<Vec<String>>,
}

impl Loudness {
    /// Installs the logger for the process; returns it.
    pub fn install() -> &'static Loudness {
        let logger = LOGGER.get_or_init(|| Loudness {
            printer: env_logger::Builder::from_default_env().build(),
            lines: Mutex::new(Vec::new()),
        });
        if log::set_logger(logger).is_ok() {
            // Records at WARN and above are always counted, whatever `RUST_LOG` prints.
            log::set_max_level(logger.printer.filter().max(LevelFilter::Warn));
        }
        logger
    }

    /// The client's records at WARN and above since the last call, as text.
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.lines.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

impl Log for Loudness {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.level() <= Level::Warn || self.printer.enabled(metadata)
    }

    fn log(&self, record: &Record<'_>) {
        if record.level() <= Level::Warn && record.target().starts_with(CLIENT_TARGET) {
            let line = format!("{} {}: {}", record.level(), record.target(), record.args());
            self.lines.lock().unwrap_or_else(|e| e.into_inner()).push(line);
        }
        if self.printer.matches(record) {
            self.printer.log(record);
        }
    }

    fn flush(&self) {
        self.printer.flush();
    }
}
