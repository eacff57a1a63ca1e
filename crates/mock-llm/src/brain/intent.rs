//! Reading what a user message asks for, and the small text helpers the rules share.
//! Matching is by ASCII-case-insensitive phrases: crude, but predictable in tests.

/// What the latest user message asks for.
#[derive(Debug, PartialEq)]
pub(super) enum Intent {
    Name(String),
    Friend {
        name: String,
        likes: Option<(String, String)>,
    },
    AskName,
    AskFriend,
    ArchivalInsert(String),
    ArchivalSearch(String),
    ConversationSearch(String),
    /// Tasks to push, in order: "add task: T", or the tutorial's "Add 'A' and 'B' as two
    /// separate tasks" (every quoted phrase).
    AddTasks(Vec<String>),
    DoTasks,
    /// "use tool NAME with {json}": call that tool once with those arguments (any tool the
    /// agent has, e.g. an MCP server's), then report its result.
    UseTool {
        name: String,
        args: serde_json::Value,
    },
    Echo(String),
}

pub(super) fn parse_intent(user: &str) -> Intent {
    let text = user.trim();
    let text = strip_prefix_ci(text, "please ").unwrap_or(text).trim();
    let lower = text.to_ascii_lowercase();
    let rest_after = |needle: &str| -> Option<String> {
        // ASCII lowercasing keeps byte offsets, so indexes into `lower` fit `text`.
        lower
            .find(needle)
            .map(|i| clean_tail(&text[i + needle.len()..]))
    };
    if let Some(rest) = strip_prefix_ci(text, "use tool ") {
        let (name, args) = rest.split_once(" with ").unwrap_or((rest, "{}"));
        if let Ok(args @ serde_json::Value::Object(_)) = serde_json::from_str(args.trim()) {
            return Intent::UseTool {
                name: name.trim().to_owned(),
                args,
            };
        }
    }
    if let Some(rest) = strip_prefix_ci(text, "remember that ") {
        return Intent::ArchivalInsert(clean_tail(rest));
    }
    if let Some(rest) = strip_prefix_ci(text, "save to archival") {
        let rest = rest.trim_start();
        let rest = strip_prefix_ci(rest, "memory").unwrap_or(rest).trim_start();
        let rest = rest.strip_prefix(':').unwrap_or(rest);
        return Intent::ArchivalInsert(clean_tail(rest));
    }
    for prefix in [
        "search your archival memory for ",
        "search archival memory for ",
        "search archival for ",
    ] {
        if let Some(rest) = strip_prefix_ci(text, prefix) {
            return Intent::ArchivalSearch(clean_tail(rest));
        }
    }
    for prefix in [
        "search our conversation for ",
        "search the conversation for ",
        "search conversation for ",
    ] {
        if let Some(rest) = strip_prefix_ci(text, prefix) {
            return Intent::ConversationSearch(clean_tail(rest));
        }
    }
    for prefix in ["add task:", "add a task:"] {
        if let Some(rest) = strip_prefix_ci(text, prefix) {
            return Intent::AddTasks(vec![clean_tail(rest)]);
        }
    }
    if lower.starts_with("add ") && lower.contains("task") {
        let quoted = quoted_phrases(text);
        if !quoted.is_empty() {
            return Intent::AddTasks(quoted);
        }
    }
    if ["complete your tasks", "keep going", "do your tasks"]
        .iter()
        .any(|n| lower.contains(n))
    {
        return Intent::DoTasks;
    }
    if [
        "what is my name",
        "what's my name",
        "who am i",
        "do you know my name",
        "what my name is",
    ]
    .iter()
    .any(|n| lower.contains(n))
    {
        return Intent::AskName;
    }
    if [
        "who is my best friend",
        "who's my best friend",
        "what is my best friend",
        "best friend's name",
        "best friend name",
    ]
    .iter()
    .any(|n| lower.contains(n))
    {
        return Intent::AskFriend;
    }
    if let Some(rest) = rest_after("what do you know about ") {
        return Intent::ArchivalSearch(rest);
    }
    if let Some(i) = lower.find("my best friend is ") {
        let after = &text[i + "my best friend is ".len()..];
        let (name, tail) = take_name(after);
        if !name.is_empty() {
            return Intent::Friend {
                likes: find_likes(tail),
                name,
            };
        }
    }
    if let Some(i) = lower.find("my name is ") {
        let (name, _) = take_name(&text[i + "my name is ".len()..]);
        if !name.is_empty() {
            return Intent::Name(name);
        }
    }
    Intent::Echo(text.to_string())
}

/// A name at the start of `text`: up to three words, stopping at punctuation or a linking word;
/// each word capitalised. Returns the name and the text after it.
pub(super) fn take_name(text: &str) -> (String, &str) {
    let end = text
        .find(['.', ',', '!', '?', ';', ':'])
        .unwrap_or(text.len());
    let mut words = Vec::new();
    let mut consumed = 0;
    for word in text[..end].split(' ') {
        let bare = word.trim();
        let stop = ["and", "who", "she", "he", "they", "but", "i"]
            .contains(&bare.to_ascii_lowercase().as_str());
        if stop || words.len() == 3 {
            break;
        }
        consumed += word.len() + 1;
        if !bare.is_empty() {
            words.push(capitalize(bare));
        }
    }
    (words.join(" "), &text[consumed.min(text.len())..])
}

/// "(and) she (also) loves B" → ("loves", "B"), the verb in the third person.
fn find_likes(text: &str) -> Option<(String, String)> {
    let lower = text.to_ascii_lowercase();
    for (needle, verb) in [
        (" loves ", "loves"),
        (" likes ", "likes"),
        (" love ", "loves"),
        (" like ", "likes"),
    ] {
        if let Some(i) = lower.find(needle) {
            let thing = clean_tail(&text[i + needle.len()..]);
            if !thing.is_empty() {
                return Some((verb.to_string(), thing));
            }
        }
    }
    None
}

fn capitalize(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// Text up to the end of its sentence, trimmed.
/// The phrases between single or double quotes, in order (`'a' and "b"` → `[a, b]`).
fn quoted_phrases(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(['\'', '"']) {
        let quote = rest[start..].chars().next().unwrap_or('"');
        let after = &rest[start + 1..];
        let Some(len) = after.find(quote) else { break };
        let phrase = after[..len].trim();
        if !phrase.is_empty() {
            out.push(phrase.to_owned());
        }
        rest = &after[len + 1..];
    }
    out
}

pub(super) fn clean_tail(text: &str) -> String {
    let end = text.find(['\n', '?', '!']).unwrap_or(text.len());
    text[..end].trim().trim_end_matches('.').trim().to_string()
}

pub(super) fn strip_prefix_ci<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &text[prefix.len()..])
}

pub(super) fn contains_ci(haystack: &str, needle: &str) -> bool {
    haystack.to_lowercase().contains(&needle.to_lowercase())
}

pub(super) fn truncate(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intents() {
        assert_eq!(parse_intent("my name is bob."), Intent::Name("Bob".into()));
        assert_eq!(
            parse_intent("Hi! My name is Bob Smith and I like tea"),
            Intent::Name("Bob Smith".into())
        );
        assert_eq!(
            parse_intent("my best friend is Alya and she loves cherry pie"),
            Intent::Friend {
                name: "Alya".into(),
                likes: Some(("loves".into(), "cherry pie".into()))
            }
        );
        assert_eq!(
            parse_intent("My best friend is Alya. She also loves cherry pies."),
            Intent::Friend {
                name: "Alya".into(),
                likes: Some(("loves".into(), "cherry pies".into()))
            }
        );
        assert_eq!(
            parse_intent("What is my name? I always forget it."),
            Intent::AskName
        );
        assert_eq!(parse_intent("who is my best friend?"), Intent::AskFriend);
        assert_eq!(
            parse_intent("Remember that the launch code is 1234."),
            Intent::ArchivalInsert("the launch code is 1234".into())
        );
        assert_eq!(
            parse_intent("save to archival memory: pie recipe"),
            Intent::ArchivalInsert("pie recipe".into())
        );
        assert_eq!(
            parse_intent("search your archival memory for launch code"),
            Intent::ArchivalSearch("launch code".into())
        );
        assert_eq!(
            parse_intent("What do you know about pies?"),
            Intent::ArchivalSearch("pies".into())
        );
        assert_eq!(
            parse_intent("search our conversation for cherry"),
            Intent::ConversationSearch("cherry".into())
        );
        assert_eq!(
            parse_intent("add task: write a haiku"),
            Intent::AddTasks(vec!["write a haiku".into()])
        );
        assert_eq!(
            parse_intent(
                "Add 'start calling me Charles' and 'tell me a haiku about my name' as two seperate tasks."
            ),
            Intent::AddTasks(vec![
                "start calling me Charles".into(),
                "tell me a haiku about my name".into()
            ])
        );
        assert_eq!(parse_intent("Complete your tasks"), Intent::DoTasks);
        assert_eq!(
            parse_intent(r#"use tool files__echo with {"text": "hi"}"#),
            Intent::UseTool {
                name: "files__echo".into(),
                args: serde_json::json!({"text": "hi"})
            }
        );
        assert_eq!(
            parse_intent("nice weather"),
            Intent::Echo("nice weather".into())
        );
    }
}
