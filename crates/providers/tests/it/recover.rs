//! Replies of local models that leave their thinking and tool calls in the text (a server run
//! without a tool parser for the model's template), through the real provider code, streamed
//! and not. The replies are written by hand in each format's documented shape: Hermes/Qwen
//! `<tool_call>` blocks, Llama 3.1 JSON tool calls, Mistral `[TOOL_CALLS]`, `<think>` sections.

use crate::support::{config, request, serve, sse};
use axum::response::IntoResponse;
use axum::routing::post;
use engram_providers::{ChatResponse, ProviderKind, chat_model};
use serde_json::{Value, json};
use std::collections::HashSet;

/// Serves `content` (and the server-separated `reasoning`, if any) as a reply without
/// `tool_calls` and with finish reason `stop`: one JSON answer, or a stream of small pieces
/// split wherever they fall (tags and JSON cut in the middle, as tokens would cut them).
async fn serve_text(content: &'static str, reasoning: Option<&'static str>) -> String {
    let router = axum::Router::new().route(
        "/v1/chat/completions",
        post(move |axum::Json(body): axum::Json<Value>| async move {
            if body["stream"] != true {
                let mut message = json!({"role": "assistant", "content": content});
                if let Some(r) = reasoning {
                    message["reasoning_content"] = json!(r);
                }
                return axum::Json(json!({
                    "id": "chatcmpl-rec", "object": "chat.completion", "model": "local",
                    "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 40, "completion_tokens": 30},
                }))
                .into_response();
            }
            let delta = |d: Value| json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": d, "finish_reason": null}]}).to_string();
            let mut frames = vec![delta(json!({"role": "assistant", "content": ""}))];
            frames.extend(pieces(reasoning.unwrap_or_default(), 6).map(|p| delta(json!({"reasoning_content": p}))));
            frames.extend(pieces(content, 5).map(|p| delta(json!({"content": p}))));
            frames.push(json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}).to_string());
            frames.push(json!({"object": "chat.completion.chunk", "choices": [], "usage": {"prompt_tokens": 40, "completion_tokens": 30}}).to_string());
            frames.push("[DONE]".into());
            sse(&frames)
        }),
    );
    serve(router).await
}

/// `text` in pieces of `n` characters.
fn pieces(text: &str, n: usize) -> impl Iterator<Item = String> + '_ {
    let chars: Vec<char> = text.chars().collect();
    (0..chars.len())
        .step_by(n)
        .map(move |i| chars[i..(i + n).min(chars.len())].iter().collect())
}

/// The reply to the standard request (both test tools offered) from a server sending `content`.
async fn reply(
    content: &'static str,
    reasoning: Option<&'static str>,
    stream: bool,
) -> ChatResponse {
    let base = serve_text(content, reasoning).await;
    chat_model(config(ProviderKind::OpenAi, &base))
        .unwrap()
        .complete(&request(stream), &|_| {})
        .await
        .unwrap()
}

/// The calls as (name, parsed arguments); every id unique and non-empty.
fn calls(r: &ChatResponse) -> Vec<(&str, Value)> {
    let ids: HashSet<&str> = r.tool_calls.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(
        ids.len(),
        r.tool_calls.len(),
        "unique ids: {:?}",
        r.tool_calls
    );
    assert!(ids.iter().all(|id| !id.is_empty()));
    r.tool_calls
        .iter()
        .map(|c| (c.name.as_str(), serde_json::from_str(&c.arguments).unwrap()))
        .collect()
}

/// A Qwen 2.5 / Hermes 2 Pro reply: a sentence, then one `<tool_call>` block per call.
const HERMES: &str = "I'll remember your name.\n<tool_call>\n{\"name\": \"core_memory_append\", \"arguments\": {\"label\": \"human\", \"content\": \"The user's name is Bob.\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"send_message\", \"arguments\": {\"message\": \"Nice to meet you, Bob!\"}}\n</tool_call>";

/// A reasoning model (R1 distill, Qwen3) whose `<think>` section the server left in the text.
const THINK: &str = "<think>\nThe user introduced themselves as Bob. A friendly greeting fits.\n</think>\n\nHi Bob, nice to meet you!";

/// Qwen3 thinking, then calling a tool, with neither separated by the server.
const THINK_THEN_CALL: &str = "<think>\nI should store the name before answering.\n</think>\n\n<tool_call>\n{\"name\": \"core_memory_append\", \"arguments\": {\"label\": \"human\", \"content\": \"Name: Bob\"}}\n</tool_call>";

/// Llama 3.1 JSON tool calling with the `<|python_tag|>` left in.
const LLAMA: &str =
    "<|python_tag|>{\"name\": \"send_message\", \"parameters\": {\"message\": \"Hello Bob.\"}}";

/// Llama 3.2 without the tag: the whole reply is the call object.
const LLAMA_BARE: &str =
    "{\"name\": \"send_message\", \"parameters\": {\"message\": \"Hello Bob.\"}}";

/// Mistral 7B v0.3: the marker, then a JSON list of calls.
const MISTRAL: &str = "[TOOL_CALLS] [{\"name\": \"core_memory_append\", \"arguments\": {\"label\": \"human\", \"content\": \"Bob\"}}, {\"name\": \"send_message\", \"arguments\": {\"message\": \"Hi Bob!\"}}]";

#[tokio::test]
async fn hermes_tool_calls_in_the_text_are_recovered_streamed_and_not() {
    for stream in [false, true] {
        let r = reply(HERMES, None, stream).await;
        assert_eq!(r.content, "I'll remember your name.", "stream={stream}");
        assert_eq!(
            calls(&r),
            vec![
                (
                    "core_memory_append",
                    json!({"label": "human", "content": "The user's name is Bob."})
                ),
                ("send_message", json!({"message": "Nice to meet you, Bob!"})),
            ],
            "stream={stream}"
        );
        assert_eq!(r.finish_reason.as_deref(), Some("tool_calls"));
        assert_eq!(r.reasoning, None);
        assert!(r.usage.is_some());
    }
}

#[tokio::test]
async fn think_sections_become_reasoning_streamed_and_not() {
    for stream in [false, true] {
        let r = reply(THINK, None, stream).await;
        assert_eq!(r.content, "Hi Bob, nice to meet you!", "stream={stream}");
        assert_eq!(
            r.reasoning.as_deref(),
            Some("The user introduced themselves as Bob. A friendly greeting fits.")
        );
        assert!(r.tool_calls.is_empty());
        assert_eq!(r.finish_reason.as_deref(), Some("stop"));

        // Reasoning the server separated comes first.
        let r = reply(THINK, Some("Server-side thoughts."), stream).await;
        assert_eq!(
            r.reasoning.as_deref(),
            Some(
                "Server-side thoughts.\n\nThe user introduced themselves as Bob. A friendly greeting fits."
            )
        );

        let r = reply(THINK_THEN_CALL, None, stream).await;
        assert_eq!(r.content, "");
        assert_eq!(
            r.reasoning.as_deref(),
            Some("I should store the name before answering.")
        );
        assert_eq!(
            calls(&r),
            vec![(
                "core_memory_append",
                json!({"label": "human", "content": "Name: Bob"})
            )]
        );
    }
}

#[tokio::test]
async fn llama_and_mistral_tool_calls_are_recovered_streamed_and_not() {
    for stream in [false, true] {
        for content in [LLAMA, LLAMA_BARE] {
            let r = reply(content, None, stream).await;
            assert_eq!(
                calls(&r),
                vec![("send_message", json!({"message": "Hello Bob."}))],
                "stream={stream} {content}"
            );
            assert_eq!(r.content, "");
        }
        let r = reply(MISTRAL, None, stream).await;
        assert_eq!(
            calls(&r)
                .into_iter()
                .map(|(name, _)| name)
                .collect::<Vec<_>>(),
            ["core_memory_append", "send_message"],
            "stream={stream}"
        );
        assert_eq!(r.content, "");
    }
}

#[tokio::test]
async fn json_naming_a_tool_not_offered_stays_text() {
    let text = "{\"name\": \"web_search\", \"parameters\": {\"query\": \"Bob\"}}";
    for stream in [false, true] {
        let r = reply(text, None, stream).await;
        assert!(r.tool_calls.is_empty());
        assert_eq!(r.content, text);
        assert_eq!(r.finish_reason.as_deref(), Some("stop"));
    }
}

#[tokio::test]
async fn an_empty_reply_is_left_empty_and_detectable() {
    for stream in [false, true] {
        let r = reply("", None, stream).await;
        assert!(r.is_empty(), "stream={stream}: {r:?}");
        assert_eq!(r.finish_reason.as_deref(), Some("stop"));
        assert!(!reply("<think>hm</think>", None, stream).await.is_empty());
    }
}

/// Native tool calls with object arguments, a double-encoded string, none at all, and a
/// repeated id: the arguments become JSON object text and every call gets its own id.
#[tokio::test]
async fn native_calls_get_json_arguments_and_unique_ids() {
    let router = axum::Router::new().route(
        "/v1/chat/completions",
        post(|| async {
            axum::Json(json!({
                "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "call_0", "type": "function", "function": {"name": "send_message", "arguments": {"message": "a"}}},
                    {"id": "call_0", "type": "function", "function": {"name": "send_message", "arguments": "\"{\\\"message\\\": \\\"b\\\"}\""}},
                    {"id": "", "type": "function", "function": {"name": "core_memory_append"}},
                ]}}],
            }))
        }),
    );
    let base = serve(router).await;
    let r = chat_model(config(ProviderKind::OpenAi, &base))
        .unwrap()
        .complete(&request(false), &|_| {})
        .await
        .unwrap();
    assert_eq!(
        calls(&r),
        vec![
            ("send_message", json!({"message": "a"})),
            ("send_message", json!({"message": "b"})),
            ("core_memory_append", json!({})),
        ]
    );
    assert_eq!(r.tool_calls[0].id, "call_0", "the first keeps its id");
}

/// An Anthropic-compatible server repeating and omitting `tool_use` ids: each call still gets
/// its own, and the text is left as sent.
#[tokio::test]
async fn anthropic_tool_use_ids_are_made_unique() {
    let router = axum::Router::new().route(
        "/v1/messages",
        post(|| async {
            axum::Json(json!({
                "type": "message", "role": "assistant", "stop_reason": "tool_use",
                "content": [
                    {"type": "text", "text": "<think>kept</think> Saving."},
                    {"type": "tool_use", "id": "toolu_1", "name": "core_memory_append", "input": {"label": "human", "content": "Bob"}},
                    {"type": "tool_use", "id": "toolu_1", "name": "send_message", "input": {"message": "Hi"}},
                    {"type": "tool_use", "name": "send_message"},
                ],
                "usage": {"input_tokens": 10, "output_tokens": 5},
            }))
        }),
    );
    let base = serve(router).await;
    let r = chat_model(config(ProviderKind::Anthropic, &base))
        .unwrap()
        .complete(&request(false), &|_| {})
        .await
        .unwrap();
    assert_eq!(r.content, "<think>kept</think> Saving.");
    assert_eq!(
        calls(&r),
        vec![
            (
                "core_memory_append",
                json!({"label": "human", "content": "Bob"})
            ),
            ("send_message", json!({"message": "Hi"})),
            ("send_message", json!({})),
        ]
    );
    assert_eq!(r.tool_calls[0].id, "toolu_1");
}
