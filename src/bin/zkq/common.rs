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

/// Every character of `bytes` as text on one line: [`preview`] without a
/// limit, for `take`'s text output.
pub fn escaped(bytes: &[u8]) -> String {
    preview(bytes, usize::MAX)
}

/// The largest record whose JSON a `--json` preview shows whole.
pub const MAX_JSON_PREVIEW: usize = 4096;

/// A record as the `data` of an item under `--json`, and whether it was
/// cut: a record that is a JSON object or array is that JSON value itself
/// (its keys in their order), shown whole up to [`MAX_JSON_PREVIEW`] bytes
/// when `max` chars are asked for (a preview), always when not; anything
/// else (text, or JSON scalars, which read the same as text) is its text,
/// cut after `max` characters if `max` is given.
pub fn json_data(bytes: &[u8], max: Option<usize>) -> (serde_json::Value, bool) {
    if max.is_none() || bytes.len() <= MAX_JSON_PREVIEW {
        if let Ok(value @ (serde_json::Value::Object(_) | serde_json::Value::Array(_))) =
            serde_json::from_slice::<serde_json::Value>(bytes)
        {
            return (value, false);
        }
    }
    let text = String::from_utf8_lossy(bytes);
    match max {
        Some(max) if text.chars().count() > max => {
            let mut cut: String = text.chars().take(max).collect();
            cut.push('…');
            (serde_json::Value::String(cut), true)
        }
        _ => (serde_json::Value::String(text.into_owned()), false),
    }
}

/// An epoch time in milliseconds for the text output: the number, then in
/// brackets the time in ISO-8601 UTC and how far it is from `now`, e.g.
/// `1795895552544(2026-11-28T19:52:32.544Z, in 5m)`.
pub fn time_text(ms: i64, now: i64) -> String {
    format!("{ms}({}, {})", iso_utc(ms), relative(ms, now))
}

/// `ms` (milliseconds since the Unix epoch) in ISO-8601 UTC.
pub fn iso_utc(ms: i64) -> String {
    let (days, in_day) = (ms.div_euclid(86_400_000), ms.rem_euclid(86_400_000));
    // Days since 1970-01-01 to a civil date (proleptic Gregorian).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    let (hours, minutes) = (in_day / 3_600_000, in_day / 60_000 % 60);
    let (seconds, millis) = (in_day / 1000 % 60, in_day % 1000);
    format!("{year:04}-{month:02}-{day:02}T{hours:02}:{minutes:02}:{seconds:02}.{millis:03}Z")
}

/// How far `ms` is from `now`, in its largest whole unit: `in 5m`, `3s ago`,
/// `now` (within a second).
pub fn relative(ms: i64, now: i64) -> String {
    let apart = ms.saturating_sub(now);
    let seconds = apart.unsigned_abs() / 1000;
    if seconds == 0 {
        return "now".to_owned();
    }
    let amount = match seconds {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m", s / 60),
        s if s < 86_400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    };
    if apart > 0 {
        format!("in {amount}")
    } else {
        format!("{amount} ago")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_read_as_iso_utc_and_relative() {
        assert_eq!(iso_utc(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso_utc(1_795_895_552_544), "2026-11-28T19:52:32.544Z");
        assert_eq!(iso_utc(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(iso_utc(-1), "1969-12-31T23:59:59.999Z");
        assert_eq!(relative(1_000 + 300_000, 1_000), "in 5m");
        assert_eq!(relative(1_000, 4_000), "3s ago");
        assert_eq!(relative(1_000, 1_500), "now");
        assert_eq!(relative(90_000_000, 0), "in 1d");
    }
}
