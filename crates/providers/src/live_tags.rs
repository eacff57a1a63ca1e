//! The streamed half of [`crate::recover`]: while a reply streams, text inside a `<think>`
//! section goes out as reasoning and a tool call the model writes into its text is not shown
//! as text, so a window never fills with a small model's thinking or raw tool-call syntax
//! before the finished reply is repaired. The finished reply stays the one truth (what is
//! stored comes from [`crate::recover::normalise`]); this only decides how deltas look.
//!
//! A tag split across deltas (`"<thi"` then `"nk>"`) is held back until the next delta says
//! what it is; [`LiveTags::finish`] lets out whatever is still held when the stream ends.

use crate::Delta;

/// Opening tags of sections that are the model's thinking, with their closing tags (as
/// `recover` moves them to the reasoning).
const THINK: [(&str, &str); 2] = [("<think>", "</think>"), ("<thinking>", "</thinking>")];

/// Markers from which on a reply is a tool call written as text (Hermes/Qwen, Mistral, Llama
/// 3.x); `recover` turns what follows into tool calls.
const CALLS: [&str; 3] = ["<tool_call>", "[TOOL_CALLS]", "<|python_tag|>"];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Text,
    /// Inside a thinking section, until its closing tag.
    Think(&'static str),
    /// After a tool-call marker: nothing more is shown as text.
    Calls,
}

/// Splits a stream of reply-text deltas into what to show as text and as reasoning (see the
/// module docs). One per model call.
#[derive(Debug)]
pub struct LiveTags {
    state: State,
    /// Text held back because it may be the start of a tag.
    held: String,
}

impl Default for LiveTags {
    fn default() -> Self {
        Self {
            state: State::Text,
            held: String::new(),
        }
    }
}

impl LiveTags {
    /// A splitter at the start of a reply.
    pub fn new() -> Self {
        Self::default()
    }

    /// The deltas to show for the next piece of reply text, in order (none while a tag may be
    /// starting, or inside a tool call).
    pub fn push(&mut self, chunk: &str) -> Vec<Delta> {
        let mut rest = std::mem::take(&mut self.held);
        rest.push_str(chunk);
        let mut out = Vec::new();
        loop {
            match self.state {
                State::Calls => return out,
                State::Text => {
                    let opens = THINK.iter().map(|(o, c)| (*o, State::Think(c)));
                    let calls = CALLS.iter().map(|m| (*m, State::Calls));
                    let found = opens
                        .chain(calls)
                        .filter_map(|(tag, next)| rest.find(tag).map(|at| (at, tag, next)))
                        .min_by_key(|(at, tag, _)| (*at, usize::MAX - tag.len()));
                    match found {
                        Some((at, tag, next)) => {
                            push(&mut out, Delta::Text(rest[..at].to_owned()));
                            rest.drain(..at + tag.len());
                            self.state = next;
                        }
                        None => {
                            let tags = THINK.iter().map(|(o, _)| *o).chain(CALLS);
                            let keep = partial_tag(&rest, tags);
                            self.held = rest.split_off(rest.len() - keep);
                            push(&mut out, Delta::Text(rest));
                            return out;
                        }
                    }
                }
                State::Think(close) => match rest.find(close) {
                    Some(at) => {
                        push(&mut out, Delta::Reasoning(rest[..at].to_owned()));
                        rest.drain(..at + close.len());
                        self.state = State::Text;
                    }
                    None => {
                        let keep = partial_tag(&rest, [close]);
                        self.held = rest.split_off(rest.len() - keep);
                        push(&mut out, Delta::Reasoning(rest));
                        return out;
                    }
                },
            }
        }
    }

    /// What was held back when the stream ends (a `<` that began no tag after all).
    pub fn finish(&mut self) -> Vec<Delta> {
        let held = std::mem::take(&mut self.held);
        let mut out = Vec::new();
        match self.state {
            State::Text => push(&mut out, Delta::Text(held)),
            State::Think(_) => push(&mut out, Delta::Reasoning(held)),
            State::Calls => {}
        }
        out
    }
}

fn push(out: &mut Vec<Delta>, d: Delta) {
    let empty = match &d {
        Delta::Text(t) | Delta::Reasoning(t) => t.is_empty(),
    };
    if !empty {
        out.push(d);
    }
}

/// The length of the longest end of `text` that is the start of one of `tags` (and not a
/// whole tag): what to hold back until the next delta.
fn partial_tag<'a>(text: &str, tags: impl IntoIterator<Item = &'a str>) -> usize {
    tags.into_iter()
        .flat_map(|tag| (1..tag.len()).rev().map(move |n| &tag[..n]))
        .filter(|start| text.ends_with(start))
        .map(str::len)
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Streams `chunks` and joins what comes out, as `(text, reasoning)`.
    fn stream(chunks: &[&str]) -> (String, String) {
        let mut tags = LiveTags::new();
        let mut all: Vec<Delta> = chunks.iter().flat_map(|c| tags.push(c)).collect();
        all.extend(tags.finish());
        let (mut text, mut reasoning) = (String::new(), String::new());
        for d in all {
            match d {
                Delta::Text(t) => text.push_str(&t),
                Delta::Reasoning(t) => reasoning.push_str(&t),
            }
        }
        (text, reasoning)
    }

    #[test]
    fn thinking_goes_to_the_reasoning_even_with_its_tags_split_across_deltas() {
        let whole = "<think>The user said hi.</think>Hello!";
        // Every way of cutting the reply in two gives the same result.
        for cut in 1..whole.len() {
            let (a, b) = whole.split_at(cut);
            assert_eq!(
                stream(&[a, b]),
                ("Hello!".into(), "The user said hi.".into()),
                "cut at {cut}"
            );
        }
        assert_eq!(
            stream(&["Hi <thin", "king>hm</thinki", "ng> there"]),
            ("Hi  there".into(), "hm".into())
        );
    }

    #[test]
    fn a_tool_call_written_as_text_is_not_shown() {
        assert_eq!(
            stream(&[
                "Sure.<tool",
                "_call>{\"name\": \"send_message\"}</tool_call>"
            ]),
            ("Sure.".into(), String::new())
        );
        assert_eq!(
            stream(&["[TOOL_CALLS] [{\"name\": \"x\"}]"]),
            (String::new(), String::new())
        );
        assert_eq!(
            stream(&["<think>plan</think><|python", "_tag|>{}"]),
            (String::new(), "plan".into())
        );
    }

    #[test]
    fn text_that_only_looks_like_a_tag_start_comes_out_in_the_end() {
        assert_eq!(
            stream(&["a < b and c <", "= d <"]),
            ("a < b and c <= d <".into(), String::new())
        );
        assert_eq!(stream(&["<thin"]), ("<thin".into(), String::new()));
        assert_eq!(
            stream(&["<think>unclosed"]),
            (String::new(), "unclosed".into())
        );
    }
}
