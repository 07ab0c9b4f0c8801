//! Connection, duration parsing, listing and output helpers.

use std::time::Duration;

use anyhow::{bail, Context as _};
use serde::Serialize;
use zk_queue::inspect::Listing;
use zk_queue::{client::RetryNTimes, DeliverAt, ZkClient};

/// The client and output mode shared by subcommands.
pub struct Context {
    pub client: ZkClient,
    pub json: bool,
    /// The connect string, for four-letter words.
    pub connect: String,
    /// The session timeout, which bounds each four-letter word too.
    pub timeout: Duration,
}

impl Context {
    /// Connects; the client fails at once when every server of `connect`
    /// refuses the connection or does not resolve, naming each.
    pub fn connect(connect: &str, timeout: Duration, auth: Option<&str>, json: bool) -> anyhow::Result<Context> {
        if let Some(auth) = auth {
            if !auth.contains(':') {
                bail!("--auth must be user:password");
            }
        }
        let mut builder = ZkClient::builder(connect)
            .session_timeout(timeout)
            .connection_timeout(timeout)
            .request_timeout(timeout)
            .retry_policy(RetryNTimes::new(2, Duration::from_millis(200)));
        if let Some(auth) = auth {
            builder = builder.add_auth("digest", auth.as_bytes());
        }
        let client = builder
            .connect()
            .with_context(|| format!("cannot connect to {connect}"))?;
        Ok(Context {
            client,
            json,
            connect: connect.to_owned(),
            timeout,
        })
    }

    /// Prints `value` as one line of JSON on stdout.
    pub fn print_json(&self, value: &impl Serialize) -> anyhow::Result<()> {
        println!("{}", serde_json::to_string(value)?);
        Ok(())
    }
}

/// Parses `10s`, `500ms`, `2m`, `1h` or a bare number of seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number.parse().map_err(|_| format!("invalid duration {text:?}"))?;
    let seconds = match unit {
        "" | "s" => number,
        "ms" => number / 1000.0,
        "m" => number * 60.0,
        "h" => number * 3600.0,
        _ => return Err(format!("invalid duration unit {unit:?} (use ms, s, m or h)")),
    };
    Duration::try_from_secs_f64(seconds).map_err(|e| format!("invalid duration {text:?}: {e}"))
}

/// Lists `path`'s children, split into items in consumption order and the
/// rest.
pub fn list(ctx: &Context, path: &str) -> anyhow::Result<Listing> {
    let (names, _) = ctx.client.get_children(path)?;
    Ok(Listing::of(names, None))
}

/// Milliseconds since the Unix epoch now, by the library's clock.
pub fn now_ms() -> i64 {
    DeliverAt::now().epoch_millis()
}

/// Prints an error: `zkq: <message>` on stderr, or under `--json` the
/// object `{"error": "<message>"}` on stdout.
pub fn print_error(json: bool, message: &str) {
    if json {
        println!("{}", serde_json::json!({ "error": message }));
    } else {
        eprintln!("zkq: {message}");
    }
}

/// Up to `max` characters of `bytes` as text for a one-line preview: the
/// text as it is (quotes and backslashes too), only line breaks, tabs and
/// other control characters escaped so that it stays on one line.
pub fn preview(bytes: &[u8], max: usize) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut out = String::new();
    for c in text.chars().take(max) {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    if text.chars().count() > max {
        out.push('…');
    }
    out
}

/// The largest record whose JSON a `--json` preview shows whole.
pub const MAX_JSON_PREVIEW: usize = 4096;

/// A record's preview under `--json`: a record that is a JSON object or
/// array of at most [`MAX_JSON_PREVIEW`] bytes is that JSON value itself;
/// anything else (text, or JSON scalars, which read the same as text) is
/// the [`preview`] string.
pub fn json_preview(bytes: &[u8], max: usize) -> serde_json::Value {
    if bytes.len() <= MAX_JSON_PREVIEW {
        if let Ok(value @ (serde_json::Value::Object(_) | serde_json::Value::Array(_))) =
            serde_json::from_slice::<serde_json::Value>(bytes)
        {
            return value;
        }
    }
    serde_json::Value::String(preview(bytes, max))
}
