//! Printing untrusted text (replies, block values, agent names, passages, file-sourced names)
//! to a terminal without letting it drive the terminal: C0 and C1 control characters (except
//! newline and tab) and DEL are shown as visible escapes, so OSC 52 clipboard writes, screen
//! clears, window titles and hyperlinks print as text; so are invisible format characters
//! (bidirectional overrides, zero-width characters), so reviewed code reads as it runs. `--json` output is not passed through
//! here (serde_json already escapes C0 characters and the JSON stays exact).

use std::borrow::Cow;
use std::io::Write;

/// Writes to stdout. A reader that went away (`engram agent show | head`) ends the process
/// quietly with success — what it wanted has been read — instead of a panic; any other write
/// error ends it with a message.
pub fn out(args: std::fmt::Arguments<'_>) {
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout.write_fmt(args).and_then(|()| stdout.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("error: cannot write to stdout: {e}");
        std::process::exit(1);
    }
}

fn is_control(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{2028}' | '\u{2029}')
        // Invisible format characters: bidirectional overrides and isolates ("Trojan Source":
        // code that reads differently from how it runs), zero-width characters, the BOM.
        || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2069}' | '\u{feff}' | '\u{061c}')
}

/// `text` with every control character except `\n` and `\t` replaced by a visible escape:
/// `\x1b` for C0 and DEL, `\u{9b}` for C1 (and the Unicode line/paragraph separators).
pub fn safe(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_control) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if !is_control(c) {
            out.push(c);
        } else if (c as u32) < 0x80 {
            out.push_str(&format!("\\x{:02x}", c as u32));
        } else {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        }
    }
    Cow::Owned(out)
}

/// Pretty JSON for people: serde_json escapes C0 characters; this also escapes C1 characters
/// and DEL (as `\u0080`…), which serde_json writes raw. Still valid JSON of the same value.
pub fn json(value: &impl serde::Serialize) -> anyhow::Result<String> {
    let text = serde_json::to_string_pretty(value)?;
    Ok(text
        .chars()
        .map(|c| {
            if c == '\u{7f}' || ('\u{80}'..='\u{9f}').contains(&c) {
                format!("\\u{:04x}", c as u32)
            } else {
                c.to_string()
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bidirectional_and_zero_width_characters_are_shown() {
        let trojan = "if access == \"user\u{202e} \u{2066}// admin\u{2069} \u{2066}\" {";
        let shown = safe(trojan);
        assert!(
            shown.contains("\\u{202e}") && shown.contains("\\u{2066}"),
            "{shown}"
        );
        assert!(!shown.contains('\u{202e}'));
        assert_eq!(safe("a\u{200b}b"), "a\\u{200b}b");
    }

    #[test]
    fn controls_are_escaped_and_newlines_tabs_kept() {
        assert_eq!(safe("plain\ttext\n"), "plain\ttext\n");
        assert_eq!(
            safe("a\x1b]52;c;aGk=\x07b\u{9b}2J\r\x7f"),
            "a\\x1b]52;c;aGk=\\x07b\\u{9b}2J\\x0d\\x7f"
        );
    }

    #[test]
    fn json_for_people_escapes_c1_and_stays_the_same_value() {
        let v = serde_json::json!({"name": "x\u{9b}31m\u{1b}"});
        let text = json(&v).unwrap();
        assert!(
            !text.contains('\u{9b}') && !text.contains('\u{1b}'),
            "{text}"
        );
        assert_eq!(serde_json::from_str::<serde_json::Value>(&text).unwrap(), v);
    }
}
