//! What the protocol encoders share: the resolved answer, token estimates, chunking, and SSE
//! bodies that can be paced or broken off.

use std::time::Duration;

use axum::body::{Body, Bytes};
use futures::StreamExt;

use crate::{Call, Reply};

/// A successful answer, whichever API it is encoded for.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Answer {
    pub reasoning: Option<String>,
    pub text: Option<String>,
    pub calls: Vec<AnswerCall>,
}

/// A tool call with its id settled.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct AnswerCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

impl Answer {
    /// The answer for a content reply; `None` for faults and delays, which the server handles.
    /// `make_id` names calls that came without an id.
    pub fn from_reply(reply: &Reply, mut make_id: impl FnMut() -> String) -> Option<Answer> {
        let mut calls = |calls: &[Call]| -> Vec<AnswerCall> {
            calls
                .iter()
                .map(|c| AnswerCall {
                    id: c.id.clone().unwrap_or_else(&mut make_id),
                    name: c.name.clone(),
                    arguments: c.arguments.clone(),
                })
                .collect()
        };
        Some(match reply {
            Reply::Text(text) => Answer {
                text: Some(text.clone()),
                ..Answer::default()
            },
            Reply::Reasoning { reasoning, text } => Answer {
                reasoning: Some(reasoning.clone()),
                text: Some(text.clone()),
                calls: Vec::new(),
            },
            Reply::ToolCalls(c) => Answer {
                calls: calls(c),
                ..Answer::default()
            },
            Reply::TextWithToolCalls { text, calls: c } => Answer {
                text: Some(text.clone()),
                calls: calls(c),
                reasoning: None,
            },
            _ => return None,
        })
    }

    /// Characters of everything the model "generated", for the completion-token estimate.
    pub fn chars(&self) -> usize {
        let text = self.text.as_deref().map_or(0, |t| t.chars().count());
        let reasoning = self.reasoning.as_deref().map_or(0, |t| t.chars().count());
        let calls: usize = self
            .calls
            .iter()
            .map(|c| c.name.chars().count() + c.arguments.chars().count())
            .sum();
        text + reasoning + calls
    }
}

/// Token usage as reported to the client.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Usage {
    pub prompt: u64,
    pub completion: u64,
}

impl Usage {
    /// Estimates: a token is about four characters, and a non-empty answer is at least one.
    pub fn estimate(request_chars: usize, answer: &Answer) -> Usage {
        Usage {
            prompt: tokens(request_chars),
            completion: tokens(answer.chars()).max(1),
        }
    }
}

/// Characters / 4, rounded up.
pub(crate) fn tokens(chars: usize) -> u64 {
    chars.div_ceil(4) as u64
}

/// Splits text into word-sized pieces (each word keeps its trailing whitespace), the way token
/// streams arrive; the pieces concatenate back to `text`.
pub(crate) fn split_words(text: &str) -> Vec<String> {
    let mut pieces = Vec::new();
    let mut current = String::new();
    let mut in_space = false;
    for ch in text.chars() {
        if !ch.is_whitespace() && in_space && !current.is_empty() {
            pieces.push(std::mem::take(&mut current));
        }
        in_space = ch.is_whitespace();
        current.push(ch);
    }
    if !current.is_empty() {
        pieces.push(current);
    }
    pieces
}

/// Splits text into pieces of at most `n` characters (on char boundaries); at least one piece.
pub(crate) fn split_chars(text: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    if chars.is_empty() {
        return vec![String::new()];
    }
    chars.chunks(n.max(1)).map(|c| c.iter().collect()).collect()
}

/// An SSE response body from pre-rendered frames: paced by `delay` between frames, and, when
/// `break_off` is set, ended with a transport error so the connection drops without the
/// closing chunk (what a crashed upstream looks like to the client).
pub(crate) fn sse_body(frames: Vec<String>, delay: Duration, break_off: bool) -> Body {
    let frames =
        futures::stream::iter(frames.into_iter().enumerate()).then(move |(i, frame)| async move {
            if i > 0 && !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            Ok::<_, std::io::Error>(Bytes::from(frame))
        });
    // The pause lets hyper flush the headers and the frames before the error: without it the
    // whole response is dropped unsent and the client sees a failed request, not a broken stream.
    let tail = futures::stream::iter(break_off.then_some(())).then(|()| async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        Err(std::io::Error::new(
            std::io::ErrorKind::ConnectionAborted,
            "mock-llm: stream broken off on purpose",
        ))
    });
    Body::from_stream(frames.chain(tail))
}

/// Seconds since the Unix epoch, for `created` fields.
pub(crate) fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_pieces_rejoin() {
        let text = "Nice to meet you,  Bob!\nBye";
        let pieces = split_words(text);
        assert_eq!(pieces.concat(), text);
        assert_eq!(pieces[0], "Nice ");
        assert!(pieces.len() >= 5);
        assert_eq!(split_chars("{\"a\":1}", 3).concat(), "{\"a\":1}");
        assert_eq!(split_chars("", 3), vec![String::new()]);
    }
}
