//! What a words search looks for: the words of a user's query, chosen the same way by every
//! backend so that both find the same rows for the same text.
//!
//! User text never reaches a database as query syntax. It is split into words (runs of
//! letters and digits), repeated words (ignoring case) are kept once, English stop words are
//! left out unless nothing else is left ("who are you" is still searched as written), and at
//! most [`MAX_QUERY_WORDS`] are kept. A backend then matches rows holding **any** of the words,
//! ranking rows that hold more of them, or rarer ones, higher; each backend quotes the words as
//! literals of its own full-text engine (an FTS5 string, a `tsquery` lexeme), so `AND OR "`,
//! `NEAR(`, `*`, `!` or `col:x` are searched as the words they contain.
//!
//! Both backends index every word (stop words too), fold case and accents ("cafe" finds
//! "café") and stem English words, so "gardening" finds "garden": SQLite with FTS5's Porter
//! stemmer, PostgreSQL with Snowball's English one (Porter's revision). The two agree on
//! ordinary inflections (plurals, -ing, -ed) and differ on a few rarer forms ("fairly" stems
//! to "fairli" under Porter and to "fair" under Snowball, so "fair" finds "fairly" only on
//! PostgreSQL).

use std::collections::HashSet;
use std::sync::LazyLock;

/// At most this many distinct words of a query are searched; longer queries are cut (keeps a
/// pasted page from turning into thousands of alternatives).
pub const MAX_QUERY_WORDS: usize = 32;

/// English stop words, lower case (NLTK's list, as the `stop-words` crate ships it).
static STOP_WORDS: LazyLock<HashSet<&'static str>> =
    LazyLock::new(|| stop_words::get("en").iter().copied().collect());

/// What a user's query text becomes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum QueryWords {
    /// Empty or whitespace only: searches list the newest rows instead of ranking.
    Blank,
    /// Text with no letters or digits at all (punctuation, emoji): nothing can match it.
    NoWords,
    /// The words to look for, in the order written (1 to [`MAX_QUERY_WORDS`], each a
    /// non-empty run of letters and digits).
    Words(Vec<String>),
}

/// The words a search for `text` looks for (see the module docs).
pub fn query_words(text: &str) -> QueryWords {
    if text.trim().is_empty() {
        return QueryWords::Blank;
    }
    let mut seen = HashSet::new();
    let words: Vec<&str> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty() && seen.insert(t.to_lowercase()))
        .collect();
    let content: Vec<&str> = words
        .iter()
        .copied()
        .filter(|w| !STOP_WORDS.contains(w.to_lowercase().as_str()))
        .collect();
    let chosen = if content.is_empty() { words } else { content };
    let kept: Vec<String> = chosen
        .into_iter()
        .take(MAX_QUERY_WORDS)
        .map(str::to_owned)
        .collect();
    if kept.is_empty() {
        QueryWords::NoWords
    } else {
        QueryWords::Words(kept)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        match query_words(text) {
            QueryWords::Words(w) => w,
            other => panic!("{text:?} gave {other:?}"),
        }
    }

    #[test]
    fn syntax_is_split_into_words() {
        assert_eq!(words("AND OR \""), ["AND", "OR"]);
        assert_eq!(words("NEAR(x, y1)"), ["NEAR", "x", "y1"]);
        assert_eq!(words("col:x* !z"), ["col", "x", "z"]);
        assert_eq!(words("Café café CAFÉ"), ["Café"]);
    }

    #[test]
    fn stop_words_are_left_out_unless_nothing_else_is_left() {
        assert_eq!(
            words("When did Caroline go to the museum?"),
            ["Caroline", "go", "museum"]
        );
        assert_eq!(words("Who are YOU"), ["Who", "are", "YOU"]);
    }

    #[test]
    fn blank_and_wordless_queries_are_told_apart() {
        assert_eq!(query_words(""), QueryWords::Blank);
        assert_eq!(query_words("  \t\n"), QueryWords::Blank);
        assert_eq!(query_words("*"), QueryWords::NoWords);
        assert_eq!(query_words("🎉🎉 \" ()"), QueryWords::NoWords);
    }

    #[test]
    fn long_queries_are_cut() {
        let text: Vec<String> = (0..100).map(|i| format!("w{i}")).collect();
        assert_eq!(words(&text.join(" ")).len(), MAX_QUERY_WORDS);
    }
}
