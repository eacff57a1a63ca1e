//! Bytes → [`AgentFile`]: size check, JSON (decoded twice when the file is a JSON string that
//! holds the JSON, as some published files are), version detection, typed models. Every error
//! names the JSON path where reading stopped.

use crate::errors::AgentFileError;
use crate::extension::EXTENSION_VERSION;
use crate::v1::AgentFileV1;
use crate::v2::AgentFileV2;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Files larger than this (64 MiB) are refused before parsing.
pub const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// A parsed agent file of either version.
#[derive(Clone, Debug, PartialEq)]
pub enum AgentFile {
    /// Letta 0.6–0.10: one flat agent.
    V1(Box<AgentFileV1>),
    /// Letta 0.11 and later, and Engram: agents, blocks and tools with file-local ids.
    V2(Box<AgentFileV2>),
}

/// `$` for the root, else serde_path_to_error's `a[0].b` form.
fn show(path: &serde_path_to_error::Path) -> String {
    let s = path.to_string();
    if s == "." { "$".to_owned() } else { s }
}

/// Parses JSON text into a `Value`, tracking the path for syntax errors (truncation, bad
/// tokens, nesting beyond serde_json's recursion limit of 128) and refusing trailing data.
fn read_value(bytes: &[u8], note: &str) -> Result<Value, AgentFileError> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value: Value =
        serde_path_to_error::deserialize(&mut de).map_err(|e| AgentFileError::Syntax {
            path: show(e.path()),
            message: format!("{note}{}", e.inner()),
        })?;
    de.end().map_err(|e| AgentFileError::Syntax {
        path: "$".into(),
        message: format!("{note}{e}"),
    })?;
    Ok(value)
}

fn typed<T: DeserializeOwned>(value: Value) -> Result<T, AgentFileError> {
    serde_path_to_error::deserialize(value).map_err(|e| AgentFileError::Shape {
        path: show(e.path()),
        message: e.inner().to_string(),
    })
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Reads an agent file.
///
/// Errors: [`AgentFileError::TooLarge`] over [`MAX_FILE_BYTES`]; `Syntax` for text that is not
/// JSON; `UnknownVersion` for JSON that is not an agent file, a v1 `version` that is not a
/// Letta 0.x version, or an `engram` extension of another version; `Shape` for wrong types
/// or missing required fields (with the path, e.g. `agents[0].messages[3].role`).
pub fn parse(bytes: &[u8]) -> Result<AgentFile, AgentFileError> {
    let size = bytes.len() as u64;
    if size > MAX_FILE_BYTES {
        return Err(AgentFileError::TooLarge {
            size,
            limit: MAX_FILE_BYTES,
        });
    }
    let mut value = read_value(bytes, "")?;
    if let Value::String(inner) = &value {
        value = read_value(
            inner.as_bytes(),
            "in the JSON held by the top-level string: ",
        )?;
    }
    let Value::Object(map) = &value else {
        return Err(AgentFileError::UnknownVersion {
            path: "$".into(),
            message: format!("expected a JSON object, found {}", type_name(&value)),
        });
    };
    if map.get("format").and_then(Value::as_str) == Some("engram-export") {
        return Err(AgentFileError::Report);
    }
    if map.contains_key("agents") {
        if let Some(ext) = map.get("engram").filter(|e| !e.is_null()) {
            let version = ext.get("version");
            if version.and_then(Value::as_u64) != Some(u64::from(EXTENSION_VERSION)) {
                return Err(AgentFileError::UnknownVersion {
                    path: "engram.version".into(),
                    message: format!(
                        "Engram extension version {} (this Engram reads version {EXTENSION_VERSION})",
                        version.map_or_else(|| "missing".to_owned(), Value::to_string)
                    ),
                });
            }
        }
        return Ok(AgentFile::V2(Box::new(typed(value)?)));
    }
    if map.contains_key("core_memory") || map.contains_key("in_context_message_indices") {
        if let Some(v) = map.get("version").filter(|v| !v.is_null()) {
            let major = v.as_str().and_then(|s| s.split('.').next());
            if major != Some("0") {
                return Err(AgentFileError::UnknownVersion {
                    path: "version".into(),
                    message: format!(
                        "version {v} is not a v1 agent file (Letta 0.x) this Engram can read"
                    ),
                });
            }
        }
        return Ok(AgentFile::V1(Box::new(typed(value)?)));
    }
    Err(AgentFileError::UnknownVersion {
        path: "$".into(),
        message: "not an agent file: expected `agents` (v2) or `core_memory` and \
                  `in_context_message_indices` (v1)"
            .into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrong_types_name_their_path() {
        let e =
            parse(br#"{"agents":[{"id":"agent-0","messages":[{"role":"user"},{"role":"boss"}]}]}"#)
                .unwrap_err();
        assert_eq!(e.path(), Some("agents[0].messages[1].role"), "{e}");
    }

    #[test]
    fn truncated_and_deep_json_are_syntax_errors() {
        let e = parse(br#"{"agents":[{"id":"agent-0","name":"x"#).unwrap_err();
        assert!(matches!(e, AgentFileError::Syntax { .. }), "{e}");
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        let e = parse(deep.as_bytes()).unwrap_err();
        assert!(e.to_string().contains("recursion limit"), "{e}");
    }

    #[test]
    fn double_encoded_files_are_read() {
        let inner = r#"{"agents":[],"blocks":[]}"#;
        let outer = serde_json::to_string(inner).unwrap();
        assert!(matches!(parse(outer.as_bytes()), Ok(AgentFile::V2(_))));
    }

    #[test]
    fn unknown_versions_are_refused() {
        let e = parse(br#"{"version":"7.0.0","core_memory":[]}"#).unwrap_err();
        assert_eq!(e.path(), Some("version"));
        let e = parse(br#"{"agents":[],"engram":{"version":9}}"#).unwrap_err();
        assert_eq!(e.path(), Some("engram.version"));
        assert!(parse(br#"{"hello":1}"#).is_err());
        assert!(parse(b"[1,2]").is_err());
    }

    #[test]
    fn the_json_report_is_refused_as_a_report() {
        let e = parse(br#"{"format":"engram-export","version":1,"agents":[]}"#).unwrap_err();
        assert_eq!(e, AgentFileError::Report);
        assert!(e.to_string().contains("read-only report"), "{e}");
        assert!(e.to_string().contains(".af"), "{e}");
    }
}
