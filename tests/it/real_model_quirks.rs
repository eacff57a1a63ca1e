//! What real small models do that a scripted happy path never shows, and what the loop makes
//! of it: an answer written as plain text in the classic loop, an empty answer, output without
//! end. Every message ends with a reply or a clear error in bounded time, and the agent stays
//! usable after it.

use engram_core::{LoopStyle, Role, RunEvent, StopReason};
use engram_mock_llm::{Call, MockLlm, Reply, Script, StreamStyle};
use engram_suite::Home;
use serde_json::json;
use std::time::{Duration, Instant};

#[tokio::test]
async fn every_call_carries_an_output_limit_even_when_the_agent_sets_none() {
    let mock = MockLlm::start(Script::Queue).await;
    let home = Home::new();
    let agent = home.agent(&mock, LoopStyle::ToolLoop).await;
    home.chat(&agent, "hi").await;
    let sent = &mock.chat_requests()[0].body;
    // The test agents' window is 32,000 tokens: a quarter is more than the 4,096 default cap.
    assert_eq!(sent["max_tokens"], 4096, "{sent}");
}

#[tokio::test]
async fn classic_loop_plain_text_reaches_the_user_as_a_reply() {
    let mock = MockLlm::start(Script::Queue).await;
    let home = Home::new();
    let agent = home.agent(&mock, LoopStyle::Classic).await;
    mock.push(Reply::text("Hello Bob, good to meet you."));
    let (out, events) = home.chat(&agent, "hi, I am Bob").await;
    assert_eq!(out.stop_reason, StopReason::EndTurn, "{:?}", out.error);
    assert_eq!(
        out.usage.step_count, 1,
        "delivered without another model call"
    );

    let assistant = out
        .messages
        .iter()
        .find(|m| m.role == Role::Assistant)
        .expect("an assistant message");
    assert_eq!(
        assistant.content, "",
        "the text is the reply, not inner thoughts"
    );
    let call = &assistant.tool_calls[0];
    assert_eq!(call.name, "send_message");
    assert!(call.id.starts_with("call_engram_"), "{}", call.id);
    let args: serde_json::Value = serde_json::from_str(&call.arguments).unwrap();
    assert_eq!(args["message"], "Hello Bob, good to meet you.");
    assert!(
        out.messages
            .iter()
            .any(|m| m.tool_call_id.as_deref() == Some(call.id.as_str())),
        "the call made on the model's behalf is answered like any other"
    );
    let said: String = events
        .iter()
        .filter_map(|e| match e {
            RunEvent::TextDelta { delta } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(said, "Hello Bob, good to meet you.");
    // Letta's view of the run has the assistant message its clients print.
    let letta = engram_service::letta::response(&out, LoopStyle::Classic);
    let text = letta.to_string();
    assert!(
        text.contains("assistant_message") && text.contains("Hello Bob, good to meet you."),
        "{text}"
    );

    // The next call shows the model its answer as a send_message call: a valid history.
    mock.push(Reply::text("Still here."));
    let (again, _) = home.chat(&agent, "are you there?").await;
    assert_eq!(again.stop_reason, StopReason::EndTurn);
    let next = &mock.chat_requests()[1].body;
    assert!(
        next["messages"].to_string().contains("call_engram_"),
        "{next}"
    );
    assert!(mock.violations().is_empty(), "{:?}", mock.violations());
}

#[tokio::test]
async fn an_empty_answer_is_asked_again_once() {
    let mock = MockLlm::start(Script::Queue).await;
    let home = Home::new();
    let agent = home.agent(&mock, LoopStyle::ToolLoop).await;
    mock.push(Reply::text(""));
    mock.push(Reply::text("Here I am."));
    let (out, _) = home.chat(&agent, "hello?").await;
    assert_eq!(out.stop_reason, StopReason::EndTurn, "{:?}", out.error);
    assert_eq!(mock.chat_requests().len(), 2);
    assert_eq!(out.messages.last().unwrap().content, "Here I am.");
    assert_eq!(out.usage.step_count, 1, "the second ask is the same step");
}

#[tokio::test]
async fn two_empty_answers_end_the_run_with_an_error_not_silence() {
    for style in [LoopStyle::ToolLoop, LoopStyle::Classic] {
        let mock = MockLlm::start(Script::Queue).await;
        let home = Home::new();
        let agent = home.agent(&mock, style).await;
        mock.push(Reply::text(""));
        mock.push(Reply::text(""));
        let (out, events) = home.chat(&agent, "hello?").await;
        assert_eq!(out.stop_reason, StopReason::LlmApiError, "{style:?}");
        let error = out.error.expect("an error");
        assert_eq!(error.code, "provider_bad_response");
        assert!(error.message.contains("answered with nothing"), "{error:?}");
        assert!(events.iter().any(|e| matches!(e, RunEvent::Error { .. })));
        assert_eq!(mock.chat_requests().len(), 2, "{style:?}");

        // The agent stays usable.
        mock.push(Reply::text("Hi!"));
        let (next, _) = home.chat(&agent, "hello again").await;
        assert!(next.error.is_none(), "{style:?}: {:?}", next.error);
    }
}

#[tokio::test]
async fn a_model_still_writing_at_the_step_time_limit_is_stopped_and_its_text_kept() {
    let mock = MockLlm::start(Script::Queue).await;
    mock.set_stream_style(StreamStyle {
        chunk_delay: Duration::from_millis(20),
        ..StreamStyle::default()
    });
    let home = Home::with_env(&[("ENGRAM_STEP_TIMEOUT", "1")]);
    let agent = home.agent(&mock, LoopStyle::ToolLoop).await;
    // ~1,200 words at 20 ms each: 24 s of rambling, as a small model does without a cap.
    mock.push(Reply::text("Ribbon, no? Bridz, no? ".repeat(300)));
    let started = Instant::now();
    let (out, _) = home.chat(&agent, "tell me a story").await;
    let took = started.elapsed();
    assert_eq!(out.stop_reason, StopReason::LlmApiError);
    let error = out.error.expect("an error");
    assert_eq!(error.code, "provider_timeout");
    assert!(
        error.message.contains("still writing after 1 s"),
        "{error:?}"
    );
    assert!(
        took < Duration::from_secs(15),
        "stopped at the limit: {took:?}"
    );
    // The part that arrived is stored as the step's answer (the run's outcome ends at the error).
    let stored = home.engram.store().messages().in_context(&agent).unwrap();
    let kept = stored.last().unwrap();
    assert_eq!(kept.role, Role::Assistant);
    assert!(
        kept.content.starts_with("Ribbon, no?"),
        "what arrived is kept: {:?}",
        kept.content
    );

    mock.set_stream_style(StreamStyle::default());
    mock.push(Reply::text("A short one."));
    let (next, _) = home.chat(&agent, "a short one then").await;
    assert_eq!(next.stop_reason, StopReason::EndTurn, "{:?}", next.error);
}

#[tokio::test]
async fn a_misspelled_argument_is_answered_with_what_the_tool_takes() {
    let mock = MockLlm::start(Script::Queue).await;
    let home = Home::new();
    let agent = home.agent(&mock, LoopStyle::ToolLoop).await;
    mock.push(Reply::ToolCalls(vec![Call::new(
        "core_memory_append",
        json!({"label": "human", "text": "Likes tea."}),
    )]));
    mock.push(Reply::ToolCalls(vec![Call::new(
        "core_memory_append",
        json!({"label": "human", "content": "Likes tea."}),
    )]));
    mock.push(Reply::text("Noted."));
    let (out, _) = home.chat(&agent, "I like tea").await;
    assert_eq!(out.stop_reason, StopReason::EndTurn, "{:?}", out.error);
    let first = out
        .messages
        .iter()
        .find(|m| m.role == Role::Tool)
        .expect("a tool result");
    let result: serde_json::Value = serde_json::from_str(&first.content).unwrap();
    assert_eq!(result["status"], "Failed");
    assert_eq!(
        result["message"],
        "Missing required argument 'content'. core_memory_append takes: 'content', 'label'; \
         'text' is not one of them."
    );
    assert_eq!(home.block(&agent, "human"), "Likes tea.");
}

#[tokio::test]
async fn a_tool_call_written_as_text_runs_and_thinking_stays_reasoning() {
    let mock = MockLlm::start(Script::Queue).await;
    let home = Home::new();
    let agent = home.agent(&mock, LoopStyle::ToolLoop).await;
    // Hermes-style, as Qwen and many small fine-tunes write it when a server does not parse it.
    mock.push(Reply::text(
        "<think>The user told me a fact worth keeping.</think>\n<tool_call>\n{\"name\": \
         \"core_memory_append\", \"arguments\": {\"label\": \"human\", \"content\": \"Name: \
         Ann\"}}\n</tool_call>",
    ));
    mock.push(Reply::text("<think>Saved.</think>Nice to meet you, Ann."));
    let (out, _) = home.chat(&agent, "I am Ann").await;
    assert_eq!(out.stop_reason, StopReason::EndTurn, "{:?}", out.error);
    assert_eq!(home.block(&agent, "human"), "Name: Ann");
    let assistant: Vec<_> = out
        .messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .collect();
    assert_eq!(assistant[0].tool_calls[0].name, "core_memory_append");
    assert_eq!(assistant[0].content, "", "the call left the text");
    assert_eq!(
        assistant[0].reasoning.as_deref(),
        Some("The user told me a fact worth keeping.")
    );
    assert_eq!(assistant[1].content, "Nice to meet you, Ann.");
    assert_eq!(assistant[1].reasoning.as_deref(), Some("Saved."));
    assert!(mock.violations().is_empty(), "{:?}", mock.violations());
}

#[tokio::test]
async fn a_model_that_only_repeats_a_tool_call_is_stopped_with_a_word_why() {
    // Every call of the run repeats one search (requests without tools, such as a summary,
    // get text).
    let mock = MockLlm::start(Script::rules(|view| {
        if view.tools.is_empty() {
            return Reply::text("A short summary.");
        }
        Reply::ToolCalls(vec![Call::new(
            "conversation_search",
            json!({"query": "tulips"}),
        )])
    }))
    .await;
    let home = Home::new();
    let agent = home.agent(&mock, LoopStyle::ToolLoop).await;
    let (out, events) = home.chat(&agent, "what did I say about tulips?").await;
    assert_eq!(out.stop_reason, StopReason::NoProgress, "{:?}", out.error);
    assert!(out.usage.step_count < 5, "stopped early: {:?}", out.usage);
    let error = out.error.expect("the user is told why");
    assert!(error.message.contains("kept repeating"), "{error:?}");
    assert!(events.iter().any(|e| matches!(e, RunEvent::Error { .. })));
}

#[tokio::test]
async fn a_model_retrying_a_refused_call_with_new_arguments_is_stopped() {
    // What SmolLM2 did: a start date the tool refuses, written with the clock moved on by a
    // second each step, so no two calls are the same.
    let step = std::sync::atomic::AtomicU32::new(0);
    let mock = MockLlm::start(Script::rules(move |view| {
        if view.tools.is_empty() {
            return Reply::text("A short summary.");
        }
        let n = step.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Reply::ToolCalls(vec![Call::new(
            "conversation_search",
            json!({"query": "tulips", "start_date": format!("around 11:49:{n:02}")}),
        )])
    }))
    .await;
    let home = Home::new();
    let agent = home.agent(&mock, LoopStyle::ToolLoop).await;
    let (out, _) = home.chat(&agent, "what did I say about tulips?").await;
    assert_eq!(out.stop_reason, StopReason::NoProgress, "{:?}", out.error);
    assert!(out.usage.step_count <= 5, "stopped early: {:?}", out.usage);
    let error = out.error.expect("the user is told why");
    assert!(error.message.contains("kept repeating"), "{error:?}");
}

#[tokio::test]
async fn a_classic_turn_that_only_edits_memory_says_the_user_got_no_answer() {
    let mock = MockLlm::start(Script::Queue).await;
    let home = Home::new();
    let agent = home.agent(&mock, LoopStyle::Classic).await;
    // What SmolLM2 did when tried by hand: one archival insert, no heartbeat, no send_message.
    mock.push(Reply::ToolCalls(vec![Call::new(
        "archival_memory_insert",
        json!({"content": "This is my favorite tool.", "request_heartbeat": false}),
    )]));
    let (out, _) = home.chat(&agent, "Tell me a joke.").await;
    assert_eq!(out.stop_reason, StopReason::EndTurn);
    let error = out.error.expect("the user is told");
    assert!(
        error.message.contains("ended its turn without answering"),
        "{error:?}"
    );
}

/// What the window streams of `events`: `(text, reasoning)`.
fn streamed(events: &[RunEvent]) -> (String, String) {
    let (mut text, mut reasoning) = (String::new(), String::new());
    for e in events {
        match e {
            RunEvent::TextDelta { delta } => text.push_str(delta),
            RunEvent::ReasoningDelta { delta } => reasoning.push_str(delta),
            _ => {}
        }
    }
    (text, reasoning)
}

#[tokio::test]
async fn thinking_and_tool_calls_written_as_text_never_stream_as_the_reply() {
    let mock = MockLlm::start(Script::Queue).await;
    let home = Home::new();
    let agent = home.agent(&mock, LoopStyle::ToolLoop).await;
    // As a small model behind a server without a reasoning or tool parser answers: its
    // thinking and its call in the text, streamed word by word.
    mock.push(Reply::text(
        "<think>The user is Bob. I should remember that.</think>\
         <tool_call>{\"name\": \"core_memory_append\", \"arguments\": \
         {\"label\": \"human\", \"content\": \"Name: Bob\"}}</tool_call>",
    ));
    mock.push(Reply::text(
        "<think>Saved it.</think>Nice to meet you, Bob.",
    ));
    let (out, events) = home.chat(&agent, "hi, I am Bob").await;
    assert_eq!(out.stop_reason, StopReason::EndTurn, "{:?}", out.error);
    let (text, reasoning) = streamed(&events);
    assert_eq!(text, "Nice to meet you, Bob.");
    assert!(
        reasoning.contains("The user is Bob.") && reasoning.contains("Saved it."),
        "{reasoning}"
    );
    assert!(
        !reasoning.contains("<think>") && !reasoning.contains("tool_call"),
        "{reasoning}"
    );
    // The call written as text was made all the same.
    assert!(home.block(&agent, "human").contains("Name: Bob"));
}
