//! Log records of this test process, captured so tests can check what an
//! operator would see.

use std::sync::{Mutex, OnceLock};

/// One captured log record.
#[derive(Clone, Debug)]
pub struct Line {
    pub level: log::Level,
    pub message: String,
}

struct Capture(Mutex<Vec<Line>>);

impl log::Log for Capture {
    fn enabled(&self, metadata: &log::Metadata) -> bool {
        metadata.level() <= log::Level::Info && metadata.target().starts_with("zk_queue")
    }

    fn log(&self, record: &log::Record) {
        if self.enabled(record.metadata()) {
            let line = Line {
                level: record.level(),
                message: record.args().to_string(),
            };
            self.0.lock().unwrap_or_else(|e| e.into_inner()).push(line);
        }
    }

    fn flush(&self) {}
}

static CAPTURE: OnceLock<&'static Capture> = OnceLock::new();

/// Starts capturing the crate's records at INFO and above (once per
/// process); returns the capture.
fn capture() -> &'static Capture {
    CAPTURE.get_or_init(|| {
        let capture: &'static Capture = Box::leak(Box::new(Capture(Mutex::new(Vec::new()))));
        log::set_logger(capture).expect("no other logger in the test process");
        log::set_max_level(log::LevelFilter::Info);
        capture
    })
}

/// Starts capturing, if not yet started.
pub fn start() {
    capture();
}

/// The captured lines whose message contains `needle` (a test's unique path).
pub fn lines_with(needle: &str) -> Vec<Line> {
    let lines = capture().0.lock().unwrap_or_else(|e| e.into_inner());
    lines.iter().filter(|l| l.message.contains(needle)).cloned().collect()
}
