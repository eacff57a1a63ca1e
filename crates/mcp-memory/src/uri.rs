//! Resource URIs of memory files: `engram-memory:///memories/human.md`.

/// The scheme and empty authority before a file's path.
pub const URI_PREFIX: &str = "engram-memory://";

/// The URI of the file at `path`.
pub fn uri_of(path: &str) -> String {
    format!("{URI_PREFIX}{path}")
}

/// The path of a memory file's URI; `None` for any other URI.
pub fn path_of(uri: &str) -> Option<&str> {
    uri.strip_prefix(URI_PREFIX)
}
