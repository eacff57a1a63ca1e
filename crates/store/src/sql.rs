//! Small conversions shared by every table module: errors, timestamps, integers and JSON columns.

use chrono::DateTime;
use engram_core::{AgentId, Error, Result, Timestamp};
use rusqlite::types::Type;
use rusqlite::{Connection, ErrorCode, Row};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// Maps a SQLite error to the engine's error: unique-key violations are [`Error::Conflict`]
/// (an id or name that already exists), everything else is [`Error::Storage`].
pub(crate) fn db_error(e: rusqlite::Error) -> Error {
    if let rusqlite::Error::SqliteFailure(f, msg) = &e
        && f.code == ErrorCode::ConstraintViolation
    {
        let detail = msg.clone().unwrap_or_else(|| e.to_string());
        if matches!(
            f.extended_code,
            rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY | rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE
        ) {
            return Error::Conflict(format!("already exists ({detail})"));
        }
        return Error::Storage(format!("constraint failed: {detail}"));
    }
    Error::Storage(e.to_string())
}

/// `.db()?` converts rusqlite results at the call site.
pub(crate) trait DbResult<T> {
    /// The result with its error mapped by [`db_error`].
    fn db(self) -> Result<T>;
}

impl<T> DbResult<T> for rusqlite::Result<T> {
    fn db(self) -> Result<T> {
        self.map_err(db_error)
    }
}

/// A timestamp as stored: unix microseconds.
pub(crate) fn micros(t: Timestamp) -> i64 {
    t.timestamp_micros()
}

/// `t` cut to the microsecond precision the database keeps, so returned values equal reads.
pub(crate) fn truncate(t: Timestamp) -> Timestamp {
    DateTime::from_timestamp_micros(micros(t)).unwrap_or(t)
}

/// The current time, truncated like everything stored.
pub(crate) fn now() -> Timestamp {
    truncate(chrono::Utc::now())
}

/// Reads a microsecond timestamp column.
pub(crate) fn ts(row: &Row<'_>, idx: usize) -> rusqlite::Result<Timestamp> {
    let v: i64 = row.get(idx)?;
    DateTime::from_timestamp_micros(v).ok_or_else(|| {
        rusqlite::Error::FromSqlConversionFailure(
            idx,
            Type::Integer,
            format!("timestamp out of range: {v}").into(),
        )
    })
}

/// Reads a JSON text column into `T`.
pub(crate) fn json<T: DeserializeOwned>(row: &Row<'_>, idx: usize) -> rusqlite::Result<T> {
    let text: String = row.get(idx)?;
    serde_json::from_str(&text)
        .map_err(|e| rusqlite::Error::FromSqlConversionFailure(idx, Type::Text, Box::new(e)))
}

/// Reads a nullable JSON text column into `Option<T>`.
pub(crate) fn json_opt<T: DeserializeOwned>(
    row: &Row<'_>,
    idx: usize,
) -> rusqlite::Result<Option<T>> {
    let text: Option<String> = row.get(idx)?;
    text.map(|t| {
        serde_json::from_str(&t)
            .map_err(|e| rusqlite::Error::FromSqlConversionFailure(idx, Type::Text, Box::new(e)))
    })
    .transpose()
}

/// Serializes a value for a JSON text column.
pub(crate) fn to_json<T: Serialize + ?Sized>(v: &T) -> Result<String> {
    serde_json::to_string(v).map_err(|e| Error::Internal(format!("cannot serialize: {e}")))
}

/// An unsigned count as a SQLite integer; `what` names the field in the error.
pub(crate) fn int(v: u64, what: &str) -> Result<i64> {
    i64::try_from(v).map_err(|_| Error::invalid(format!("{what} is too large: {v}")))
}

/// A `usize` (limits, offsets) as a SQLite integer, saturating: used for LIMIT/OFFSET values
/// where "more than i64::MAX" means "all".
pub(crate) fn sat(v: usize) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// Reads a non-negative integer column as `u64`.
pub(crate) fn uint(row: &Row<'_>, idx: usize) -> rusqlite::Result<u64> {
    let v: i64 = row.get(idx)?;
    u64::try_from(v)
        .map_err(|e| rusqlite::Error::FromSqlConversionFailure(idx, Type::Integer, Box::new(e)))
}

/// Row keys as a JSON array (`[3,1,2]`), for `json_each` in a statement that takes a list of
/// candidates at once.
pub(crate) fn json_keys(keys: impl IntoIterator<Item = i64>) -> String {
    use std::fmt::Write;
    let mut list = String::from("[");
    for (i, k) in keys.into_iter().enumerate() {
        if i > 0 {
            list.push(',');
        }
        let _ = write!(list, "{k}");
    }
    list.push(']');
    list
}

/// Fails with `NotFound("agent", id)` unless the agent exists.
pub(crate) fn ensure_agent(conn: &Connection, id: &AgentId) -> Result<()> {
    let found = conn
        .prepare_cached("SELECT 1 FROM agents WHERE id = ?1")
        .db()?
        .exists([id.as_str()])
        .db()?;
    if found {
        Ok(())
    } else {
        Err(Error::not_found("agent", id.as_str()))
    }
}
