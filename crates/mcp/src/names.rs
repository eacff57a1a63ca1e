//! How a server's tools are named in Engram.
//!
//! Tool names share one namespace (built-ins, Python tools, every server's tools), and
//! providers accept only `[A-Za-z0-9_]`, at most 64 characters. So a server's tool is offered
//! to the model as `<server>__<tool>`: the server's name (an identifier without `__`), two
//! underscores, and the server's tool name with every other character turned into `_`. Two
//! servers never collide (their names differ), a built-in never collides (no built-in has
//! `__`), and a name too long is cut and given 8 hex digits of a hash of the original, so it
//! stays unique.

/// Longest server name, in characters (leaves room for the tool's part).
pub const MAX_SERVER_NAME: usize = 32;

/// Longest tool name providers accept, in characters.
const MAX_TOOL_NAME: usize = 64;

/// Whether `name` can name a server: 1–32 ASCII letters, digits and `_`, starting with a
/// letter, without `__` (which separates server and tool in tool names).
pub fn valid_server_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic())
        && name.len() <= MAX_SERVER_NAME
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.contains("__")
}

/// A valid server name made from any text (an imported config's key such as `brave-search`):
/// other characters become `_`, runs of `_` collapse, a leading non-letter gets `mcp_`, and
/// it is cut to [`MAX_SERVER_NAME`]. Empty input gives `mcp`.
pub fn server_name_from(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        let c = if c.is_ascii_alphanumeric() { c } else { '_' };
        if c == '_' && out.ends_with('_') {
            continue;
        }
        out.push(c);
    }
    let mut out = out.trim_matches('_').to_owned();
    if !out.starts_with(|c: char| c.is_ascii_alphabetic()) {
        out = format!("mcp_{out}").trim_end_matches('_').to_owned();
    }
    out.truncate(MAX_SERVER_NAME);
    out.trim_end_matches('_').to_owned()
}

/// The Engram tool name of `server`'s tool `tool` (see the module docs).
pub fn tool_name(server: &str, tool: &str) -> String {
    let cleaned: String = tool
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let full = format!("{server}__{cleaned}");
    if full.len() <= MAX_TOOL_NAME && cleaned == tool {
        return full;
    }
    // Characters were replaced (so `a-b` and `a.b` would look alike) or the name is too long:
    // 8 hex digits of a hash of the server's own name keep it unique.
    format!("{}_{:08x}", truncate(&full, MAX_TOOL_NAME - 9), fnv(tool))
}

fn truncate(s: &str, max: usize) -> &str {
    // ASCII only by construction, so byte and character counts agree.
    &s[..s.len().min(max)]
}

/// 32-bit FNV-1a: a stable, dependency-free hash for name suffixes (not for security).
fn fnv(text: &str) -> u32 {
    text.bytes().fold(0x811c_9dc5u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_tool_names_get_the_server_prefix() {
        assert_eq!(tool_name("files", "read_file"), "files__read_file");
    }

    #[test]
    fn other_characters_are_replaced_and_hashed_so_lookalikes_differ() {
        let a = tool_name("web", "get-page");
        let b = tool_name("web", "get.page");
        assert!(a.starts_with("web__get_page_"), "{a}");
        assert_ne!(a, b);
        assert!(engram_like_identifier(&a));
    }

    #[test]
    fn long_names_are_cut_to_64_and_stay_unique() {
        let long = "x".repeat(100);
        let a = tool_name("server", &long);
        let b = tool_name("server", &format!("{long}y"));
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
        assert!(engram_like_identifier(&a));
    }

    #[test]
    fn server_names_are_identifiers_without_double_underscores() {
        assert!(valid_server_name("brave_search"));
        assert!(!valid_server_name("brave-search"));
        assert!(!valid_server_name("a__b"));
        assert!(!valid_server_name("1abc"));
        assert!(!valid_server_name(""));
        assert_eq!(server_name_from("brave-search"), "brave_search");
        assert_eq!(server_name_from("@scope/pkg--x"), "scope_pkg_x");
        assert_eq!(server_name_from("9lives"), "mcp_9lives");
        assert_eq!(server_name_from("***"), "mcp");
        assert!(valid_server_name(&server_name_from(&"ab-".repeat(40))));
    }

    fn engram_like_identifier(s: &str) -> bool {
        s.len() <= 64 && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    }
}
