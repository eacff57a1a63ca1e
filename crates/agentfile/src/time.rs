//! Reading the timestamps agent files carry: RFC 3339, or a naive ISO time meaning UTC (older
//! Letta versions wrote `2025-04-01T03:47:27.492924` without an offset).

use crate::errors::AgentFileError;
use chrono::{DateTime, NaiveDateTime, Utc};
use engram_core::Timestamp;

/// Parses `text` found at `path`. Errors: `Invalid` naming the path for unreadable times.
pub(crate) fn parse_time(text: &str, path: &str) -> Result<Timestamp, AgentFileError> {
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Ok(t.with_timezone(&Utc));
    }
    for format in ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f"] {
        if let Ok(t) = NaiveDateTime::parse_from_str(text, format) {
            return Ok(t.and_utc());
        }
    }
    Err(AgentFileError::invalid(
        path,
        format!("{text:?} is not a date and time (expected RFC 3339)"),
    ))
}

/// Parses an optional time, falling back to `fallback` when absent.
pub(crate) fn time_or(
    text: Option<&str>,
    path: &str,
    fallback: Timestamp,
) -> Result<Timestamp, AgentFileError> {
    text.map_or(Ok(fallback), |t| parse_time(t, path))
}

/// RFC 3339 with microseconds and `Z`, the form Engram writes.
pub(crate) fn show(t: Timestamp) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn naive_and_offset_times_read_as_utc() {
        let a = parse_time("2025-04-01T03:47:27.492924", "x").unwrap();
        let b = parse_time("2025-04-01T03:47:27.492924+00:00", "x").unwrap();
        assert_eq!(a, b);
        assert_eq!(
            parse_time("2025-04-01T03:47:27", "x").unwrap().timestamp(),
            a.timestamp()
        );
        assert_eq!(parse_time("soon", "a.b").unwrap_err().path(), Some("a.b"));
    }
}
