//! Reading tool arguments leniently but with clear errors for the model.

use chrono::{DateTime, NaiveDate, Utc};
use serde_json::{Map, Value};

/// A call's parsed arguments object.
pub(super) struct Args(Map<String, Value>);

impl Args {
    /// Parses the raw JSON text; anything but an object is an error the model can fix.
    pub(super) fn parse(raw: &str) -> Result<Self, String> {
        let raw = if raw.trim().is_empty() { "{}" } else { raw };
        match serde_json::from_str::<Value>(raw) {
            Ok(Value::Object(map)) => Ok(Self(map)),
            Ok(_) => Err("The arguments must be a JSON object.".into()),
            Err(e) => Err(format!(
                "Could not parse the arguments as JSON ({e}). Call the tool again with a valid JSON object."
            )),
        }
    }

    /// The arguments as a JSON object, without the loop's `request_heartbeat` (a user tool's
    /// function does not take it).
    pub(super) fn without_heartbeat(&self) -> Value {
        let mut map = self.0.clone();
        map.remove("request_heartbeat");
        Value::Object(map)
    }

    fn get(&self, names: &[&str]) -> Option<&Value> {
        names
            .iter()
            .find_map(|n| self.0.get(*n))
            .filter(|v| !v.is_null())
    }

    /// An argument as given (`None` when absent or null).
    pub(super) fn value(&self, name: &str) -> Option<&Value> {
        self.get(&[name])
    }

    /// The argument names given, in the model's order (`request_heartbeat` left out).
    pub(super) fn names(&self) -> Vec<&str> {
        self.0
            .keys()
            .map(String::as_str)
            .filter(|k| *k != "request_heartbeat")
            .collect()
    }

    /// A required string argument.
    pub(super) fn str(&self, name: &str) -> Result<&str, String> {
        self.str_any(&[name])
    }

    /// A required string argument that has several accepted spellings (the first is named in
    /// errors), e.g. `old_str` / `old_string`.
    pub(super) fn str_any(&self, names: &[&str]) -> Result<&str, String> {
        match self.get(names) {
            Some(Value::String(s)) => Ok(s),
            Some(other) => Err(format!(
                "Argument '{}' must be a string, not {other}.",
                names[0]
            )),
            None => Err(format!("Missing required argument '{}'.", names[0])),
        }
    }

    /// An optional string argument.
    pub(super) fn opt_str(&self, name: &str) -> Result<Option<&str>, String> {
        match self.get(&[name]) {
            None => Ok(None),
            Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(format!("Argument '{name}' must be a string, not {other}.")),
        }
    }

    /// An optional integer argument (numbers given as strings are accepted).
    pub(super) fn opt_int(&self, name: &str) -> Result<Option<i64>, String> {
        match self.get(&[name]) {
            None => Ok(None),
            Some(Value::Number(n)) => n
                .as_i64()
                .map(Some)
                .ok_or_else(|| format!("Argument '{name}' must be an integer.")),
            Some(Value::String(s)) => s
                .trim()
                .parse()
                .map(Some)
                .map_err(|_| format!("Argument '{name}' must be an integer.")),
            Some(other) => Err(format!(
                "Argument '{name}' must be an integer, not {other}."
            )),
        }
    }

    /// An optional list of strings (a single string counts as a list of one).
    pub(super) fn opt_strings(&self, name: &str) -> Result<Vec<String>, String> {
        match self.get(&[name]) {
            None => Ok(Vec::new()),
            Some(Value::String(s)) => Ok(vec![s.clone()]),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| {
                    v.as_str()
                        .map(str::to_owned)
                        .ok_or_else(|| format!("Argument '{name}' must be a list of strings."))
                })
                .collect(),
            Some(other) => Err(format!(
                "Argument '{name}' must be a list of strings, not {other}."
            )),
        }
    }

    /// An optional date or datetime. A bare date means the start of that day, or with
    /// `end_of_day` its last moment, so `end_date=2026-11-21` includes that whole day.
    pub(super) fn opt_time(
        &self,
        name: &str,
        end_of_day: bool,
    ) -> Result<Option<DateTime<Utc>>, String> {
        let Some(text) = self.opt_str(name)? else {
            return Ok(None);
        };
        parse_time(text, end_of_day)
            .map(Some)
            .ok_or_else(|| format!("Argument '{name}' must be an ISO 8601 date or datetime like 2026-11-21 or 2026-11-21T14:00:00Z, not '{text}'."))
    }

    /// An optional boolean (`"true"`/`"false"` as strings are accepted).
    pub(super) fn opt_bool(&self, name: &str) -> Result<Option<bool>, String> {
        match self.get(&[name]) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(Value::String(s)) if s.eq_ignore_ascii_case("true") => Ok(Some(true)),
            Some(Value::String(s)) if s.eq_ignore_ascii_case("false") => Ok(Some(false)),
            Some(other) => Err(format!(
                "Argument '{name}' must be true or false, not {other}."
            )),
        }
    }

    /// Classic loop: whether the model asked for another step.
    pub(super) fn heartbeat(&self) -> bool {
        match self.0.get("request_heartbeat") {
            Some(Value::Bool(b)) => *b,
            Some(Value::String(s)) => s.eq_ignore_ascii_case("true"),
            _ => false,
        }
    }
}

fn parse_time(text: &str, end_of_day: bool) -> Option<DateTime<Utc>> {
    let text = text.trim();
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Some(t.to_utc());
    }
    if let Ok(t) = chrono::NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S")
        .or_else(|_| chrono::NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S"))
    {
        return Some(t.and_utc());
    }
    let day = NaiveDate::parse_from_str(text, "%Y-%m-%d").ok()?;
    let time = if end_of_day {
        day.and_hms_micro_opt(23, 59, 59, 999_999)?
    } else {
        day.and_hms_opt(0, 0, 0)?
    };
    Some(time.and_utc())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_spellings_are_accepted() {
        let a = Args::parse(r#"{"old_string": "x"}"#).unwrap();
        assert_eq!(a.str_any(&["old_str", "old_string"]).unwrap(), "x");
        let err = Args::parse("{}")
            .unwrap()
            .str_any(&["old_str", "old_string"])
            .unwrap_err();
        assert_eq!(err, "Missing required argument 'old_str'.");
    }

    #[test]
    fn malformed_json_is_explained() {
        let err = Args::parse(r#"{"label": "human", "content": "#)
            .err()
            .unwrap();
        assert!(err.starts_with("Could not parse the arguments as JSON"));
    }

    #[test]
    fn dates_cover_whole_days() {
        let a = Args::parse(r#"{"end": "2026-11-21", "start": "2026-11-21T10:00:00Z"}"#).unwrap();
        assert_eq!(
            a.opt_time("end", true).unwrap().unwrap().to_rfc3339(),
            "2026-11-21T23:59:59.999999+00:00"
        );
        assert_eq!(
            a.opt_time("start", false).unwrap().unwrap().to_rfc3339(),
            "2026-11-21T10:00:00+00:00"
        );
        assert!(
            Args::parse(r#"{"d": "yesterday"}"#)
                .unwrap()
                .opt_time("d", false)
                .is_err()
        );
    }

    #[test]
    fn heartbeat_accepts_strings() {
        assert!(
            Args::parse(r#"{"request_heartbeat": "true"}"#)
                .unwrap()
                .heartbeat()
        );
        assert!(!Args::parse("{}").unwrap().heartbeat());
    }
}
